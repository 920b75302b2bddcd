package prune

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/strata"
)

func tinyPlan(t *testing.T, src *gguf.File, keep func(l int) []int) *strata.Keep {
	t.Helper()
	m, err := src.MoE()
	if err != nil {
		t.Fatal(err)
	}
	k := &strata.Keep{NExpert: uint32(m.Experts)}
	for l, ml := range m.Layers {
		k.Layers = append(k.Layers, uint32(ml.Block))
		k.Keep = append(k.Keep, u32(keep(l)))
	}
	return k
}

// TestWriteSlicesExperts prunes the tiny model (BF16 experts) and the IQ3_S
// variant (block-quantized experts) to a different set of 8 experts per layer
// and checks every tensor of the output against the source, byte for byte.
func TestWriteSlicesExperts(t *testing.T) {
	for _, file := range []string{"model-bf16.gguf", "model-iq3s.gguf"} {
		t.Run(file, func(t *testing.T) {
			src, err := gguf.Open(testutil.TinyModel(t, file))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			plan := tinyPlan(t, src, func(l int) []int {
				// A different, irregular set per layer: 8 ids, ascending.
				ids := []int{}
				for e := l; len(ids) < 8; e += 3 + l {
					ids = append(ids, e%32)
				}
				return sortedUnique(t, ids)
			})
			out := filepath.Join(t.TempDir(), "pruned.gguf")
			var progressed int64
			res, err := Write(context.Background(), src, plan, out, Options{Criterion: "reap", Progress: func(n int64) { progressed += n }, SliceBuffer: 1000})
			if err != nil {
				t.Fatal(err)
			}
			// 4 layers × (3 expert tensors + router).
			if res.SlicedTensors != 16 || res.CopiedTensors != len(src.Tensors)-16 {
				t.Errorf("sliced %d, copied %d", res.SlicedTensors, res.CopiedTensors)
			}
			dst, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if st, _ := os.Stat(out); st.Size() != res.Bytes {
				t.Errorf("file is %d bytes, result says %d", st.Size(), res.Bytes)
			}
			if n, _ := dst.Uint32("qwen3moe.expert_count"); n != 8 {
				t.Errorf("expert_count = %d, want 8", n)
			}
			if n, _ := dst.Uint32("qwen3moe.expert_used_count"); n != 4 {
				t.Errorf("expert_used_count = %d, want 4", n)
			}
			if n, _ := dst.Uint32(strata.KeySourceNExpert); n != 32 {
				t.Errorf("%s = %d, want 32", strata.KeySourceNExpert, n)
			}
			if c, _ := dst.String(KeyCriterion); c != "reap" {
				t.Errorf("%s = %q", KeyCriterion, c)
			}
			// The record of the original experts kept is the plan.
			dm, err := dst.MoE()
			if err != nil {
				t.Fatal(err)
			}
			if rec, err := strata.SourceKeep(dst, dm); err != nil || rec == nil || rec.NExpert != 32 || !slices.EqualFunc(rec.Keep, plan.Keep, slices.Equal) {
				t.Errorf("%s records %+v (err %v), want %v", strata.KeySourceKeep, rec, err, plan.Keep)
			}
			if len(dst.KV) != len(src.KV)+3 {
				t.Errorf("%d keys, want %d", len(dst.KV), len(src.KV)+3)
			}
			for i, p := range src.KV {
				if p.Key == "qwen3moe.expert_count" {
					continue
				}
				if dst.KV[i].Key != p.Key || !sameValue(dst.KV[i].Value, p.Value) {
					t.Errorf("key %d: %q changed", i, p.Key)
				}
			}
			var total int64
			for i := range src.Tensors {
				st, dt := &src.Tensors[i], &dst.Tensors[i]
				total += dt.Size
				if st.Name != dt.Name || st.Type != dt.Type {
					t.Fatalf("tensor %d: %s %s became %s %s", i, st.Name, st.Type, dt.Name, dt.Type)
				}
				sb, _ := src.ReadTensor(st)
				db, _ := dst.ReadTensor(dt)
				b, name, _ := gguf.SplitBlockName(st.Name)
				if !strings.HasPrefix(st.Name, "blk.") || !strata.ExpertIndexed(name) {
					if !bytes.Equal(sb, db) {
						t.Errorf("%s: copied tensor differs", st.Name)
					}
					continue
				}
				last := len(st.Dims) - 1
				if dt.Dims[last] != 8 {
					t.Errorf("%s: dims %v", st.Name, dt.Dims)
				}
				per := st.Size / 32
				if dt.Size != 8*per {
					t.Fatalf("%s: %d bytes, want %d", st.Name, dt.Size, 8*per)
				}
				for k, e := range plan.Keep[b] {
					if !bytes.Equal(db[int64(k)*per:int64(k+1)*per], sb[int64(e)*per:int64(e+1)*per]) {
						t.Errorf("%s: kept slice %d is not source expert %d", st.Name, k, e)
					}
				}
			}
			if progressed != total {
				t.Errorf("progress reported %d bytes, tensors hold %d", progressed, total)
			}
		})
	}
}

// TestWriteKeepAllIsIdentity: keeping every expert changes no tensor byte.
func TestWriteKeepAllIsIdentity(t *testing.T) {
	src, err := gguf.Open(testutil.TinyModel(t, "model-iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	plan := tinyPlan(t, src, func(int) []int {
		ids := make([]int, 32)
		for i := range ids {
			ids[i] = i
		}
		return ids
	})
	out := filepath.Join(t.TempDir(), "same.gguf")
	if _, err := Write(context.Background(), src, plan, out, Options{}); err != nil {
		t.Fatal(err)
	}
	dst, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	sb := make([]byte, src.Size-src.DataOffset)
	db := make([]byte, dst.Size-dst.DataOffset)
	src.ReaderAt().ReadAt(sb, src.DataOffset)
	dst.ReaderAt().ReadAt(db, dst.DataOffset)
	if !bytes.Equal(sb, db) {
		t.Error("data section changed although every expert was kept")
	}
}

func TestWriteRefuses(t *testing.T) {
	src, err := gguf.Open(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "x.gguf")
	cases := map[string]*strata.Keep{
		"below expert_used_count": tinyPlan(t, src, func(int) []int { return []int{0, 1, 2} }),
		"not ascending":           tinyPlan(t, src, func(int) []int { return []int{0, 2, 1, 3} }),
		"id out of range":         tinyPlan(t, src, func(int) []int { return []int{0, 1, 2, 32} }),
		"wrong layers":            {Layers: []uint32{0, 1}, NExpert: 32, Keep: [][]uint32{{0, 1, 2, 3}, {0, 1, 2, 3}}},
		"wrong expert count":      {Layers: []uint32{0, 1, 2, 3}, NExpert: 64, Keep: [][]uint32{{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}}},
	}
	for name, plan := range cases {
		if _, err := Write(context.Background(), src, plan, out, Options{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("refused writes left %d files behind", len(ents))
	}
	// A cancelled write leaves nothing either.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	plan := tinyPlan(t, src, func(int) []int { return []int{0, 1, 2, 3} })
	if _, err := Write(ctx, src, plan, out, Options{}); err == nil {
		t.Error("cancelled write succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("cancelled write left %d files behind", len(ents))
	}
}

func sortedUnique(t *testing.T, ids []int) []int {
	t.Helper()
	out := slices.Clone(ids)
	slices.Sort(out)
	if len(slices.Compact(slices.Clone(out))) != len(out) {
		t.Fatalf("test plan %v repeats an id", ids)
	}
	return out
}

func sameValue(a, b gguf.Value) bool {
	return a.Type == b.Type && a.Elem == b.Elem && reflect.DeepEqual(a.Any(), b.Any())
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

func runInspect(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), cli.Test(&out, &errb), append([]string{"inspect"}, args...))
	return code, out.String(), errb.String()
}

// jsonScalar is how a metadata scalar read by the independent parser must
// appear in inspect's JSON once decoded (numbers as float64; NaN/Inf as
// strings).
func jsonScalar(x any) any {
	switch v := x.(type) {
	case string, bool:
		return v
	case float32:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprint(f)
		}
		return f
	}
	var f float64
	fmt.Sscan(fmt.Sprint(x), &f)
	return f
}

// TestInspectJSONTinyModel checks inspect --json on every tiny-model file
// against the independent parser (gguf-parser-go) and closed-form MoE sums.
func TestInspectJSONTinyModel(t *testing.T) {
	for _, file := range []string{"model-bf16.gguf", "model-mixed.gguf"} {
		t.Run(file, func(t *testing.T) {
			path := testutil.TinyModel(t, file)
			code, out, errs := runInspect(t, path, "--json")
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			var rep struct {
				Architecture  string            `json:"architecture"`
				Name          string            `json:"name"`
				FileBytes     int64             `json:"file_bytes"`
				TensorCount   int               `json:"tensor_count"`
				MetadataCount int               `json:"metadata_count"`
				Metadata      map[string]any    `json:"metadata"`
				MetadataTypes map[string]string `json:"metadata_types"`
				Tensors       []struct {
					Name   string  `json:"name"`
					Type   string  `json:"type"`
					Shape  []int64 `json:"shape"`
					Bytes  int64   `json:"bytes"`
					Offset int64   `json:"offset"`
					Expert bool    `json:"expert"`
				} `json:"tensors"`
				MoE *struct {
					Layers         int      `json:"layers"`
					Experts        int      `json:"experts"`
					ExpertsUsed    int      `json:"experts_used"`
					ExpertTypes    []string `json:"expert_types"`
					BytesPerExpert int64    `json:"bytes_per_expert"`
					ExpertBytes    int64    `json:"expert_bytes"`
					DenseBytes     int64    `json:"dense_bytes"`
					ExpertShare    float64  `json:"expert_share"`
				} `json:"moe"`
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &raw); err != nil {
				t.Fatalf("stdout is not one JSON document: %v", err)
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := parser.ParseGGUFFile(path)
			if err != nil {
				t.Fatal(err)
			}
			arch := theirs.Architecture()
			if rep.Architecture != "qwen3moe" || rep.Architecture != arch.Architecture || rep.FileBytes != st.Size() ||
				rep.TensorCount != 51 || len(rep.Tensors) != 51 || int(theirs.Header.TensorCount) != 51 ||
				rep.MetadataCount != len(theirs.Header.MetadataKV) || len(rep.Metadata) != rep.MetadataCount {
				t.Fatalf("arch %q (theirs %q), %d bytes (stat %d), %d/%d tensors, %d/%d metadata (theirs %d)",
					rep.Architecture, arch.Architecture, rep.FileBytes, st.Size(), rep.TensorCount, len(rep.Tensors),
					rep.MetadataCount, len(rep.Metadata), len(theirs.Header.MetadataKV))
			}
			if rep.Name != theirs.Metadata().Name {
				t.Fatalf("name %q, theirs %q", rep.Name, theirs.Metadata().Name)
			}
			for _, kv := range theirs.Header.MetadataKV {
				got, ok := rep.Metadata[kv.Key]
				if !ok {
					t.Fatalf("metadata %q missing", kv.Key)
				}
				var want any
				if arr, isArray := kv.Value.(parser.GGUFMetadataKVArrayValue); isArray {
					elems := make([]any, len(arr.Array))
					for i, e := range arr.Array {
						elems[i] = jsonScalar(e)
					}
					want = elems
					if rep.MetadataTypes[kv.Key] != "array["+typeName(arr.Type)+"]" {
						t.Fatalf("%s: type %q, theirs array of %v", kv.Key, rep.MetadataTypes[kv.Key], arr.Type)
					}
				} else {
					want = jsonScalar(kv.Value)
					if rep.MetadataTypes[kv.Key] != typeName(kv.ValueType) {
						t.Fatalf("%s: type %q, theirs %v", kv.Key, rep.MetadataTypes[kv.Key], kv.ValueType)
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("metadata %q differs from the independent parser's (arrays must be printed in full)", kv.Key)
				}
			}
			var expertBytes, denseBytes int64
			expertTypes := map[string]bool{}
			for i, ti := range theirs.TensorInfos {
				mine := rep.Tensors[i]
				shape := make([]int64, len(ti.Dimensions))
				for d, n := range ti.Dimensions {
					shape[d] = int64(n)
				}
				if mine.Name != ti.Name || mine.Type != ti.Type.String() || !reflect.DeepEqual(mine.Shape, shape) ||
					mine.Bytes != int64(ti.Bytes()) || mine.Offset != theirs.TensorDataStartOffset+int64(ti.Offset) {
					t.Fatalf("tensor %d: %+v; theirs %s %v %v %d bytes at %d+%d", i, mine, ti.Name, ti.Type, ti.Dimensions, ti.Bytes(), theirs.TensorDataStartOffset, ti.Offset)
				}
				isExpert := strings.HasSuffix(ti.Name, "_exps.weight")
				if mine.Expert != isExpert {
					t.Fatalf("tensor %s: expert %v", ti.Name, mine.Expert)
				}
				if isExpert {
					expertBytes += int64(ti.Bytes())
					expertTypes[ti.Type.String()] = true
				} else {
					denseBytes += int64(ti.Bytes())
				}
			}
			m := rep.MoE
			if m == nil {
				t.Fatal("no moe section")
			}
			// 4 layers x 32 experts, all layers alike in these files.
			if m.Layers != 4 || m.Experts != 32 || m.ExpertsUsed != 4 || m.Experts != int(arch.ExpertCount) || m.ExpertsUsed != int(arch.ExpertUsedCount) ||
				m.ExpertBytes != expertBytes || m.DenseBytes != denseBytes || m.BytesPerExpert*4*32 != expertBytes ||
				math.Abs(m.ExpertShare-float64(expertBytes)/float64(st.Size())) > 1e-12 || len(m.ExpertTypes) != len(expertTypes) {
				t.Fatalf("moe %+v; independent: %d experts, %d used, expert bytes %d, dense %d, types %v",
					*m, arch.ExpertCount, arch.ExpertUsedCount, expertBytes, denseBytes, expertTypes)
			}
			for _, ty := range m.ExpertTypes {
				if !expertTypes[ty] {
					t.Fatalf("expert type %s not among %v", ty, expertTypes)
				}
			}
		})
	}
}

func typeName(vt parser.GGUFMetadataValueType) string {
	return [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}[vt]
}

func TestInspectText(t *testing.T) {
	path := testutil.TinyModel(t, "model-bf16.gguf")
	code, out, errs := runInspect(t, path)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"qwen3moe", "tiny-qwen3moe", "56,369,824 bytes", "4 of 4 blocks", "32 per layer, 4 used per token", "BF16",
		"393,216 bytes", "tokenizer.ggml.tokens", "(4096)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	// The last vocabulary entry shows only with --kv, tensors only with --tensors.
	_, full, _ := runInspect(t, path, "--kv", "--tensors")
	p, err := parser.ParseGGUFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := p.Header.MetadataKV.Get("tokenizer.ggml.tokens")
	last := fmt.Sprintf("%q]", tokens.ValueArray().Array[4095])
	if strings.Contains(out, last) || !strings.Contains(full, last) {
		t.Fatalf("last token %s: in default output %v, in --kv output %v", last, strings.Contains(out, last), strings.Contains(full, last))
	}
	if strings.Contains(out, "blk.3.ffn_down_exps.weight") || !strings.Contains(full, "blk.3.ffn_down_exps.weight") {
		t.Fatal("tensor table shown without --tensors or missing with it")
	}
}

func TestInspectDenseAndPartial(t *testing.T) {
	code, out, _ := runInspect(t, testutil.Path(t, "fixtures", "ggml", "Q8_0.gguf"), "--json")
	var rep map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep["moe"] != nil || rep["tensor_count"] != 3.0 {
		t.Fatalf("dense fixture: exit %d, moe %v, tensors %v", code, rep["moe"], rep["tensor_count"])
	}
	code, out, _ = runInspect(t, testutil.Path(t, "fixtures", "ggml", "experts_iq3s.gguf"), "--json")
	rep = nil
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep["moe"] != nil || !strings.Contains(fmt.Sprint(rep["moe_error"]), "ffn_up_exps") {
		t.Fatalf("lone expert tensor: exit %d, moe %v, moe_error %v", code, rep["moe"], rep["moe_error"])
	}
}

// A bad file gives exit status 1, one line on stderr and nothing on stdout,
// with or without --json.
func TestInspectBadFiles(t *testing.T) {
	src, err := os.ReadFile(testutil.TinyModel(t, "model-iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := map[string][]byte{
		"truncated-header.gguf": src[:50000],
		"truncated-data.gguf":   src[:len(src)-100],
		"empty.gguf":            nil,
		"v1.gguf":               append([]byte("GGUF\x01\x00\x00\x00"), make([]byte, 16)...),
	}
	for name, data := range bad {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"truncated-header.gguf", "truncated-data.gguf", "empty.gguf", "v1.gguf", "missing.gguf"} {
		for _, args := range [][]string{{filepath.Join(dir, name)}, {filepath.Join(dir, name), "--json"}} {
			code, out, errs := runInspect(t, args...)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") || !strings.Contains(errs, name) {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
			}
		}
	}
}

package gguf

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
)

// canon renders a metadata scalar as "type:value" with floats as bit
// patterns, so that values from the two parsers compare exactly.
func canon(x any) string {
	switch v := x.(type) {
	case float32:
		return fmt.Sprintf("f32:%08x", math.Float32bits(v))
	case float64:
		return fmt.Sprintf("f64:%016x", math.Float64bits(v))
	}
	return fmt.Sprintf("%T:%v", x, x)
}

// canonElems lists an array's elements through canon; ours holds a typed
// slice, the independent parser a []any.
func canonElems(slice any) []string {
	rv := reflect.ValueOf(slice)
	out := make([]string, rv.Len())
	for i := range out {
		out[i] = canon(rv.Index(i).Interface())
	}
	return out
}

// TestCrossCheckIndependentParser compares every shared GGUF as read here
// with github.com/gpustack/gguf-parser-go: metadata keys, types and values,
// and every tensor's name, type, shape, data offset, info offset and size.
func TestCrossCheckIndependentParser(t *testing.T) {
	for _, path := range sharedGGUFs(t) {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			ours, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			theirs, err := parser.ParseGGUFFile(path)
			if err != nil {
				t.Fatal(err)
			}
			h := theirs.Header
			if uint32(h.Version) != ours.Version || h.MetadataKVCount != uint64(len(ours.KV)) || h.TensorCount != uint64(len(ours.Tensors)) {
				t.Fatalf("version/metadata/tensors: theirs %d/%d/%d, ours %d/%d/%d", h.Version, h.MetadataKVCount, h.TensorCount, ours.Version, len(ours.KV), len(ours.Tensors))
			}
			for i, kv := range h.MetadataKV {
				mine := ours.KV[i]
				if kv.Key != mine.Key || uint32(kv.ValueType) != uint32(mine.Value.Type) {
					t.Fatalf("pair %d: theirs %q %v, ours %q %v", i, kv.Key, kv.ValueType, mine.Key, mine.Value.Type)
				}
				arr, isArray := kv.Value.(parser.GGUFMetadataKVArrayValue)
				if !isArray {
					if canon(kv.Value) != canon(mine.Value.Any()) {
						t.Fatalf("%s: theirs %s, ours %s", kv.Key, canon(kv.Value), canon(mine.Value.Any()))
					}
					continue
				}
				if uint32(arr.Type) != uint32(mine.Value.Elem) || arr.Len != uint64(mine.Value.Len()) || len(arr.Array) != mine.Value.Len() {
					t.Fatalf("%s: theirs array of %d %v, ours %s of %d", kv.Key, arr.Len, arr.Type, mine.Value.TypeName(), mine.Value.Len())
				}
				a, b := canonElems(arr.Array), canonElems(mine.Value.Any())
				for j := range a {
					if a[j] != b[j] {
						t.Fatalf("%s[%d]: theirs %s, ours %s", kv.Key, j, a[j], b[j])
					}
				}
			}
			if theirs.TensorDataStartOffset != ours.DataOffset {
				t.Fatalf("data section: theirs at %d, ours at %d", theirs.TensorDataStartOffset, ours.DataOffset)
			}
			for i, ti := range theirs.TensorInfos {
				mine := &ours.Tensors[i]
				dims := make([]int64, len(ti.Dimensions))
				for d, n := range ti.Dimensions {
					dims[d] = int64(n)
				}
				if ti.Name != mine.Name || uint32(ti.Type) != uint32(mine.Type) || !slices.Equal(dims, mine.Dims) ||
					ti.Offset != uint64(mine.Offset) || ti.StartOffset != mine.InfoOffset || ti.Bytes() != uint64(mine.Size) {
					t.Fatalf("tensor %d: theirs %s %v %v at %d (info %d, %d bytes); ours %s %v %v at %d (info %d, %d bytes)",
						i, ti.Name, ti.Type, ti.Dimensions, ti.Offset, ti.StartOffset, ti.Bytes(),
						mine.Name, mine.Type, mine.Dims, mine.Offset, mine.InfoOffset, mine.Size)
				}
			}
			m, err := ours.MoE()
			if errors.Is(err, ErrNoMoE) || ours.Architecture() != "qwen3moe" {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := theirs.Architecture()
			if a.Architecture != m.Arch || int(a.ExpertCount) != m.Experts || int(a.ExpertUsedCount) != m.ExpertsUsed || int(a.BlockCount) != m.Blocks || int64(a.EmbeddingLength) != m.Embd {
				t.Fatalf("theirs %s: %d experts, %d used, %d blocks, n_embd %d; ours %s: %d, %d, %d, %d",
					a.Architecture, a.ExpertCount, a.ExpertUsedCount, a.BlockCount, a.EmbeddingLength, m.Arch, m.Experts, m.ExpertsUsed, m.Blocks, m.Embd)
			}
		})
	}
}

package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// FuzzRead checks that no input makes the reader panic, hang or return
// anything but a *FormatError, and that whatever parses survives a trip
// through the Writer: same metadata, tensors and data, and a second trip
// gives the same bytes.
func FuzzRead(f *testing.F) {
	for _, seed := range syntheticSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := FromBytes(data, "fuzz.gguf")
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != "fuzz.gguf" {
				t.Fatalf("error is not a *FormatError naming the file: %v", err)
			}
			return
		}
		if m, err := g.MoE(); err == nil {
			for _, l := range m.Layers {
				for _, x := range l.ExpertTensors() {
					if _, _, err := ExpertSlice(x, l.Experts-1); err != nil {
						t.Fatalf("MoE accepted %s but cannot slice it: %v", x.Name, err)
					}
				}
			}
		}
		if hasNested(&g.Metadata) {
			return
		}
		once := rewriteBytes(t, g)
		h, err := FromBytes(once, "rewritten.gguf")
		if err != nil {
			t.Fatalf("Writer output does not parse: %v", err)
		}
		if d := sameContent(t, g, h); d != "" {
			t.Fatalf("after a write: %s", d)
		}
		if twice := rewriteBytes(t, h); !bytes.Equal(once, twice) {
			t.Fatalf("second write differs from the first (%d vs %d bytes)", len(once), len(twice))
		}
	})
}

// rewriteBytes writes a parsed file again with the Writer.
func rewriteBytes(t testing.TB, g *File) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, g.KV, g.Specs())
	if err != nil {
		t.Fatalf("Writer refuses a file the reader accepted: %v", err)
	}
	for i := range g.Tensors {
		data, _ := g.Bytes(&g.Tensors[i])
		if err := w.WriteTensor(g.Tensors[i].Name, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// syntheticSeeds are small files covering every value type, a nested array,
// odd alignments, and version 2.
func syntheticSeeds(t testing.TB) [][]byte {
	kv := []KV{
		{Key: "general.architecture", Value: String("qwen3moe")},
		{Key: "general.alignment", Value: Uint32(64)},
		{Key: "u8", Value: Uint8(7)}, {Key: "i8", Value: Int8(-7)},
		{Key: "u16", Value: Uint16(700)}, {Key: "i16", Value: Int16(-700)},
		{Key: "u32", Value: Uint32(70000)}, {Key: "i32", Value: Int32(-70000)},
		{Key: "f32", Value: Float32(0.5)}, {Key: "bool", Value: Bool(true)},
		{Key: "u64", Value: Uint64(1 << 40)}, {Key: "i64", Value: Int64(-1 << 40)},
		{Key: "f64", Value: Float64(-2.25)},
		{Key: "strs", Value: MustArray([]string{"a", "", "ccc"})},
		{Key: "f32s", Value: MustArray([]float32{1, 2})},
		{Key: "bools", Value: MustArray([]bool{true, false})},
		{Key: "qwen3moe.expert_count", Value: Uint32(2)},
		{Key: "qwen3moe.expert_used_count", Value: Uint32(1)},
	}
	specs := []TensorSpec{
		{Name: "blk.0.ffn_gate_inp.weight", Type: quant.F32, Dims: []int64{32, 2}},
		{Name: "blk.0.ffn_gate_exps.weight", Type: quant.Q8_0, Dims: []int64{32, 2, 2}},
		{Name: "blk.0.ffn_up_exps.weight", Type: quant.IQ4_NL, Dims: []int64{32, 2, 2}},
		{Name: "blk.0.ffn_down_exps.weight", Type: quant.BF16, Dims: []int64{2, 32, 2}},
		{Name: "q", Type: quant.Q4_K, Dims: []int64{256, 1, 1, 1}},
	}
	seeds := [][]byte{build(t, kv, specs), build(t, kv[:3], nil), build(t, nil, specs[4:])}

	var r raw // nested arrays and a version 2 header
	r.header(2, 1, 2)
	r.kvU32("general.alignment", 16)
	r.str("nested")
	r.u32(uint32(TypeArray))
	r.u32(uint32(TypeArray))
	r.u64(2)
	for i := 0; i < 2; i++ {
		r.u32(uint32(TypeInt16))
		r.u64(1)
		r.Write([]byte{byte(i), 0x80})
	}
	r.tensor("t", quant.F16, 0, 8)
	r.pad(16)
	r.Write(make([]byte, 16))
	seeds = append(seeds, bytes.Clone(r.Bytes()))

	// No tensors and the largest legal alignment: rewriting once padded to
	// 2 GiB (found by this fuzzer).
	r.Reset()
	r.header(3, 0, 1)
	r.kvU32("general.alignment", 1<<31)
	return append(seeds, bytes.Clone(r.Bytes()))
}

// TestWriteFuzzSeeds regenerates the committed corpus in
// testdata/fuzz/FuzzRead from the shared files: each shrunk to one block per
// tensor with arrays cut to a few elements, a bit-flipped copy of that, and
// small real headers cut at their data section. Run with
// GGUF_WRITE_FUZZ_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("GGUF_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set GGUF_WRITE_FUZZ_SEEDS=1 to regenerate the corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	save := func(name string, data []byte) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range sharedGGUFs(t) {
		g, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		small := shrink(t, g)
		dataOffset := g.DataOffset
		g.Close()
		base := filepath.Base(filepath.Dir(path)) + "-" + filepath.Base(path)
		save(base, small)
		if dataOffset <= 4096 {
			// The real header cut at its data section: metadata parses, the
			// tensors point past the end.
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			head := make([]byte, dataOffset)
			_, err = io.ReadFull(f, head)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			save(base+"-header", head)
		}
		flipped := bytes.Clone(small)
		for i := 5; i < len(flipped); i += 97 {
			flipped[i] ^= 1 << (i % 8)
		}
		save(base+"-flipped", flipped)
	}
}

// shrink keeps a file's metadata (arrays cut to 8 elements) and tensor names
// and types, each tensor reduced to one block row.
func shrink(t testing.TB, g *File) []byte {
	kv := make([]KV, len(g.KV))
	for i, p := range g.KV {
		kv[i] = p
		if p.Value.Len() > 8 {
			kv[i].Value = truncateArray(p.Value, 8)
		}
	}
	specs := g.Specs()
	for i := range specs {
		ti, _ := quant.Info(specs[i].Type)
		specs[i].Dims = []int64{int64(ti.BlockElements)}
		if IsExpertTensor(specs[i].Name) || len(g.Tensors[i].Dims) > 1 {
			specs[i].Dims = append(specs[i].Dims, 1)
		}
	}
	return build(t, kv, specs)
}

func truncateArray(v Value, n int) Value {
	switch a := v.v.(type) {
	case []string:
		return MustArray(a[:n])
	case []int32:
		return MustArray(a[:n])
	case []float32:
		return MustArray(a[:n])
	case []uint32:
		return MustArray(a[:n])
	case []uint8:
		return MustArray(a[:n])
	}
	return v
}

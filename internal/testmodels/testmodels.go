// Package testmodels rewrites the shared tiny-qwen35moe fixture into the
// layouts real converters also write and the fixture itself lacks: the
// fused expert matrix ffn_gate_up_exps (convert_hf_to_gguf.py
// --fuse-gate-up-exps) and a multi-token-prediction block
// ({arch}.nextn_predict_layers, the extra last block of Qwen3.5 and GLM
// GGUFs). The rewrites move bytes only, so every expert keeps its exact
// values and tests can compare against the unfused, MTP-free original.
package testmodels

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// Qwen35 is the path of the shared tiny-qwen35moe model-bf16.gguf.
func Qwen35(t testing.TB) string {
	t.Helper()
	return testutil.Path(t, "models", "tiny-qwen35moe", "model-bf16.gguf")
}

// Variant says which rewrites to apply.
type Variant struct {
	// Fuse replaces every block's ffn_gate_exps and ffn_up_exps with one
	// ffn_gate_up_exps of ne [n_embd, 2 n_ff_exp, n_expert] whose expert e
	// holds gate's rows of e, then up's (llama.cpp's build_moe_ffn views the
	// first n_ff_exp outputs as gate, the rest as up).
	Fuse bool
	// MTP appends one multi-token-prediction block: a copy of the last
	// block's tensors (its attention, router, experts and shared expert)
	// plus the nextn.* tensors llama.cpp's loader reads, with block_count
	// one larger and nextn_predict_layers = 1.
	MTP bool
}

// Write writes the variant of src into dir and returns its path.
func Write(t testing.TB, src, dir string, v Variant) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arch := f.Architecture()
	blocks, err := f.Uint32(f.ArchKey("block_count"))
	if err != nil {
		t.Fatal(err)
	}
	last := int(blocks) - 1
	embd, err := f.Uint32(f.ArchKey("embedding_length"))
	if err != nil {
		t.Fatal(err)
	}

	type out struct {
		spec gguf.TensorSpec
		data func() []byte
	}
	read := func(ti *gguf.TensorInfo) func() []byte {
		return func() []byte {
			b, err := f.ReadTensor(ti)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	var outs []out
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		b, rest, inBlock := gguf.SplitBlockName(ti.Name)
		if v.Fuse && inBlock && rest == "ffn_up_exps.weight" {
			continue // fused at the gate's place
		}
		if v.Fuse && inBlock && rest == "ffn_gate_exps.weight" {
			up, ok := f.Tensor(fmt.Sprintf("blk.%d.ffn_up_exps.weight", b))
			if !ok || up.Type != ti.Type {
				t.Fatalf("%s: block %d has no up matrix of gate's type", src, b)
			}
			gate := ti
			outs = append(outs, out{
				spec: gguf.TensorSpec{Name: fmt.Sprintf("blk.%d.ffn_gate_up_exps.weight", b), Type: ti.Type, Dims: []int64{ti.Dims[0], 2 * ti.Dims[1], ti.Dims[2]}},
				data: func() []byte { return Fuse(t, f, gate, up) },
			})
			continue
		}
		outs = append(outs, out{spec: gguf.TensorSpec{Name: ti.Name, Type: ti.Type, Dims: append([]int64(nil), ti.Dims...)}, data: read(ti)})
	}
	kv := append([]gguf.KV(nil), f.KV...)
	if v.MTP {
		mtp := last + 1
		for _, o := range append([]out(nil), outs...) {
			if b, rest, ok := gguf.SplitBlockName(o.spec.Name); ok && b == last {
				s := o.spec
				s.Name = fmt.Sprintf("blk.%d.%s", mtp, rest)
				outs = append(outs, out{spec: s, data: o.data})
			}
		}
		D := int64(embd)
		for _, n := range []struct {
			name string
			dims []int64
		}{{"nextn.eh_proj.weight", []int64{2 * D, D}}, {"nextn.enorm.weight", []int64{D}}, {"nextn.hnorm.weight", []int64{D}}, {"nextn.shared_head_norm.weight", []int64{D}}} {
			s := gguf.TensorSpec{Name: fmt.Sprintf("blk.%d.%s", mtp, n.name), Type: quant.F32, Dims: n.dims}
			size := int64(4)
			for _, d := range n.dims {
				size *= d
			}
			outs = append(outs, out{spec: s, data: func() []byte { return bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, int(size/4)) }}) // 1.0f
		}
		for i := range kv {
			if kv[i].Key == f.ArchKey("block_count") {
				kv[i].Value = gguf.Uint32(blocks + 1)
			}
		}
		kv = append(kv, gguf.KV{Key: arch + ".nextn_predict_layers", Value: gguf.Uint32(1)})
	}
	specs := make([]gguf.TensorSpec, len(outs))
	for i, o := range outs {
		specs[i] = o.spec
	}
	var name []string
	if v.Fuse {
		name = append(name, "fused")
	}
	if v.MTP {
		name = append(name, "mtp")
	}
	path := filepath.Join(dir, "qwen35moe-"+strings.Join(name, "-")+".gguf")
	w, err := gguf.Create(path, kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if err := w.WriteTensor(o.spec.Name, o.data()); err != nil {
			w.Abort()
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Fuse returns the bytes of ffn_gate_up_exps made of gate and up (same type
// and shape): per expert, gate's slice then up's.
func Fuse(t testing.TB, f *gguf.File, gate, up *gguf.TensorInfo) []byte {
	t.Helper()
	g, err := f.ReadTensor(gate)
	if err != nil {
		t.Fatal(err)
	}
	u, err := f.ReadTensor(up)
	if err != nil {
		t.Fatal(err)
	}
	n := int(gate.Dims[len(gate.Dims)-1])
	per := len(g) / n
	outB := make([]byte, 0, 2*len(g))
	for e := range n {
		outB = append(outB, g[e*per:(e+1)*per]...)
		outB = append(outB, u[e*per:(e+1)*per]...)
	}
	return outB
}

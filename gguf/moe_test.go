package gguf

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

type manifestTensor struct {
	Name   string  `json:"name"`
	Type   string  `json:"ggml_type"`
	Ne     []int64 `json:"ne"`
	Offset int64   `json:"offset"`
	Bytes  int64   `json:"nbytes"`
}

type manifestVariant struct {
	File           string           `json:"file"`
	BytesPerExpert int64            `json:"bytes_per_expert_gate_up_down"`
	Tensors        []manifestTensor `json:"tensors"`
}

// tinyManifest is the fixture generator's own record of each tiny-model
// GGUF: the independent truth for shapes and sizes.
func tinyManifest(t *testing.T) map[string]manifestVariant {
	t.Helper()
	raw, err := os.ReadFile(testutil.TinyModel(t, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		GGUF  manifestVariant `json:"gguf"`
		Quant struct {
			Variants map[string]manifestVariant `json:"variants"`
		} `json:"quantized_variants"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]manifestVariant{m.GGUF.File: m.GGUF}
	for _, v := range m.Quant.Variants {
		out[v.File] = v
	}
	if len(out) != 4 {
		t.Fatalf("manifest lists %d GGUF files, want 4", len(out))
	}
	return out
}

func TestMoETinyModel(t *testing.T) {
	for file, mv := range tinyManifest(t) {
		t.Run(file, func(t *testing.T) {
			f, err := Open(testutil.TinyModel(t, file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := f.MoE()
			if err != nil {
				t.Fatal(err)
			}
			if m.Arch != "qwen3moe" || len(m.Layers) != 4 || m.Blocks != 4 || m.Experts != 32 || m.ExpertsUsed != 4 || m.Embd != 256 || m.ExpertFF != 256 {
				t.Fatalf("got arch %q, %d layers of %d blocks, %d experts, %d used, n_embd %d, n_ff_exp %d; want qwen3moe, 4/4, 32, 4, 256, 256",
					m.Arch, len(m.Layers), m.Blocks, m.Experts, m.ExpertsUsed, m.Embd, m.ExpertFF)
			}
			var expertBytes, denseBytes, perLayer int64
			types := map[string]bool{}
			for _, mt := range mv.Tensors {
				if strings.Contains(mt.Name, "_exps.") {
					expertBytes += mt.Bytes
					types[mt.Type] = true
					if strings.HasPrefix(mt.Name, "blk.0.") {
						perLayer += mt.Bytes / mt.Ne[2]
					}
				} else {
					denseBytes += mt.Bytes
				}
			}
			if perLayer != mv.BytesPerExpert && mv.BytesPerExpert != 0 {
				t.Fatalf("manifest disagrees with itself: %d vs %d bytes per expert", perLayer, mv.BytesPerExpert)
			}
			if m.BytesPerExpert != perLayer || !m.UniformExpertBytes() || m.ExpertBytes != expertBytes || m.DenseBytes != denseBytes {
				t.Fatalf("bytes per expert %d, experts %d, dense %d; manifest says %d, %d, %d",
					m.BytesPerExpert, m.ExpertBytes, m.DenseBytes, perLayer, expertBytes, denseBytes)
			}
			if len(m.ExpertTypes) != len(types) {
				t.Fatalf("expert types %v, manifest has %v", m.ExpertTypes, types)
			}
			for _, ty := range m.ExpertTypes {
				if !types[ty.String()] {
					t.Fatalf("expert type %v not in manifest's %v", ty, types)
				}
			}
			for i, l := range m.Layers {
				if l.Block != i || l.Gate == nil || l.Up == nil || l.Down == nil || l.Router == nil || len(l.Extra) != 0 {
					t.Fatalf("layer %d: %+v", i, l)
				}
				for _, x := range []*TensorInfo{l.Gate, l.Up, l.Down} {
					if !IsExpertTensor(x.Name) {
						t.Fatalf("%s not recognized as per-expert", x.Name)
					}
				}
				if IsExpertTensor(l.Router.Name) {
					t.Fatalf("router %s taken for a per-expert tensor", l.Router.Name)
				}
			}
		})
	}
}

// The ggml fixture states that expert e of its IQ3_S expert tensor is bytes
// [e*7040, (e+1)*7040); it has no up/down/router, so MoE must refuse it and
// name the tensor.
func TestMoEExpertsFixture(t *testing.T) {
	f, err := Open(testutil.Path(t, "fixtures", "ggml", "experts_iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Tensor("blk.0.ffn_gate_exps.weight")
	if !ok || !IsExpertTensor(ti.Name) || ti.Type != quant.IQ3_S {
		t.Fatalf("fixture tensor missing or not per-expert: %+v", ti)
	}
	for e := 0; e < 8; e++ {
		off, size, err := ExpertSlice(ti, e)
		if err != nil || off != int64(e)*7040 || size != 7040 {
			t.Fatalf("expert %d: [%d, +%d) %v, want [%d, +7040)", e, off, size, err, e*7040)
		}
	}
	if _, _, err := ExpertSlice(ti, 8); err == nil {
		t.Fatal("expert 8 of 8 accepted")
	}
	_, err = f.MoE()
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Tensor != ti.Name || fe.Offset != ti.InfoOffset || !strings.Contains(err.Error(), "ffn_up_exps") {
		t.Fatalf("MoE of a lone gate tensor: %v", err)
	}
}

func TestIsExpertTensor(t *testing.T) {
	for name, want := range map[string]bool{
		"blk.0.ffn_gate_exps.weight":  true,
		"blk.12.ffn_down_exps.weight": true,
		"blk.3.ffn_gate_exps.bias":    true,
		"blk.3.ffn_gate_up_exps.bias": true,
		"blk.3.ffn_down_shexp.weight": false,
		"blk.3.ffn_gate_inp.weight":   false,
		"blk.3.ffn_down.weight":       false,
		"blk.3._exps.weight":          false,
		"blk.x.ffn_down_exps.weight":  false,
		"blk.01.ffn_down_exps.weight": false,
		"ffn_down_exps.weight":        false,
		"token_embd.weight":           false,
		"blk.3.exp_probs_b.bias":      false,
	} {
		if IsExpertTensor(name) != want {
			t.Errorf("IsExpertTensor(%q) = %v", name, !want)
		}
	}
}

// moeFile builds an in-memory MoE file: blocks of gate/up/down experts and a
// router, shapes adjustable by the caller through edit.
func moeFile(t *testing.T, kv []KV, edit func(specs []TensorSpec) []TensorSpec) *File {
	t.Helper()
	const embd, ff, nexp = 32, 64, 4
	specs := []TensorSpec{{Name: "token_embd.weight", Type: quant.F32, Dims: []int64{embd, 10}}}
	for b := 0; b < 2; b++ {
		p := "blk." + string(rune('0'+b)) + "."
		specs = append(specs,
			TensorSpec{Name: p + "ffn_gate_inp.weight", Type: quant.F32, Dims: []int64{embd, nexp}},
			TensorSpec{Name: p + "ffn_gate_exps.weight", Type: quant.Q8_0, Dims: []int64{embd, ff, nexp}},
			TensorSpec{Name: p + "ffn_up_exps.weight", Type: quant.Q8_0, Dims: []int64{embd, ff, nexp}},
			TensorSpec{Name: p + "ffn_down_exps.weight", Type: quant.F16, Dims: []int64{ff, embd, nexp}},
		)
	}
	if edit != nil {
		specs = edit(specs)
	}
	base := []KV{{Key: "general.architecture", Value: String("testmoe")}}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, append(base, kv...), specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		data := make([]byte, w.Layout().Sizes[i])
		if err := w.WriteTensor(s.Name, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := FromBytes(buf.Bytes(), "moe.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestMoESynthetic(t *testing.T) {
	f := moeFile(t, []KV{{Key: "testmoe.expert_count", Value: Uint32(4)}, {Key: "testmoe.expert_used_count", Value: Uint32(2)}}, func(s []TensorSpec) []TensorSpec {
		return append(s, TensorSpec{Name: "blk.1.ffn_down_exps.bias", Type: quant.F32, Dims: []int64{32, 4}})
	})
	m, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	q8 := int64(32 * 64 / 32 * 34) // one expert's Q8_0 gate (or up): 64 rows of one block
	f16 := int64(64 * 32 * 2)
	if m.Layers[0].BytesPerExpert != 2*q8+f16 || m.Layers[1].BytesPerExpert != 2*q8+f16+32*4 || m.BytesPerExpert != 2*q8+f16+128 || m.UniformExpertBytes() {
		t.Fatalf("bytes per expert: layers %d, %d, max %d", m.Layers[0].BytesPerExpert, m.Layers[1].BytesPerExpert, m.BytesPerExpert)
	}
	if m.ExpertBytes != 2*4*(2*q8+f16)+4*128 || m.DenseBytes != 4*32*10+2*4*32*4 {
		t.Fatalf("expert bytes %d, dense %d", m.ExpertBytes, m.DenseBytes)
	}
	if len(m.ExpertTypes) != 3 || m.ExpertTypes[0] != quant.F32 || m.ExpertTypes[1] != quant.F16 || m.ExpertTypes[2] != quant.Q8_0 || m.ExpertsUsed != 2 || m.Experts != 4 {
		t.Fatalf("types %v, used %d of %d", m.ExpertTypes, m.ExpertsUsed, m.Experts)
	}
}

func TestMoEDense(t *testing.T) {
	f := moeFile(t, nil, func(s []TensorSpec) []TensorSpec { return s[:1] })
	if _, err := f.MoE(); !errors.Is(err, ErrNoMoE) {
		t.Fatalf("dense file: %v, want ErrNoMoE", err)
	}
	f = moeFile(t, []KV{{Key: "testmoe.expert_count", Value: Uint32(0)}}, func(s []TensorSpec) []TensorSpec { return s[:1] })
	if _, err := f.MoE(); !errors.Is(err, ErrNoMoE) {
		t.Fatalf("dense file with expert_count 0: %v, want ErrNoMoE", err)
	}
}

// fused replaces block b's gate and up with one ffn_gate_up_exps of ne dims.
func fused(b int, dims ...int64) func([]TensorSpec) []TensorSpec {
	return func(s []TensorSpec) []TensorSpec {
		var out []TensorSpec
		p := "blk." + string(rune('0'+b)) + "."
		for _, x := range s {
			switch x.Name {
			case p + "ffn_gate_exps.weight":
				out = append(out, TensorSpec{Name: p + "ffn_gate_up_exps.weight", Type: x.Type, Dims: dims})
			case p + "ffn_up_exps.weight":
			default:
				out = append(out, x)
			}
		}
		return out
	}
}

// TestMoEFusedAndMTP: the fused gate_up gives the shape the separate pair
// gives, split in halves per expert; an MTP block is no MoE layer.
func TestMoEFusedAndMTP(t *testing.T) {
	sep := moeFile(t, nil, nil)
	f := moeFile(t, []KV{{Key: "testmoe.block_count", Value: Uint32(3)}, {Key: "testmoe.nextn_predict_layers", Value: Uint32(1)}}, func(s []TensorSpec) []TensorSpec {
		s = fused(1, 32, 128, 4)(fused(0, 32, 128, 4)(s))
		return append(s, TensorSpec{Name: "blk.2.ffn_gate_inp.weight", Type: quant.F32, Dims: []int64{32, 4}},
			TensorSpec{Name: "blk.2.ffn_gate_exps.weight", Type: quant.F32, Dims: []int64{32, 64, 4}},
			TensorSpec{Name: "blk.2.nextn.eh_proj.weight", Type: quant.F32, Dims: []int64{64, 32}})
	})
	sm, err := sep.MoE()
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 2 || m.Blocks != 3 || len(m.MTP) != 1 || m.MTP[0] != 2 || m.ExpertFF != 64 || m.BytesPerExpert != sm.BytesPerExpert ||
		m.ExpertBytes != sm.ExpertBytes || m.DenseBytes != sm.DenseBytes || m.MTPBytes != 4*32*4+4*32*64*4+4*64*32 {
		t.Fatalf("fused + MTP: %+v; separate: %+v", m, sm)
	}
	if !m.InMTP("blk.2.ffn_gate_inp.weight") || m.InMTP("blk.1.ffn_gate_inp.weight") || m.InMTP("output.weight") {
		t.Error("InMTP")
	}
	// The MTP block is no MoE layer of the model.
	if b := m.LayerBlocks(); len(b) != 2 || b[0] != 0 || b[1] != 1 {
		t.Errorf("LayerBlocks %v, want [0 1]", b)
	}
	parts, ok := m.Layers[1].Parts()
	if !ok || parts[0].Tensor != m.Layers[1].GateUp || parts[2].Tensor != m.Layers[1].Down {
		t.Fatalf("parts %+v", parts)
	}
	const q8 = 32 * 64 / 32 * 34 // one expert's gate or up
	for p, want := range [][2]int64{{3 * 2 * q8, q8}, {3*2*q8 + q8, q8}, {3 * 64 * 32 * 2, 64 * 32 * 2}} {
		off, size, err := parts[p].Slice(3)
		if err != nil || off != want[0] || size != want[1] {
			t.Errorf("part %d of expert 3: [%d, +%d) %v; want [%d, +%d)", p, off, size, err, want[0], want[1])
		}
	}
}

func TestMoEInconsistent(t *testing.T) {
	set := func(name string, dims ...int64) func([]TensorSpec) []TensorSpec {
		return func(s []TensorSpec) []TensorSpec {
			for i := range s {
				if s[i].Name == name {
					s[i].Dims = dims
				}
			}
			return s
		}
	}
	drop := func(name string) func([]TensorSpec) []TensorSpec {
		return func(s []TensorSpec) []TensorSpec {
			var out []TensorSpec
			for _, x := range s {
				if x.Name != name {
					out = append(out, x)
				}
			}
			return out
		}
	}
	cases := []struct {
		name        string
		kv          []KV
		edit        func([]TensorSpec) []TensorSpec
		tensor, key string
	}{
		{"gate ne1", nil, set("blk.0.ffn_gate_exps.weight", 32, 32, 4), "blk.0.ffn_gate_exps.weight", ""},
		{"up 2-D", nil, set("blk.0.ffn_up_exps.weight", 32, 256), "blk.0.ffn_up_exps.weight", ""},
		{"up of block 1", nil, set("blk.1.ffn_up_exps.weight", 32, 64, 8), "blk.1.ffn_up_exps.weight", ""},
		{"down transposed", nil, set("blk.1.ffn_down_exps.weight", 32, 64, 4), "blk.1.ffn_down_exps.weight", ""},
		{"router experts", nil, set("blk.1.ffn_gate_inp.weight", 32, 8), "blk.1.ffn_gate_inp.weight", ""},
		{"no router", nil, drop("blk.0.ffn_gate_inp.weight"), "blk.0.ffn_up_exps.weight", ""},
		{"no down", nil, drop("blk.1.ffn_down_exps.weight"), "blk.1.ffn_gate_exps.weight", ""},
		{"bias not per expert", nil, func(s []TensorSpec) []TensorSpec {
			return append(s, TensorSpec{Name: "blk.0.ffn_up_exps.bias", Type: quant.F32, Dims: []int64{64, 3}})
		}, "blk.0.ffn_up_exps.bias", ""},
		{"expert_count", []KV{{Key: "testmoe.expert_count", Value: Uint32(8)}}, nil, "blk.0.ffn_up_exps.weight", ""},
		{"embedding_length", []KV{{Key: "testmoe.embedding_length", Value: Uint32(64)}}, nil, "blk.0.ffn_up_exps.weight", ""},
		{"expert ff", []KV{{Key: "testmoe.expert_feed_forward_length", Value: Uint32(32)}}, nil, "blk.0.ffn_up_exps.weight", ""},
		{"used 0", []KV{{Key: "testmoe.expert_used_count", Value: Uint32(0)}}, nil, "", "testmoe.expert_used_count"},
		{"used 5", []KV{{Key: "testmoe.expert_used_count", Value: Uint32(5)}}, nil, "", "testmoe.expert_used_count"},
		{"used string", []KV{{Key: "testmoe.expert_used_count", Value: String("4")}}, nil, "", "testmoe.expert_used_count"},
		{"count negative", []KV{{Key: "testmoe.expert_count", Value: Int32(-4)}}, nil, "", "testmoe.expert_count"},
		{"block_count", []KV{{Key: "testmoe.block_count", Value: Uint32(1)}}, nil, "", "testmoe.block_count"},
		{"declared, none", []KV{{Key: "testmoe.expert_count", Value: Uint32(4)}}, func(s []TensorSpec) []TensorSpec { return s[:1] }, "", "testmoe.expert_count"},
		{"fused beside separate", nil, func(s []TensorSpec) []TensorSpec {
			return append(s, TensorSpec{Name: "blk.0.ffn_gate_up_exps.weight", Type: quant.Q8_0, Dims: []int64{32, 128, 4}})
		}, "blk.0.ffn_gate_up_exps.weight", ""},
		{"fused odd rows", nil, fused(0, 32, 127, 4), "blk.0.ffn_gate_up_exps.weight", ""},
		{"fused rows unlike block 0", nil, func(s []TensorSpec) []TensorSpec { return fused(1, 32, 64, 4)(fused(0, 32, 128, 4)(s)) }, "blk.1.ffn_gate_up_exps.weight", ""},
		{"mtp: every block", []KV{{Key: "testmoe.block_count", Value: Uint32(2)}, {Key: "testmoe.nextn_predict_layers", Value: Uint32(2)}}, nil, "", "testmoe.nextn_predict_layers"},
		{"mtp: no block_count", []KV{{Key: "testmoe.nextn_predict_layers", Value: Uint32(1)}}, nil, "", "testmoe.nextn_predict_layers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := moeFile(t, c.kv, c.edit)
			m, err := f.MoE()
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("got %+v, %v; want a *FormatError", m, err)
			}
			if fe.Tensor != c.tensor || fe.Key != c.key || fe.Offset <= 0 {
				t.Fatalf("error %q names tensor %q key %q at byte %d; want tensor %q key %q", err, fe.Tensor, fe.Key, fe.Offset, c.tensor, c.key)
			}
		})
	}
}

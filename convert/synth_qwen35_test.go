package convert

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// fixtureHybrid is tiny-qwen35moe's geometry (its README "Model"); the rope
// sections and the conv kernel are left to the defaults, which must give the
// fixture's [3, 3, 2, 0] and 4.
var fixtureHybrid = HybridShape{Heads: 4, HeadsKV: 2, HeadDim: 64, RopeDims: 16, KHeads: 2, VHeads: 4, KDim: 32, VDim: 32, SharedFF: 256}

// TestSynthQwen35MatchesConverterLayout: synth given the fixture's shape
// writes the tensors llama.cpp's convert_hf_to_gguf.py wrote for
// tiny-qwen35moe (same names, shapes and types at BF16) and the same
// qwen35moe hyperparameters, key for key.
func TestSynthQwen35MatchesConverterLayout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "q35.gguf")
	res, err := Synth(context.Background(), SynthConfig{Out: out, Arch: "qwen35moe", Layers: 4, Experts: 64, ExpertsUsed: 6, Embd: 256, FF: 64,
		Type: quant.BF16, DenseType: quant.BF16, Seed: 1, Jobs: 2, Hybrid: fixtureHybrid})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.AttentionLayers, []int{3}) || res.Hybrid.RopeSections != [4]int{3, 3, 2, 0} {
		t.Errorf("attention layers %v, sections %v", res.AttentionLayers, res.Hybrid.RopeSections)
	}
	got, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	want, err := gguf.Open(testutil.Path(t, "models", "tiny-qwen35moe", "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	layout := func(f *gguf.File) []string {
		var s []string
		for _, ti := range f.Tensors {
			dims := fmt.Sprint(ti.Dims)
			if ti.Name == "token_embd.weight" || ti.Name == "output.weight" {
				dims = fmt.Sprintf("[%d vocab]", ti.Dims[0]) // synth has a tokenizer of its own
			}
			s = append(s, fmt.Sprintf("%s %s %s", ti.Name, quant.Type(ti.Type), dims))
		}
		slices.Sort(s)
		return s
	}
	if g, w := layout(got), layout(want); !slices.Equal(g, w) {
		for _, x := range w {
			if !slices.Contains(g, x) {
				t.Errorf("converter's %s: not in synth's output", x)
			}
		}
		for _, x := range g {
			if !slices.Contains(w, x) {
				t.Errorf("synth's %s: not in the converter's output", x)
			}
		}
	}
	n := 0
	for _, kv := range want.KV {
		if !strings.HasPrefix(kv.Key, "qwen35moe.") {
			continue
		}
		n++
		g, ok := got.Get(kv.Key)
		if !ok {
			t.Errorf("%s missing", kv.Key)
			continue
		}
		if g.Type != kv.Value.Type || !reflect.DeepEqual(g.JSON(), kv.Value.JSON()) {
			t.Errorf("%s = %s %v, converter %s %v", kv.Key, g.TypeName(), g.JSON(), kv.Value.TypeName(), kv.Value.JSON())
		}
	}
	for _, kv := range got.KV {
		if strings.HasPrefix(kv.Key, "qwen35moe.") {
			n--
		}
	}
	if n != 0 {
		t.Errorf("synth writes %d qwen35moe keys more than the converter", -n)
	}
	if pre, _ := got.String("tokenizer.ggml.pre"); pre != "qwen35" {
		t.Errorf("tokenizer.ggml.pre = %q", pre)
	}
	// gguf's MoE view sees the routed experts, not the shared one.
	m, err := got.MoE()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 4 || m.Experts != 64 || m.ExpertFF != 64 || m.ExpertsUsed != 6 {
		t.Errorf("MoE %+v", m)
	}
}

// TestSynthQwen35Shapes: the default geometry follows n_embd, any layer
// count works (attention every 4th layer), quantized experts come out as
// asked, the same seed gives the same bytes at any -j, and bad geometry is
// refused.
func TestSynthQwen35Shapes(t *testing.T) {
	dir := t.TempDir()
	cfg := SynthConfig{Out: filepath.Join(dir, "a.gguf"), Arch: "qwen35moe", Layers: 6, Experts: 8, ExpertsUsed: 2, Embd: 256, FF: 128,
		Type: quant.IQ4_NL, DenseType: quant.Q8_0, Seed: 7, Jobs: 2}
	res, err := Synth(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := *res.Hybrid
	if h.Heads != 2 || h.HeadsKV != 2 || h.HeadDim != 256 || h.RopeDims != 64 || h.RopeSections != [4]int{11, 11, 10, 0} ||
		h.KHeads != 2 || h.VHeads != 4 || h.KDim != 128 || h.VDim != 128 || h.SharedFF != 128 || h.AttnInterval != 4 {
		t.Errorf("default geometry for n_embd 256: %+v", h)
	}
	if !slices.Equal(res.AttentionLayers, []int{3}) {
		t.Errorf("attention layers %v", res.AttentionLayers)
	}
	f, err := gguf.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		typ  quant.Type
		dims []int64
	}{
		"blk.0.attn_qkv.weight":            {quant.Q8_0, []int64{256, 2*2*128 + 4*128}},
		"blk.5.ssm_conv1d.weight":          {quant.F32, []int64{4, 1024}},
		"blk.3.attn_q.weight":              {quant.Q8_0, []int64{256, 2 * 2 * 256}},
		"blk.3.attn_output.weight":         {quant.Q8_0, []int64{512, 256}},
		"blk.4.ffn_down_exps.weight":       {quant.IQ4_NL, []int64{128, 256, 8}},
		"blk.4.ffn_gate_inp_shexp.weight":  {quant.F32, []int64{256, 1}},
		"blk.4.ffn_down_shexp.weight":      {quant.Q8_0, []int64{128, 256}},
		"blk.2.ssm_a":                      {quant.F32, []int64{4}},
		"blk.1.post_attention_norm.weight": {quant.F32, []int64{256}},
	} {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if quant.Type(ti.Type) != want.typ || !slices.Equal(ti.Dims, want.dims) {
			t.Errorf("%s: %s %v, want %s %v", name, quant.Type(ti.Type), ti.Dims, want.typ, want.dims)
		}
	}
	// ssm_a is -exp(A_log): negative everywhere, so the state decays.
	ti, _ := f.Tensor("blk.0.ssm_a")
	b, _ := f.ReadTensor(ti)
	a := make([]float32, ti.Elements())
	if err := quant.Dequantize(quant.F32, b, a); err != nil {
		t.Fatal(err)
	}
	for i, v := range a {
		if v >= 0 {
			t.Errorf("ssm_a[%d] = %v", i, v)
		}
	}
	f.Close()
	again := cfg
	again.Out, again.Jobs = filepath.Join(dir, "b.gguf"), 1
	if _, err := Synth(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, cfg.Out), readAll(t, again.Out)) {
		t.Error("-j 1 and -j 2 differ")
	}
	for _, bad := range []SynthConfig{
		{Embd: 192}, // not a multiple of 128
		{Embd: 256, Hybrid: HybridShape{Heads: 4, HeadsKV: 3}},
		{Embd: 256, Hybrid: HybridShape{VHeads: 3}},     // not a multiple of 2 key heads
		{Embd: 256, Hybrid: HybridShape{RopeDims: 300}}, // beyond the head
		{Embd: 256, Hybrid: HybridShape{RopeDims: 16, RopeSections: [4]int{3, 3, 3, 0}}},
	} {
		bad.Out, bad.Arch, bad.Layers, bad.Experts, bad.FF, bad.Type, bad.DenseType = filepath.Join(dir, "bad.gguf"), "qwen35moe", 1, 2, 64, quant.Q8_0, quant.Q8_0
		if _, err := Synth(context.Background(), bad); err == nil {
			t.Errorf("accepted %+v", bad.Hybrid)
		}
	}
}

// Package synthlayout is the one definition of a synthetic model's layout:
// every tensor (name, type, shape, the spread of its random values) and the
// hyperparameter keys, for qwen3moe (its blocks here) and qwen35moe (its
// blocks and keys in internal/hybridshape), with the tensors around the
// blocks that both share. synth (convert) writes GGUFs of it, bench decode
// and bench prefill (engine's synthetic packs) packs of it.
package synthlayout

import (
	"fmt"
	"math"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/hybridshape"
	"github.com/stratactl/stratactl/quant"
)

// Attention is a qwen3moe model's attention geometry.
type Attention struct {
	Heads, HeadsKV, HeadDim int
}

// Resolve fills the zero fields from n_embd: heads of 64, n_embd/64 of
// them, and a quarter as many KV heads where the head count divides by 4
// (else as many), and checks the result.
func (a Attention) Resolve(embd int) (Attention, error) {
	if a.HeadDim == 0 {
		a.HeadDim = 64
	}
	if a.HeadDim < 0 {
		return a, fmt.Errorf("qwen3moe: head dim %d must be positive", a.HeadDim)
	}
	if a.Heads == 0 {
		if embd%a.HeadDim != 0 {
			return a, fmt.Errorf("qwen3moe: --embd %d must be a multiple of %d (heads of %d)", embd, a.HeadDim, a.HeadDim)
		}
		a.Heads = embd / a.HeadDim
	}
	if a.HeadsKV == 0 {
		a.HeadsKV = a.Heads
		if a.Heads%4 == 0 {
			a.HeadsKV = a.Heads / 4
		}
	}
	if a.Heads <= 0 || a.HeadsKV <= 0 || a.Heads%a.HeadsKV != 0 {
		return a, fmt.Errorf("qwen3moe: %d attention heads and %d KV heads: want positive counts, the heads a multiple of the KV heads", a.Heads, a.HeadsKV)
	}
	return a, nil
}

// Layout is a synthetic model: Model.Arch picks the blocks (qwen3moe:
// Attention, resolved; qwen35moe: Hybrid, resolved).
type Layout struct {
	Model     hybridshape.Model
	Attention Attention
	Hybrid    hybridshape.Shape
	Vocab     int
}

// Tensors adds every tensor of the model in file order: token_embd, each
// block, output_norm and output.
func (l Layout) Tensors(add hybridshape.AddFunc) error {
	m := l.Model
	D, V := int64(m.Embd), int64(l.Vocab)
	if err := add("token_embd.weight", m.DenseType, 0, 0.02, D, V); err != nil {
		return err
	}
	for b := range m.Layers {
		var err error
		switch m.Arch {
		case "qwen35moe":
			err = l.Hybrid.AddBlock(b, m, add)
		case "qwen3moe":
			err = l.Attention.addBlock(b, m, add)
		default:
			err = fmt.Errorf("synthetic models are qwen3moe or qwen35moe, not %q", m.Arch)
		}
		if err != nil {
			return err
		}
	}
	if err := add("output_norm.weight", quant.F32, 1, 0.02, D); err != nil {
		return err
	}
	return add("output.weight", m.DenseType, 0, inv(D), D, V)
}

// Metadata is the model's hyperparameter block (the keys llama.cpp's
// converter writes), used experts per token used.
func (l Layout) Metadata(used int) []gguf.KV {
	if l.Model.Arch == "qwen35moe" {
		return l.Hybrid.Metadata(l.Model, used)
	}
	return l.Attention.metadata(l.Model, used)
}

func inv(n int64) float64 { return 1 / math.Sqrt(float64(n)) }

// addBlock adds qwen3moe block il: GQA attention with q/k norms, then the
// MoE FFN (router and stacked experts), named and shaped as llama.cpp's
// convert_hf_to_gguf.py writes them (ne0 first).
func (a Attention) addBlock(il int, m hybridshape.Model, add hybridshape.AddFunc) error {
	D, E, F := int64(m.Embd), int64(m.Experts), int64(m.FF)
	qd, kvd, hd := int64(a.Heads*a.HeadDim), int64(a.HeadsKV*a.HeadDim), int64(a.HeadDim)
	dt := m.DenseType
	p := fmt.Sprintf("blk.%d.", il)
	for _, t := range []struct {
		name        string
		typ         quant.Type
		mean, sigma float64
		dims        []int64
	}{
		{"attn_norm.weight", quant.F32, 1, 0.02, []int64{D}},
		{"attn_q.weight", dt, 0, inv(D), []int64{D, qd}},
		{"attn_k.weight", dt, 0, inv(D), []int64{D, kvd}},
		{"attn_v.weight", dt, 0, inv(D), []int64{D, kvd}},
		{"attn_output.weight", dt, 0, inv(qd), []int64{qd, D}},
		{"attn_q_norm.weight", quant.F32, 1, 0.02, []int64{hd}},
		{"attn_k_norm.weight", quant.F32, 1, 0.02, []int64{hd}},
		{"ffn_norm.weight", quant.F32, 1, 0.02, []int64{D}},
		{"ffn_gate_inp.weight", quant.F32, 0, inv(D), []int64{D, E}},
		{"ffn_gate_exps.weight", m.Type, 0, inv(D), []int64{D, F, E}},
		{"ffn_up_exps.weight", m.Type, 0, inv(D), []int64{D, F, E}},
		{"ffn_down_exps.weight", m.Type, 0, inv(F), []int64{F, D, E}},
	} {
		if err := add(p+t.name, t.typ, t.mean, t.sigma, t.dims...); err != nil {
			return err
		}
	}
	return nil
}

// metadata is qwen3moe's hyperparameter block.
func (a Attention) metadata(m hybridshape.Model, used int) []gguf.KV {
	arch := m.Arch + "."
	var kv []gguf.KV
	u := func(k string, v int) { kv = append(kv, gguf.KV{Key: arch + k, Value: gguf.Uint32(uint32(v))}) }
	u("block_count", m.Layers)
	u("context_length", m.ContextLength())
	u("embedding_length", m.Embd)
	u("feed_forward_length", m.FF)
	u("expert_feed_forward_length", m.FF)
	u("attention.head_count", a.Heads)
	u("attention.head_count_kv", a.HeadsKV)
	u("attention.key_length", a.HeadDim)
	u("attention.value_length", a.HeadDim)
	kv = append(kv, gguf.KV{Key: arch + "rope.freq_base", Value: gguf.Float32(10000)},
		gguf.KV{Key: arch + "attention.layer_norm_rms_epsilon", Value: gguf.Float32(1e-6)})
	u("expert_count", m.Experts)
	u("expert_used_count", used)
	return kv
}

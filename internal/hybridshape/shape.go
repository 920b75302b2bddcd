// Package hybridshape is the one definition of a synthetic qwen35moe model's
// blocks: its token mixers' geometry, every block's tensors (names, shapes,
// the spread of their random values) and its hyperparameter keys.
// internal/synthlayout composes them into the whole model, which synth
// (convert) writes as GGUFs and bench decode (engine) as packs.
package hybridshape

import (
	"fmt"
	"math"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
)

// Shape is the geometry of a qwen35moe model's token mixers: every
// AttnInterval-th layer (il+1 divisible by it) is gated full attention, the
// others gated delta nets, as qwen35moe.full_attention_interval says. Zero
// fields take defaults derived from n_embd with the ratios of Qwen3-Next and
// Qwen3.5 (attention heads of 256 with q of 2 x n_embd, 2 KV heads, a
// quarter of each head rotated in sections 11:11:10; delta-net heads of 128,
// n_embd/128 key heads and twice as many value heads, a conv kernel of 4;
// the shared expert as wide as a routed one), which need n_embd to be a
// multiple of 128.
type Shape struct {
	AttnInterval int    `json:"full_attention_interval"`
	Heads        int    `json:"head_count"`
	HeadsKV      int    `json:"head_count_kv"`
	HeadDim      int    `json:"head_dim"`
	RopeDims     int    `json:"rope_dimension_count"`
	RopeSections [4]int `json:"rope_dimension_sections"`
	KHeads       int    `json:"ssm_group_count"`    // delta-net key heads
	VHeads       int    `json:"ssm_time_step_rank"` // delta-net value heads
	KDim         int    `json:"ssm_state_size"`     // key head dimension
	VDim         int    `json:"ssm_value_head_dim"` // value head dimension
	ConvKernel   int    `json:"ssm_conv_kernel"`
	SharedFF     int    `json:"expert_shared_feed_forward_length"`
}

// Model is the rest of a synthetic model's shape: what the layout reads
// besides the token mixers.
type Model struct {
	Arch                  string // the metadata keys' prefix ("qwen35moe")
	Layers, Experts, Embd int
	FF                    int        // n_ff_exp
	Type, DenseType       quant.Type // routed experts; attention, delta nets, shared expert
	Context               int        // context_length (0: 2048)
}

// ContextLength is the context_length the metadata records.
func (m Model) ContextLength() int {
	if m.Context == 0 {
		return 2048
	}
	return m.Context
}

// AddFunc receives one tensor: name, type, the mean and standard deviation
// of its random values, and dims (ne0 first).
type AddFunc func(name string, t quant.Type, mean, sigma float64, dims ...int64) error

// Resolve fills the zero fields and checks the geometry is one the
// qwen35moe graph can run.
func (h Shape) Resolve(embd, ff int) (Shape, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if (h.Heads == 0 || h.KHeads == 0) && embd%128 != 0 {
		return h, fmt.Errorf("qwen35moe: --embd %d must be a multiple of 128 for the default head counts (n_embd/128)", embd)
	}
	def(&h.AttnInterval, 4)
	def(&h.Heads, embd/128)
	def(&h.HeadsKV, 2-h.Heads%2)
	def(&h.HeadDim, 256)
	def(&h.RopeDims, h.HeadDim/4)
	if h.RopeSections == [4]int{} {
		pairs := h.RopeDims / 2
		s := (pairs + 2) / 3
		h.RopeSections = [4]int{s, s, pairs - 2*s, 0}
	}
	def(&h.KHeads, embd/128)
	def(&h.VHeads, 2*h.KHeads)
	def(&h.KDim, 128)
	def(&h.VDim, 128)
	def(&h.ConvKernel, 4)
	def(&h.SharedFF, ff)
	for _, c := range []struct {
		name string
		v    int
	}{
		{"full_attention_interval", h.AttnInterval}, {"head_count", h.Heads}, {"head_count_kv", h.HeadsKV},
		{"head_dim", h.HeadDim}, {"rope dimensions", h.RopeDims}, {"delta-net key heads", h.KHeads},
		{"delta-net value heads", h.VHeads}, {"delta-net key dim", h.KDim}, {"delta-net value dim", h.VDim},
		{"conv kernel", h.ConvKernel}, {"shared expert ff", h.SharedFF},
	} {
		if c.v <= 0 {
			return h, fmt.Errorf("qwen35moe: %s %d must be positive", c.name, c.v)
		}
	}
	switch {
	case h.Heads%h.HeadsKV != 0:
		return h, fmt.Errorf("qwen35moe: %d attention heads are not a multiple of %d KV heads", h.Heads, h.HeadsKV)
	case h.VHeads%h.KHeads != 0:
		return h, fmt.Errorf("qwen35moe: %d delta-net value heads are not a multiple of %d key heads", h.VHeads, h.KHeads)
	case h.RopeDims%2 != 0 || h.RopeDims > h.HeadDim:
		return h, fmt.Errorf("qwen35moe: %d rotary dimensions: want an even number up to the head dim %d", h.RopeDims, h.HeadDim)
	case h.RopeSections[0]+h.RopeSections[1]+h.RopeSections[2]+h.RopeSections[3] != h.RopeDims/2:
		return h, fmt.Errorf("qwen35moe: rope sections %v do not sum to %d (half the rotary dimensions)", h.RopeSections, h.RopeDims/2)
	}
	for _, s := range h.RopeSections {
		if s < 0 {
			return h, fmt.Errorf("qwen35moe: rope sections %v: a section is negative", h.RopeSections)
		}
	}
	return h, nil
}

// IsAttention says whether block il is full attention.
func (h Shape) IsAttention(il int) bool { return (il+1)%h.AttnInterval == 0 }

// AddBlock adds the tensors of block il (with their random values' mean
// and standard deviation), named and shaped as llama.cpp's
// convert_hf_to_gguf.py writes qwen35moe (ne0 first): the mixer (gated
// delta net or gated attention), post_attention_norm, the router, the
// routed experts and the sigmoid-gated shared expert.
func (h Shape) AddBlock(il int, cfg Model, add AddFunc) error {
	D, E, F, S := int64(cfg.Embd), int64(cfg.Experts), int64(cfg.FF), int64(h.SharedFF)
	inv := func(n int64) float64 { return 1 / math.Sqrt(float64(n)) }
	dt := cfg.DenseType
	p := fmt.Sprintf("blk.%d.", il)
	type tensor struct {
		name        string
		typ         quant.Type
		mean, sigma float64
		dims        []int64
	}
	ts := []tensor{{"attn_norm.weight", quant.F32, 1, 0.02, []int64{D}}}
	if h.IsAttention(il) {
		hd, q, kv := int64(h.HeadDim), int64(h.Heads*h.HeadDim), int64(h.HeadsKV*h.HeadDim)
		ts = append(ts,
			tensor{"attn_q.weight", dt, 0, inv(D), []int64{D, 2 * q}}, // q and its output gate, interleaved per head
			tensor{"attn_k.weight", dt, 0, inv(D), []int64{D, kv}},
			tensor{"attn_v.weight", dt, 0, inv(D), []int64{D, kv}},
			tensor{"attn_output.weight", dt, 0, inv(q), []int64{q, D}},
			tensor{"attn_q_norm.weight", quant.F32, 1, 0.02, []int64{hd}},
			tensor{"attn_k_norm.weight", quant.F32, 1, 0.02, []int64{hd}},
		)
	} else {
		k, v := int64(h.KHeads*h.KDim), int64(h.VHeads*h.VDim)
		conv, hv := 2*k+v, int64(h.VHeads)
		ts = append(ts,
			tensor{"attn_qkv.weight", dt, 0, inv(D), []int64{D, conv}},
			tensor{"attn_gate.weight", dt, 0, inv(D), []int64{D, v}},
			tensor{"ssm_conv1d.weight", quant.F32, 0, inv(int64(h.ConvKernel)), []int64{int64(h.ConvKernel), conv}},
			tensor{"ssm_dt.bias", quant.F32, 0, 0.1, []int64{hv}},
			// -exp(A_log): negative, so every step decays the state.
			tensor{"ssm_a", quant.F32, -1, 0.1, []int64{hv}},
			tensor{"ssm_alpha.weight", dt, 0, inv(D), []int64{D, hv}},
			tensor{"ssm_beta.weight", dt, 0, inv(D), []int64{D, hv}},
			tensor{"ssm_norm.weight", quant.F32, 1, 0.02, []int64{int64(h.VDim)}},
			tensor{"ssm_out.weight", dt, 0, inv(v), []int64{v, D}},
		)
	}
	ts = append(ts,
		tensor{"post_attention_norm.weight", quant.F32, 1, 0.02, []int64{D}},
		tensor{"ffn_gate_inp.weight", quant.F32, 0, inv(D), []int64{D, E}},
		tensor{"ffn_gate_exps.weight", cfg.Type, 0, inv(D), []int64{D, F, E}},
		tensor{"ffn_up_exps.weight", cfg.Type, 0, inv(D), []int64{D, F, E}},
		tensor{"ffn_down_exps.weight", cfg.Type, 0, inv(F), []int64{F, D, E}},
		tensor{"ffn_gate_inp_shexp.weight", quant.F32, 0, inv(D), []int64{D, 1}},
		tensor{"ffn_gate_shexp.weight", dt, 0, inv(D), []int64{D, S}},
		tensor{"ffn_up_shexp.weight", dt, 0, inv(D), []int64{D, S}},
		tensor{"ffn_down_shexp.weight", dt, 0, inv(S), []int64{S, D}},
	)
	for _, t := range ts {
		if err := add(p+t.name, t.typ, t.mean, t.sigma, t.dims...); err != nil {
			return err
		}
	}
	return nil
}

// Metadata is the qwen35moe hyperparameter block, under the keys llama.cpp's
// converter writes (see ../shared/models/tiny-qwen35moe/README.md).
func (h Shape) Metadata(cfg Model, used int) []gguf.KV {
	a := cfg.Arch + "."
	var kv []gguf.KV
	u := func(k string, v int) { kv = append(kv, gguf.KV{Key: a + k, Value: gguf.Uint32(uint32(v))}) }
	f := func(k string, v float32) { kv = append(kv, gguf.KV{Key: a + k, Value: gguf.Float32(v)}) }
	u("block_count", cfg.Layers)
	u("context_length", cfg.ContextLength())
	u("embedding_length", cfg.Embd)
	u("attention.head_count", h.Heads)
	u("attention.head_count_kv", h.HeadsKV)
	sections := make([]int32, 4)
	for i, s := range h.RopeSections {
		sections[i] = int32(s)
	}
	kv = append(kv, gguf.KV{Key: a + "rope.dimension_sections", Value: gguf.MustArray(sections)})
	f("rope.freq_base", 1e7)
	f("attention.layer_norm_rms_epsilon", 1e-6)
	u("expert_count", cfg.Experts)
	u("expert_used_count", used)
	u("attention.key_length", h.HeadDim)
	u("attention.value_length", h.HeadDim)
	u("expert_feed_forward_length", cfg.FF)
	u("expert_shared_feed_forward_length", h.SharedFF)
	u("ssm.conv_kernel", h.ConvKernel)
	u("ssm.state_size", h.KDim)
	u("ssm.group_count", h.KHeads)
	u("ssm.time_step_rank", h.VHeads)
	u("ssm.inner_size", h.VHeads*h.VDim)
	u("full_attention_interval", h.AttnInterval)
	u("rope.dimension_count", h.RopeDims)
	return kv
}

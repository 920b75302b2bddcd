package engine

import (
	"fmt"

	"github.com/stratactl/stratactl/strata"
)

// qwen3moeArch is Qwen3-MoE (llama.cpp qwen3moe): every block is GQA
// attention with q/k RMS norms and full-width NEOX RoPE, then a MoE FFN
// with softmax top-k routing (renormalised unless expert_weights_norm is
// false) and no shared expert.
var qwen3moeArch = archSpec{
	config: func(md meta, c *Config) error {
		if err := md.count("attention.head_count_kv", &c.HeadsKV); err != nil {
			return err
		}
		c.NormTopK = true
		return md.boolean("expert_weights_norm", &c.NormTopK)
	},
	layer: func(l tensorLoader, c *Config, i int, L *Layer) error {
		p := fmt.Sprintf("blk.%d.", i)
		return loadSteps(
			func() (e error) { L.AttnNorm, e = l.vector(p+"attn_norm.weight", c.Embd); return },
			func() (e error) { L.FFNNorm, e = l.vector(p+"ffn_norm.weight", c.Embd); return },
			func() error { return loadAttention(l, c, p, L, false) },
			func() error { return loadRouter(l, c, i, L) },
		)
	},
}

// loadSteps runs load steps in order, stopping at the first error.
func loadSteps(steps ...func() error) error {
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// loadAttention loads a GQA attention block with q/k norms (prefix p is
// "blk.N."); gated: attn_q interleaves each head's query with its output
// gate.
func loadAttention(l tensorLoader, c *Config, p string, L *Layer, gated bool) error {
	qdim, kvdim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	vdim := c.HeadsKV * c.ValueDim
	qrows := qdim
	if gated {
		qrows = 2 * qdim
	}
	L.QGate = gated
	return loadSteps(
		func() (e error) { L.QNorm, e = l.vector(p+"attn_q_norm.weight", c.HeadDim); return },
		func() (e error) { L.KNorm, e = l.vector(p+"attn_k_norm.weight", c.HeadDim); return },
		func() (e error) { L.Q, e = l.matrix(p+"attn_q.weight", c.Embd, qrows); return },
		func() (e error) { L.K, e = l.matrix(p+"attn_k.weight", c.Embd, kvdim); return },
		func() (e error) { L.V, e = l.matrix(p+"attn_v.weight", c.Embd, vdim); return },
		func() (e error) { L.O, e = l.matrix(p+"attn_output.weight", c.Heads*c.ValueDim, c.Embd); return },
	)
}

// loadRouter loads the router and, in a pack, its Q8_0 read-ahead copy.
func loadRouter(l tensorLoader, c *Config, block int, L *Layer) error {
	var err error
	if L.Router, err = l.matrix(fmt.Sprintf("blk.%d.ffn_gate_inp.weight", block), c.Embd, c.Experts); err != nil {
		return err
	}
	if _, ok := l.f.Tensor(strata.RouterCopyName(block)); ok {
		rq, err := l.matrix(strata.RouterCopyName(block), c.Embd, c.Experts)
		if err != nil {
			return err
		}
		L.RouterQ8 = &rq
	}
	return nil
}

package profile

import (
	"context"
	"fmt"

	"github.com/stratactl/stratactl/engine"
)

// collector turns the engine's per-layer traces into Stats. It stops at the
// first inconsistency and keeps it for Run to return, since an Observer
// cannot fail the forward pass itself.
type collector struct {
	stats   *Stats
	layerOf map[int]int // decoder layer -> index into stats.Blocks
	embd    int
	err     error
}

func (c *collector) Layer(tr *engine.LayerTrace) {
	if c.err != nil {
		return
	}
	l, ok := c.layerOf[tr.Layer]
	if !ok {
		return // a dense layer
	}
	if tr.Tokens == 0 {
		return
	}
	k := len(tr.IDs) / tr.Tokens
	if k == 0 || len(tr.IDs) != k*tr.Tokens || len(tr.Weights) != len(tr.IDs) || len(tr.ExpertOut) != len(tr.IDs)*c.embd {
		c.err = fmt.Errorf("layer %d: trace of %d tokens has %d ids, %d weights, %d output values (embedding %d)", tr.Layer, tr.Tokens, len(tr.IDs), len(tr.Weights), len(tr.ExpertOut), c.embd)
		return
	}
	outs := make([][]float32, k)
	for t := range tr.Tokens {
		for j := range k {
			o := (t*k + j) * c.embd
			outs[j] = tr.ExpertOut[o : o+c.embd]
		}
		if err := c.stats.Observe(l, tr.IDs[t*k:(t+1)*k], tr.Weights[t*k:(t+1)*k], outs); err != nil {
			c.err = err
			return
		}
	}
}

// Run profiles m over windows, each evaluated on its own from position 0
// (no BOS is added: the windows are used as given). blocks are the MoE
// layers' block indices (decoder layer numbers). progress, when not nil, is
// told how many tokens each window held once it is done.
func Run(ctx context.Context, m *engine.Model, blocks []int, windows [][]int32, progress func(tokens int)) (*Stats, error) {
	return run(ctx, m, blocks, windows, progress, nil)
}

// run is Run with also, when not nil, seeing every layer trace after the
// collector (tests look at the routing margins through it).
func run(ctx context.Context, m *engine.Model, blocks []int, windows [][]int32, progress func(tokens int), also engine.Observer) (*Stats, error) {
	c := &m.Config
	stats := NewStats(blocks, c.Experts)
	col := &collector{stats: stats, layerOf: map[int]int{}, embd: c.Embd}
	for l, b := range blocks {
		col.layerOf[b] = l
	}
	var obs engine.Observer = col
	if also != nil {
		obs = tee{col, also}
	}
	// Windows run batched (engine.RunWindows): each layer still sees them
	// in order, token by token, so the sums are those of one at a time.
	err := m.RunWindows(ctx, windows, engine.WindowsOptions{Observer: obs,
		After: func(lo, hi int) error {
			if col.err != nil {
				return col.err
			}
			for _, w := range windows[lo:hi] {
				stats.Tokens += int64(len(w))
				if progress != nil {
					progress(len(w))
				}
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	return stats, nil
}

// tee passes each trace to two observers in order.
type tee [2]engine.Observer

func (t tee) Layer(tr *engine.LayerTrace) {
	t[0].Layer(tr)
	t[1].Layer(tr)
}

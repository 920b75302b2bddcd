package calib

import (
	"context"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/optq"
)

// Prepare runs m over windows, collecting the inputs of every MoE layer
// (Collect), and returns them with the quantizer of m's experts (close
// both: the Quantizer, then the Set).
func Prepare(ctx context.Context, m *engine.Model, windows [][]int32, copt Options, opt optq.Options) (*Set, *Quantizer, error) {
	moe, err := m.File.MoE()
	if err != nil {
		return nil, nil, err
	}
	var blocks []int
	for _, l := range moe.Layers {
		blocks = append(blocks, l.Block)
	}
	set, err := Collect(ctx, m, blocks, windows, copt)
	if err != nil {
		return nil, nil, err
	}
	q, err := NewQuantizer(m.File, set, opt)
	if err != nil {
		set.Close()
		return nil, nil, err
	}
	return set, q, nil
}

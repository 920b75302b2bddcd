package calib

import (
	"context"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/optq"
)

// Prepare runs m over windows, collecting the inputs of every MoE layer
// (Collect), and returns them with the quantizer of m's experts (close
// both: the Quantizer, then the Set). With copt.Background it returns as
// soon as the run started (Start): the quantizer's experts then wait for
// their layers, and the Set's Wait for the run's end.
func Prepare(ctx context.Context, m *engine.Model, windows [][]int32, copt Options, opt optq.Options) (*Set, *Quantizer, error) {
	moe, err := m.File.MoE()
	if err != nil {
		return nil, nil, err
	}
	var blocks []int
	for _, l := range moe.Layers {
		blocks = append(blocks, l.Block)
	}
	collect := Collect
	if copt.Background {
		collect = Start
	}
	set, err := collect(ctx, m, blocks, windows, copt)
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

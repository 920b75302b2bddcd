package evalq

import (
	"context"
	"fmt"

	"github.com/stratactl/stratactl/engine"
)

// Run evaluates cand against ref over windows. Each window is run on its own
// from position 0 with no BOS (the ids are used as given), and the positions
// score picks are scored (ScoreAll: 0..len-2, whose logits predict tokens
// 1..len-1), so perplexity is over the NLL of the tokens they predict and
// the divergences over the distributions there. progress, when not nil, is
// told the tokens of each window once both models have run it.
func Run(ctx context.Context, ref, cand *engine.Model, windows [][]int32, score Scoring, progress func(tokens int)) (Result, []Position, error) {
	return RunCandidate(ctx, ref, cand, windows, score, Candidate{}, progress)
}

// RunCandidate is Run with the candidate run as opt says (stream.go).
func RunCandidate(ctx context.Context, ref, cand *engine.Model, windows [][]int32, score Scoring, opt Candidate, progress func(tokens int)) (Result, []Position, error) {
	if rv, cv := ref.Config.Vocab, cand.Config.Vocab; rv != cv {
		return Result{}, nil, fmt.Errorf("the reference has a vocabulary of %d tokens, the candidate %d: their distributions cannot be compared", rv, cv)
	}
	v := ref.Config.Vocab
	rs, cs := ref.NewSession(), cand.NewSession()
	cs.Routing = opt.Routing
	var pos []Position
	for i, w := range windows {
		if err := ctx.Err(); err != nil {
			return Result{}, nil, err
		}
		if score.Scored(len(w)) < 1 {
			return Result{}, nil, fmt.Errorf("window %d: %d tokens leave no position to score (scoring %s)", i, len(w), score)
		}
		rs.Reset()
		rl, err := rs.Forward(w, true)
		if err != nil {
			return Result{}, nil, fmt.Errorf("reference, window %d: %w", i, err)
		}
		cs.Reset()
		cl, err := opt.forward(cs, w)
		if err != nil {
			return Result{}, nil, fmt.Errorf("candidate, window %d: %w", i, err)
		}
		for t := score.First(len(w)); t+1 < len(w); t++ {
			p, err := Compare(rl[t*v:(t+1)*v], cl[t*v:(t+1)*v], w[t+1])
			if err != nil {
				return Result{}, nil, fmt.Errorf("window %d position %d: %w", i, t, err)
			}
			pos = append(pos, p)
		}
		if progress != nil {
			progress(len(w))
		}
	}
	return Summarize(pos, len(windows)), pos, nil
}

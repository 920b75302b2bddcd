package evalq

import (
	"context"
	"fmt"

	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/engine"
)

// Candidate says how RunCandidate runs the candidate.
type Candidate struct {
	// Routing is the candidate session's routing (cache-aware routing
	// through a pack's store).
	Routing engine.Routing
	// TokenByToken runs each window one token at a time, as decode does,
	// so that a pack's store sees every token's demands in order and
	// residency (and routing with a cache bonus) evolves token by token.
	// The logits are the batched pass's bits.
	TokenByToken bool
}

// forward runs window w from position 0 and returns the logits of every
// position.
func (c Candidate) forward(s *engine.Session, w []int32) ([]float32, error) {
	if !c.TokenByToken {
		return s.Forward(w, true)
	}
	v := s.Model().Config.Vocab
	out := make([]float32, 0, len(w)*v)
	for t := range w {
		l, err := s.Forward(w[t:t+1], false)
		if err != nil {
			return nil, err
		}
		out = append(out, l...)
	}
	return out, nil
}

// Streamed is what RunThroughStore measured besides the comparison.
type Streamed struct {
	Stream *engine.StreamReport
	Trace  *cachesim.Trace
}

// RunThroughStore evaluates a pack candidate through its expert store:
// every window in order through the one arena, one token at a time, with
// routing; it returns the comparison, the store's figures over those
// tokens (with the Belady hit rate of the same demands) and their trace.
func RunThroughStore(ctx context.Context, ref, cand *engine.Model, windows [][]int32, score Scoring, routing engine.Routing, progress func(tokens int)) (Result, *Streamed, error) {
	ps := cand.Stream()
	if ps == nil {
		return Result{}, nil, fmt.Errorf("%s: not a pack: every expert is resident, there is no store to run through", cand.File.Path)
	}
	before := ps.Counters()
	ps.StartTrace()
	res, _, err := RunCandidate(ctx, ref, cand, windows, score, Candidate{Routing: routing, TokenByToken: true}, progress)
	if err != nil {
		ps.StopTrace(0)
		return Result{}, nil, err
	}
	tokens := 0
	for _, w := range windows {
		tokens += len(w)
	}
	rep, tr, err := ps.EndTrace(before, tokens)
	if err != nil {
		return Result{}, nil, err
	}
	return res, &Streamed{Stream: rep, Trace: tr}, nil
}

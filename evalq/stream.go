package evalq

import "github.com/stratactl/stratactl/engine"

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

package engine

// readAhead runs before layer next's token mixer, with x the residual
// stream then: when experts stream, it guesses the experts of layers next
// .. next+ReadAhead()-1 from x (each layer's ffn_norm and Q8_0 router
// copy applied to it: the residual changes little over a layer, so its
// router picks nearly the experts it will pick) and asks the store to start
// reading them, the nearest layer first.
func (s *Session) readAhead(next int, x []float32, T int) {
	m := s.m
	depth := m.Experts.ReadAhead()
	if next >= len(m.Layers) || depth == 0 {
		return
	}
	c := &m.Config
	D, E, K := c.Embd, c.Experts, c.ExpertsUsed
	for l := next; l < min(next+depth, len(m.Layers)); l++ {
		L := &m.Layers[l]
		if L.RouterQ8 == nil {
			continue
		}
		xn := s.sc.floats(T * D)
		rmsNormRows(xn, x, L.FFNNorm, D, c.Eps)
		scores := s.sc.floats(T * E)
		m.Pool.MatMul(L.RouterQ8, xn, T, scores)
		m.Experts.Guess(l, s.sc.topGuesses(scores, E, K))
	}
}

// topGuesses is the union over the rows of scores [T][E] of each row's k
// highest (ties to the lower id), in the order first picked.
func topGuesses(scores []float32, E, k int) []int {
	return new(scratch).topGuesses(scores, E, k)
}

// topGuesses is topGuesses in sc's buffers (the result valid until the
// next call).
func (sc *scratch) topGuesses(scores []float32, E, k int) []int {
	seen := bools(&sc.seen, E)
	guess := sc.guess[:0]
	taken := bools(&sc.taken, E)
	for t := 0; t*E < len(scores); t++ {
		row := scores[t*E : (t+1)*E]
		clear(taken)
		for j := 0; j < min(k, E); j++ {
			best := -1
			for e, v := range row {
				if !taken[e] && (best < 0 || v > row[best]) {
					best = e
				}
			}
			taken[best] = true
			if !seen[best] {
				seen[best] = true
				guess = append(guess, best)
			}
		}
	}
	sc.guess = guess
	return guess
}

package engine

// readAhead runs before layer next's token mixer, with x the residual
// stream then: when experts stream, it guesses the experts of layers next
// .. next+ReadAhead()-1 from x (each layer's ffn_norm and Q8_0 router
// copy applied to it: where the residual changes little over a layer, its
// router picks nearly the experts it will pick) and asks the store to
// start reading them, the nearest layer first, for each layer whose
// guesses pay (raLayer.pays).
func (s *Session) readAhead(next int, x []float32, T int) {
	m := s.m
	depth := m.Experts.ReadAhead()
	if next >= len(m.Layers) || depth == 0 {
		return
	}
	c := &m.Config
	D, E, K := c.Embd, c.Experts, c.ExpertsUsed
	if len(s.ra) != len(m.Layers)*depth {
		s.ra, s.raDepth = make([]raLayer, len(m.Layers)*depth), depth
	}
	for l := next; l < min(next+depth, len(m.Layers)); l++ {
		L := &m.Layers[l]
		if L.RouterQ8 == nil {
			continue
		}
		xn := s.sc.floats(T * D)
		rmsNormRows(xn, x, L.FFNNorm, D, c.Eps)
		scores := s.sc.floats(T * E)
		m.Pool.MatMul(L.RouterQ8, xn, T, scores)
		guess := s.sc.topGuesses(scores, E, K)
		st := &s.ra[l*depth+l-next]
		st.pending = st.pending[:0]
		for _, e := range guess {
			if !m.Experts.Resident(l, e) {
				st.pending = append(st.pending, e)
			}
		}
		if st.pays() {
			m.Experts.Guess(l, guess)
		}
	}
}

// raLayer scores read-ahead in one layer at one distance (the guesses
// made d layers before the layer's own, each distance scored on its own,
// so a layer guessed from near but not from far is still guessed): of the
// experts its guesses would read (guessed and not resident when guessed,
// whether or not the guess was made), how many the layer's routing then
// picked. The score depends
// only on the routing and the store's calls, so the decisions are the same
// at any thread count and a trace of the calls replays exactly.
type raLayer struct {
	pending []int // the last guess's would-be reads
	reads   int64 // would-be reads scored
	used    int64 // of them, picked by the routing
}

const (
	// raWarm is the would-be reads a layer's guesses are made for before
	// their score counts.
	raWarm = 32
	// raWindow bounds the history: past it, both counts halve, so the
	// score follows the recent tokens.
	raWindow = 1024
)

// pays reports whether the layer's guesses are read: while the score
// warms up, and then while at least half of the would-be reads are picked
// (a wrong one costs a slot read and evicts an expert; a right one saves a
// wait on the critical path).
func (r *raLayer) pays() bool { return r.reads < raWarm || 2*r.used >= r.reads }

// raScore scores layer l's last guesses, from every distance, against the
// experts its routing picked (ids, distinct).
func (s *Session) raScore(l int, ids []int) {
	depth := s.raDepth
	if depth == 0 || (l+1)*depth > len(s.ra) {
		return
	}
	for d := range depth {
		s.ra[l*depth+d].score(ids)
	}
}

// score scores the last guess against the experts the routing picked.
func (r *raLayer) score(ids []int) {
	for _, e := range r.pending {
		for _, id := range ids {
			if id == e {
				r.used++
				break
			}
		}
	}
	r.reads += int64(len(r.pending))
	r.pending = r.pending[:0]
	if r.reads > raWindow {
		r.reads, r.used = r.reads/2, r.used/2
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

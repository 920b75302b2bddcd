package engine

import "github.com/stratactl/stratactl/kernels"

// readAhead runs before layer next's token mixer, with x the residual
// stream then: when experts stream, it guesses the experts of layers next
// .. next+ReadAhead()-1 from x (each layer's ffn_norm and Q8_0 router
// copy applied to it: where the residual changes little over a layer, its
// router picks nearly the experts it will pick) and asks the store to
// start reading them, the nearest layer first, for each layer whose
// guesses pay (raScore.pays). Each layer is also guessed from x plus the
// last token's change over layers next..l (its attention's and MoE's
// outputs there, which the residual before a layer lacks of that layer's
// MoE input: where the token mixer's output moves slowly from token to
// token, as in the synthetic packs, this guesses better; in the tiny
// trained models, worse), and layer next from x plus the last token's
// token-mixer output at layer next alone (the routing's own input is x
// plus this token's: the nearest of the three where the mixer's output
// moves slowly); all are scored, and the one read is the one whose
// would-be reads the routing picked most often (raScore.beats; on a tie
// the earlier of x alone, with the change, with the mixer's output). A
// layer's guesses are one product over all their rows, with Q8_0
// activations.
func (s *Session) readAhead(next int, x []float32, T int) {
	m := s.m
	depth := m.Experts.ReadAhead()
	if depth == 0 {
		return
	}
	D := m.Config.Embd
	if len(s.ra) != len(m.Layers)*depth {
		s.ra, s.raDepth = make([]raLayer, len(m.Layers)*depth), depth
	}
	s.raTrack(next, x[(T-1)*D:T*D], depth)
	if next >= len(m.Layers) {
		return
	}
	var est []float32 // x plus the last token's change over next..l
	for l := next; l < min(next+depth, len(m.Layers)); l++ {
		L := &m.Layers[l]
		d := s.ra[l*depth].delta
		if d == nil || l > next && est == nil {
			est = nil
		} else {
			if est == nil {
				est = s.sc.floats(T * D)
				copy(est, x)
			}
			for t := 0; t < T; t++ {
				addTo(est[t*D:(t+1)*D], d)
			}
		}
		if L.RouterQ8 == nil {
			continue
		}
		st := &s.ra[l*depth+l-next]
		var mix []float32 // x plus the last token's mixer output at layer next
		if o := s.ra[l*depth].mixer; l == next && o != nil {
			mix = s.sc.floats(T * D)
			copy(mix, x)
			for t := 0; t < T; t++ {
				addTo(mix[t*D:(t+1)*D], o)
			}
		}
		g := s.raGuess(l, T, [raKinds][]float32{x, est, mix}, [raKinds]*raScore{&st.raScore, &st.withDelta, &st.withMixer})
		use, guess := &st.raScore, g[0]
		if est != nil && st.withDelta.beats(use) {
			use, guess = &st.withDelta, g[1]
		}
		if mix != nil && st.withMixer.beats(use) {
			use, guess = &st.withMixer, g[2]
		}
		if use.pays() {
			m.Experts.Guess(l, guess)
		}
	}
}

// raKinds is the kinds of guess read-ahead makes of a layer: from the
// residual alone, with the last token's change, with its mixer's output.
const raKinds = 3

// raGuess makes layer l's guesses from the inputs xs (T rows each; nil
// where that kind is not made): each kind's union of its rows' top-k
// experts by the layer's Q8_0 router copy (in the session's guess
// buffers, valid until the next call), the experts among them not
// resident now becoming that kind's would-be reads (sc). The rows of all
// kinds are normed and multiplied in one product.
func (s *Session) raGuess(l, T int, xs [raKinds][]float32, sc [raKinds]*raScore) [raKinds][]int {
	m := s.m
	c := &m.Config
	D, E := c.Embd, c.Experts
	L := &m.Layers[l]
	n := 0
	for _, x := range xs {
		if x != nil {
			n++
		}
	}
	xn := s.sc.floats(n * T * D)
	var ins, outs [raKinds][]float32
	j := 0
	for _, x := range xs {
		if x != nil {
			ins[j], outs[j] = x, xn[j*T*D:(j+1)*T*D]
			j++
		}
	}
	rmsNormKinds(outs, ins, L.FFNNorm, D, c.Eps)
	scores := s.sc.floats(n * T * E)
	if T == 1 {
		// One pass of row products (a batch's product of so few rows is
		// slower), on this goroutine: a few hundred KiB of weights, less
		// than handing them to the pool's workers costs.
		var ms [raKinds]*kernels.Matrix
		var as [raKinds]*acts
		var outs [raKinds][]float32
		for j := 0; j < n; j++ {
			a := &s.raActs[j]
			a.rewrap(xn[j*D:(j+1)*D], D, Fast)
			ms[j], as[j], outs[j] = L.RouterQ8, a, scores[j*E:(j+1)*E]
		}
		matVecs(serialPool, ms[:n], as[:n], outs[:n], &s.sc.vecs)
	} else {
		a := &s.raActs[0]
		a.rewrap(xn, D, Fast)
		matMul(m.Pool, L.RouterQ8, a, scores)
	}
	var out [raKinds][]int
	j = 0
	for k, x := range xs {
		if x == nil {
			continue
		}
		guess := s.sc.topGuesses(scores[j*T*E:(j+1)*T*E], E, c.ExpertsUsed)
		j++
		out[k] = append(s.raGuesses[k][:0], guess...)
		s.raGuesses[k] = out[k]
		sc[k].pending = m.Experts.Absent(l, guess, sc[k].pending[:0])
	}
	return out
}

// rmsNormKinds is rmsNormRows(ys[k], xs[k], w, n, eps) for each kind k
// whose xs[k] is not nil (xs[0] never is; every kind has as many rows):
// the kinds' sums of squares run side by side, each in rmsNorm's order
// (its bits), so the three latency-bound chains of float64 adds cost
// about one.
func rmsNormKinds(ys, xs [raKinds][]float32, w []float32, n int, eps float32) {
	for r := 0; r+n <= len(xs[0]); r += n {
		var in [raKinds][]float32
		for k := range in {
			in[k] = xs[0][r : r+n]
			if xs[k] != nil {
				in[k] = xs[k][r : r+n]
			}
		}
		var ss [raKinds]float64
		ss[0], ss[1], ss[2] = sumSquares3(in[0], in[1], in[2])
		for k, x := range xs {
			if x != nil {
				scaleRow(ys[k][r:r+n], in[k], w, rmsScale(ss[k], n, eps))
			}
		}
	}
}

// sumSquares3 is the sums of squares of a, b and c (len(a) each), each
// in float64 from the first element to the last, as rmsNorm sums.
func sumSquares3(a, b, c []float32) (sa, sb, sc float64) {
	b, c = b[:len(a)], c[:len(a)]
	for i, u := range a {
		v, w := b[i], c[i]
		sa += float64(u) * float64(u)
		sb += float64(v) * float64(v)
		sc += float64(w) * float64(w)
	}
	return sa, sb, sc
}

// raMixer keeps the last token's token-mixer output o (its rows [T][Embd])
// at layer l, for read-ahead's guess of layer l in the next pass.
func (s *Session) raMixer(l int, o []float32, T int) {
	depth := s.raDepth
	if depth == 0 || (l+1)*depth > len(s.ra) {
		return
	}
	D := s.m.Config.Embd
	p := &s.ra[l*depth]
	p.mixer = append(p.mixer[:0], o[(T-1)*D:T*D]...)
}

// raTrack keeps, per layer, the last token's residual before the layer
// (last, before layer next) and its change over the layer: the residual
// after layer next-1 less the one before it.
func (s *Session) raTrack(next int, last []float32, depth int) {
	if next > 0 {
		p := &s.ra[(next-1)*depth]
		if len(p.before) == len(last) {
			if p.delta == nil {
				p.delta = make([]float32, len(last))
			}
			for i, v := range last {
				p.delta[i] = v - p.before[i]
			}
		}
	}
	if next < len(s.ra)/depth {
		p := &s.ra[next*depth]
		p.before = append(p.before[:0], last...)
	}
}

// raLayer is read-ahead's record of one layer at one distance (the
// guesses made d layers before the layer's own, each distance scored on
// its own, so a layer guessed from near but not from far is still
// guessed): the scores of its guesses, from the residual alone, with the
// last token's change added and with its mixer's output added (readAhead).
type raLayer struct {
	raScore
	withDelta, withMixer raScore
	// before, delta and mixer, in each layer's distance-0 entry only: the
	// last token's residual before the layer, its change over the layer
	// (raTrack) and its token mixer's output there (raMixer); nil until a
	// token has been through it.
	before, delta, mixer []float32
}

// raScore scores one kind of guess: of the experts its guesses would read
// (guessed and not resident when guessed, whether or not the guess was
// read), how many the layer's routing then picked. The score depends only
// on the routing and the store's calls, so the decisions are the same at
// any thread count and a trace of the calls replays exactly.
type raScore struct {
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
func (r *raScore) pays() bool { return r.reads < raWarm || 2*r.used >= r.reads }

// beats reports whether r's would-be reads were picked more often than
// o's: (used+1)/(reads+2) each, so that a few reads decide little (a
// better guess has fewer would-be reads, since more of what it guesses is
// resident already, and would warm up later).
func (r *raScore) beats(o *raScore) bool {
	return (r.used+1)*(o.reads+2) > (o.used+1)*(r.reads+2)
}

// raScore scores layer l's last guesses, from every distance, against the
// experts its routing picked (ids, distinct).
func (s *Session) raScore(l int, ids []int) {
	depth := s.raDepth
	if depth == 0 || (l+1)*depth > len(s.ra) {
		return
	}
	for d := range depth {
		s.ra[l*depth+d].score(ids)
		s.ra[l*depth+d].withDelta.score(ids)
		s.ra[l*depth+d].withMixer.score(ids)
	}
}

// score scores the last guess against the experts the routing picked.
func (r *raScore) score(ids []int) {
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

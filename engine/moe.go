package engine

import (
	"fmt"
	"math"

	"github.com/stratactl/stratactl/kernels"
)

// moe runs the mixture-of-experts block on the normed inputs xn of T tokens
// and returns its output [T][Embd].
func (s *Session) moe(l int, L *Layer, xn, x []float32, T int) ([]float32, error) {
	m := s.m
	c := &m.Config
	E, K, D := c.Experts, c.ExpertsUsed, c.Embd
	// The router, the shared expert and every routed expert read xn: in
	// fast mode it is quantized once for all of them.
	sc := &s.sc
	xa := sc.newActs(xn, D, m.Mode)
	logits := sc.floats(T * E)
	matMul(m.Pool, &L.Router, xa, logits)
	probs := sc.floats(T * E)
	ids := sc.int32s(T * K)
	weights := sc.floats(T * K)
	var resident func(int) bool
	if s.Routing.CacheAware {
		resident = func(e int) bool { return m.Experts.Resident(l, e) }
	}
	for t := 0; t < T; t++ {
		softmax(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E])
		s.route(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E], resident, ids[t*K:(t+1)*K], weights[t*K:(t+1)*K])
	}
	// Which (token, rank) slots each expert serves, experts in ascending
	// id; the distinct experts in order of first use.
	users := grow(&sc.users, E)
	for e := range users {
		users[e] = users[e][:0]
	}
	distinct := sc.distinct[:0]
	for i, e := range ids {
		if len(users[e]) == 0 {
			distinct = append(distinct, int(e))
		}
		users[e] = append(users[e], i)
	}
	sc.distinct = distinct
	s.Stats.ExpertUses += len(ids)
	s.raScore(l, distinct)
	m.Experts.Need(l, distinct)
	ys := sc.floats(T * K * D)
	var act []float32 // [T][K][ExpertFF] SwiGLU products, traced on request
	if s.Observer != nil && s.TraceExpertAct {
		act = make([]float32, T*K*c.ExpertFF)
	}
	if T == 1 {
		if err := s.expertsOneToken(l, ids, xa, ys, act); err != nil {
			return nil, err
		}
	} else if err := s.expertsBatch(l, users, xa, ys, act); err != nil {
		return nil, err
	}
	out := sc.zeros(T * D)
	for t := 0; t < T; t++ {
		o := out[t*D : (t+1)*D]
		for k := 0; k < K; k++ {
			// o += w * y_k, a product and a sum per element (Axpy's
			// bits are the scalar loop's), the experts in rank order.
			kernels.Axpy(o, weights[t*K+k], ys[(t*K+k)*D:(t*K+k+1)*D])
		}
	}
	if s.Observer != nil {
		s.trace = &LayerTrace{Layer: l, Pos0: s.Pos, Tokens: T, Probs: probs, IDs: ids, Weights: weights, ExpertOut: ys, MoEInput: xn, ExpertAct: act}
	}
	if L.Shared != nil {
		gate, sh := s.sharedExpert(L.Shared, xa)
		for t := 0; t < T; t++ {
			kernels.Axpy(out[t*D:(t+1)*D], gate[t], sh[t*D:(t+1)*D])
		}
		if s.trace != nil {
			s.trace.SharedGate, s.trace.SharedOut = gate, sh
		}
	}
	return out, nil
}

// sharedExpert runs the shared expert on T tokens: its gates
// sigmoid(GateInp . x) [T] and its outputs before them [T][Embd].
func (s *Session) sharedExpert(sh *SharedExpert, xa *acts) (gate, y []float32) {
	m := s.m
	xn, T := xa.f32(), xa.T()
	D, F := m.Config.Embd, m.Config.SharedFF
	sc := &s.sc
	gate = sc.floats(T)
	for t := range gate {
		gate[t] = sigmoid(kernels.DotF32(sh.GateInp, xn[t*D:(t+1)*D]))
	}
	g := sc.floats(T * F)
	if T == 1 {
		sc.gates, sc.ups = append(sc.gates[:0], &sh.Gate), append(sc.ups[:0], &sh.Up)
		s.swiGLU(sc.gates, sc.ups, xa, g)
	} else {
		u := sc.floats(T * F)
		matVecsOrMul(m.Pool, []*kernels.Matrix{&sh.Gate, &sh.Up}, xa, [][]float32{g, u}, &sc.vecs)
		for i := range g {
			g[i] = silu(g[i]) * u[i]
		}
	}
	y = sc.floats(T * D)
	matMul(m.Pool, &sh.Down, sc.newActs(g, F, m.Mode), y)
	return gate, y
}

// swiGLU sets row j of h [len(gates)][F] to silu(gates[j] x) * (ups[j] x)
// for the single row x: in fast mode, where every matrix takes x's Q8_0
// row, in one parallel pass with the activation run in it
// (MatVecsQ8GLU); else the products in one pass, then the activation. The
// bits are the same either way.
func (s *Session) swiGLU(gates, ups []*kernels.Matrix, xa *acts, h []float32) {
	m := s.m
	sc := &s.sc
	n := len(gates)
	F := len(h) / n
	u := sc.floats(n * F)
	q8 := true
	for j := range gates {
		q8 = q8 && xa.useQ8(gates[j]) && !xa.useBF16(gates[j]) && xa.useQ8(ups[j]) && !xa.useBF16(ups[j])
	}
	if !q8 {
		g := sc.floats(n * F)
		ms, as, outs := sc.ms[:0], sc.as[:0], sc.outs[:0]
		for j := range gates {
			ms = append(ms, gates[j], ups[j])
			as = append(as, xa, xa)
			outs = append(outs, g[j*F:(j+1)*F], u[j*F:(j+1)*F])
		}
		sc.ms, sc.as, sc.outs = ms, as, outs
		matVecs(m.Pool, ms, as, outs, &sc.vecs)
		for i := range h {
			h[i] = silu(g[i]) * u[i]
		}
		return
	}
	xq, gs, us := sc.xq[:0], sc.outs[:0], sc.outs2[:0]
	for j := range gates {
		xq = append(xq, xa.q8()[0])
		gs, us = append(gs, h[j*F:(j+1)*F]), append(us, u[j*F:(j+1)*F])
	}
	sc.xq, sc.outs, sc.outs2 = xq, gs, us
	m.Pool.MatVecsQ8GLU(gates, ups, xq, gs, us, func(j, lo, hi int) {
		hj, uj := h[j*F:(j+1)*F], u[j*F:(j+1)*F]
		for r := lo; r < hi; r++ {
			hj[r] = silu(hj[r]) * uj[r]
		}
	})
}

func silu(v float32) float32 { return v / (1 + float32(math.Exp(float64(-v)))) }

// softmax writes the softmax of x to p (exponentials summed in float64).
func softmax(p, x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v - mx))
		p[i] = float32(e)
		sum += e
	}
	inv := 1 / sum
	for i := range p {
		p[i] = float32(float64(p[i]) * inv)
	}
}

// route picks len(ids) experts: by router probability, ties to the lower id;
// with cache-aware routing, picks after the first Exact ones compare the
// logits plus Bonus for resident experts. Weights are the true
// probabilities of the picks, renormalised when the model says so.
func (s *Session) route(probs, logits []float32, resident func(int) bool, ids []int32, weights []float32) {
	K := len(ids)
	exact := K
	if resident != nil {
		exact = min(max(s.Routing.Exact, 0), K)
	}
	taken := bools(&s.sc.taken, len(probs))
	for k := 0; k < K; k++ {
		best := -1
		var bestV float32
		for e := range probs {
			if taken[e] {
				continue
			}
			v := probs[e]
			if k >= exact {
				v = logits[e]
				if resident(e) {
					v += s.Routing.Bonus
				}
			}
			if best < 0 || v > bestV {
				best, bestV = e, v
			}
		}
		taken[best] = true
		ids[k] = int32(best)
	}
	var sum float64
	for k, e := range ids {
		weights[k] = probs[e]
		sum += float64(probs[e])
	}
	if s.m.Config.NormTopK && sum > 0 {
		for k := range weights {
			weights[k] = float32(float64(weights[k]) / sum)
		}
	}
}

// expertsBatch runs each needed expert once over all the tokens routed to
// it (users[e] lists its (token, rank) slots), writing outputs to ys and,
// when act is not nil, the SwiGLU products to act.
func (s *Session) expertsBatch(l int, users [][]int, xa *acts, ys, act []float32) error {
	m := s.m
	c := &m.Config
	K, D, F := c.ExpertsUsed, c.Embd, c.ExpertFF
	n := 0
	for _, u := range users {
		n = max(n, len(u))
	}
	xs := make([]float32, n*D)
	g := make([]float32, n*F)
	up := make([]float32, n*F)
	y := make([]float32, n*D)
	outs := make([][]float32, n)
	for e, u := range users {
		if len(u) == 0 {
			continue
		}
		ex, err := m.Experts.Get(l, e)
		if err != nil {
			return fmt.Errorf("layer %d expert %d: %w", l, e, err)
		}
		s.Stats.DistinctLoads++
		nt := len(u)
		tok := make([]int, nt)
		for j, slot := range u {
			tok[j] = slot / K
		}
		ea := xa.gather(tok, xs)
		matMul(m.Pool, &ex.Gate, ea, g[:nt*F])
		matMul(m.Pool, &ex.Up, ea, up[:nt*F])
		for i := 0; i < nt*F; i++ {
			g[i] = silu(g[i]) * up[i]
		}
		outs = outs[:nt]
		for j, slot := range u {
			outs[j] = ys[slot*D : (slot+1)*D]
		}
		matMulTo(m.Pool, &ex.Down, newActs(g[:nt*F], F, m.Mode), outs, y)
		m.Experts.Release(l, e)
		if act != nil {
			for j, slot := range u {
				copy(act[slot*F:(slot+1)*F], g[j*F:(j+1)*F])
			}
		}
	}
	return nil
}

// expertsOneToken runs the K experts of one token: first those already in
// memory, while the reads of the others go on, then, as their reads
// arrive, those read by then; each group in one parallel pass per stage
// (gate and up, then down) rather than three per expert. Every output
// element is the same Dot into its rank's own row of ys, so the bits are
// expertsBatch's whatever the grouping and the order reads arrive in.
func (s *Session) expertsOneToken(l int, ids []int32, xa *acts, ys, act []float32) error {
	m := s.m
	sc := &s.sc
	left := grow(&sc.left, len(ids))
	for k := range left {
		left[k] = k
	}
	es := sc.es[:0]
	defer func() { sc.es = es }()
	for waited := false; len(left) > 0; {
		// The ranks not read yet compact into left's own buffer.
		now, rest := sc.now[:0], left[:0]
		for _, k := range left {
			if m.Experts.Ready(l, int(ids[k])) {
				now = append(now, k)
			} else {
				rest = append(rest, k)
			}
		}
		sc.now = now[:0]
		if len(now) == 0 {
			if !waited {
				es = es[:0]
				for _, k := range rest {
					es = append(es, int(ids[k]))
				}
				m.Experts.WaitAny(l, es)
				waited = true
				continue
			}
			// None read after a wait (a failed read, or one to start):
			// Get takes the first.
			now, rest = rest[:1], rest[1:]
		}
		waited = false
		if err := s.expertGroup(l, ids, now, xa, ys, act); err != nil {
			return err
		}
		left = rest
	}
	return nil
}

// expertGroup runs the experts ids[k] for k in ranks, pinned together;
// act, when not nil, gets rank k's SwiGLU product at [k*ExpertFF:].
func (s *Session) expertGroup(l int, ids []int32, ranks []int, xa *acts, ys, act []float32) error {
	m := s.m
	c := &m.Config
	D, F := c.Embd, c.ExpertFF
	n := len(ranks)
	sc := &s.sc
	exs := grow(&sc.exs, n)
	clear(exs)
	defer s.release(l, ids, ranks, exs)
	for j, k := range ranks {
		ex, err := m.Experts.Get(l, int(ids[k]))
		if err != nil {
			return fmt.Errorf("layer %d expert %d: %w", l, ids[k], err)
		}
		exs[j] = ex
		s.Stats.DistinctLoads++
	}
	gates, ups := sc.gates[:0], sc.ups[:0]
	for _, ex := range exs {
		gates, ups = append(gates, &ex.Gate), append(ups, &ex.Up)
	}
	sc.gates, sc.ups = gates, ups
	h := sc.floats(n * F)
	s.swiGLU(gates, ups, xa, h)
	ms, xs, outs := sc.ms[:0], sc.as[:0], sc.outs[:0]
	if act != nil {
		for j, k := range ranks {
			copy(act[k*F:(k+1)*F], h[j*F:(j+1)*F])
		}
	}
	for j, ex := range exs {
		k := ranks[j]
		ms = append(ms, &ex.Down)
		xs = append(xs, sc.newActs(h[j*F:(j+1)*F], F, m.Mode))
		outs = append(outs, ys[k*D:(k+1)*D])
	}
	matVecs(m.Pool, ms, xs, outs, &sc.vecs)
	sc.ms, sc.as, sc.outs = ms, xs, outs
	return nil
}

// release unpins the experts of expertGroup that it got (exs[j] not nil).
func (s *Session) release(l int, ids []int32, ranks []int, exs []*Expert) {
	for j, ex := range exs {
		if ex != nil {
			s.m.Experts.Release(l, int(ids[ranks[j]]))
		}
	}
}

package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/stratactl/stratactl/kernels"
)

// moe runs the mixture-of-experts block on the normed inputs xa of T
// tokens and returns its output [T][Embd]. When it reports added, it has
// also added the output to the residual rows x and set s.sc.first to
// firstNonFinite of each sum (addRowsFinite's work), in its combine pass.
func (s *Session) moe(l int, L *Layer, xa *acts, x []float32, T int) (out []float32, added bool, err error) {
	m := s.m
	c := &m.Config
	E, K, D := c.Experts, c.ExpertsUsed, c.Embd
	// The router, the shared expert and every routed expert read xa: in
	// fast mode it is quantized once for all of them.
	sc := &s.sc
	xn := xa.f32()
	logits := sc.floats(T * E)
	xa.prepare(m.Pool, &L.Router)
	s.lap(PhaseQuant)
	matMul(m.Pool, &L.Router, xa, logits)
	s.lapProducts(PhaseRouter, &L.Router)
	probs := sc.floats(T * E)
	ids := sc.int32s(T * K)
	weights := sc.floats(T * K)
	var resident func(int) bool
	if s.Routing.CacheAware {
		resident = func(e int) bool { return m.Experts.Resident(l, e) }
	}
	if T == 1 || resident != nil {
		for t := 0; t < T; t++ {
			softmax(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E])
			s.route(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E], resident, ids[t*K:(t+1)*K], weights[t*K:(t+1)*K], &sc.taken)
		}
	} else {
		// A batch's tokens route in parallel, each range with its own
		// marks (the store's residency, which cache-aware routing reads,
		// is asked from one goroutine only).
		// A token's work counted as K scans of E plus E float64
		// exponentials at about 32 each: at 16*E a 64-token batch of 32
		// experts ran on the caller alone.
		m.Pool.Parallel(T, E*(K+32), func(lo, hi int) {
			var taken []bool
			for t := lo; t < hi; t++ {
				softmax(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E])
				s.route(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E], nil, ids[t*K:(t+1)*K], weights[t*K:(t+1)*K], &taken)
			}
		})
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
	s.lap(PhaseRoute)
	// With the routed experts run in parallel, the shared expert is one
	// more item of that pass (sharedJob) and its gated output is added in
	// the combine pass.
	var shj *sharedJob
	if T == 1 {
		if err := s.expertsOneToken(l, ids, xa, ys, act); err != nil {
			return nil, false, err
		}
	} else {
		if L.Shared != nil && s.expertsInParallel(len(distinct)) {
			shj = s.newSharedJob(L.Shared, xa)
		}
		if err := s.expertsBatch(l, users, distinct, xa, ys, act, shj); err != nil {
			return nil, false, err
		}
	}
	out = sc.floats(T * D)
	if T == 1 {
		combineExperts(out, ys, weights, K, D, 0, 1)
	} else {
		// The residual add too, where nothing is added to out after.
		added = L.Shared == nil || shj != nil
		s.combineBatch(out, ys, weights, x, shj, added)
	}
	if s.Observer != nil {
		s.trace = &LayerTrace{Layer: l, Pos0: s.Pos, Tokens: T, Probs: probs, IDs: ids, Weights: weights, ExpertOut: ys, MoEInput: xn, ExpertAct: act}
	}
	s.lap(PhaseCombine)
	if shj != nil {
		if s.trace != nil {
			s.trace.SharedGate, s.trace.SharedOut = shj.gate, shj.y
		}
	} else if L.Shared != nil {
		gate, sh := s.sharedExpert(L.Shared, xa)
		for t := 0; t < T; t++ {
			kernels.Axpy(out[t*D:(t+1)*D], gate[t], sh[t*D:(t+1)*D])
		}
		if s.trace != nil {
			s.trace.SharedGate, s.trace.SharedOut = gate, sh
		}
		s.lap(PhaseCombine)
	}
	return out, added, nil
}

// combineBatch is combineExperts of a batch's tokens in one parallel
// pass, each token's row then plus its shared expert's gated output (shj
// not nil) and, when add is set, added to the residual row x, whose
// firstNonFinite goes to s.sc.first. (A function of its own, so that the
// pass's closure and what it captures are made only for a batch, not on
// every decode step.)
func (s *Session) combineBatch(out, ys, weights, x []float32, shj *sharedJob, add bool) {
	c := &s.m.Config
	K, D := c.ExpertsUsed, c.Embd
	T := len(out) / D
	var first []int
	if add {
		first = grow(&s.sc.first, T)
	}
	s.m.Pool.Parallel(T, K*D, func(lo, hi int) {
		combineExperts(out, ys, weights, K, D, lo, hi)
		if shj != nil {
			for t := lo; t < hi; t++ {
				kernels.Axpy(out[t*D:(t+1)*D], shj.gate[t], shj.y[t*D:(t+1)*D])
			}
		}
		if add {
			addTo(x[lo*D:hi*D], out[lo*D:hi*D])
			for t := lo; t < hi; t++ {
				first[t] = firstNonFinite(x[t*D : (t+1)*D])
			}
		}
	})
}

// combineExperts sets out[t] to the sum from +0 over ranks k of
// weights[t*K+k] * ys[t*K+k], in rank order, for tokens lo <= t < hi.
func combineExperts(out, ys, weights []float32, K, D, lo, hi int) {
	for t := lo; t < hi; t++ {
		o := out[t*D : (t+1)*D]
		clear(o)
		for k := 0; k < K; k++ {
			// o += w * y_k, a product and a sum per element (Axpy's
			// bits are the scalar loop's), the experts in rank order.
			kernels.Axpy(o, weights[t*K+k], ys[(t*K+k)*D:(t*K+k+1)*D])
		}
	}
}

// sharedExpert runs the shared expert on T tokens: its gates
// sigmoid(GateInp . x) [T] and its outputs before them [T][Embd].
func (s *Session) sharedExpert(sh *SharedExpert, xa *acts) (gate, y []float32) {
	m := s.m
	xn, T := xa.f32(), xa.T()
	D, F := m.Config.Embd, m.Config.SharedFF
	sc := &s.sc
	gate = sc.floats(T)
	sharedGates(gate, sh, xn, D)
	g := sc.floats(T * F)
	if T == 1 {
		sc.gates, sc.ups = append(sc.gates[:0], &sh.Gate), append(sc.ups[:0], &sh.Up)
		s.swiGLU(sc.gates, sc.ups, xa, g)
	} else {
		u := sc.floats(T * F)
		matVecsOrMul(m.Pool, []*kernels.Matrix{&sh.Gate, &sh.Up}, xa, [][]float32{g, u}, &sc.vecs)
		gateUp(g, u, m.Mode)
	}
	s.lapProducts(PhaseExpertUp, &sh.Gate, &sh.Up)
	y = sc.floats(T * D)
	ga := sc.newActs(g, F, m.Mode)
	ga.prepare(m.Pool, &sh.Down)
	s.lap(PhaseQuant)
	matMul(m.Pool, &sh.Down, ga, y)
	s.lapProducts(PhaseExpertDown, &sh.Down)
	return gate, y
}

// sharedGates sets gate[t] to the shared expert's gate of row t of xn
// (rows of D): sigmoid(GateInp . x).
func sharedGates(gate []float32, sh *SharedExpert, xn []float32, D int) {
	for t := range gate {
		gate[t] = sigmoid(kernels.DotF32(sh.GateInp, xn[t*D:(t+1)*D]))
	}
}

// sharedJob is the shared expert of a batch run as an item of
// expertsParallel's pass, on one goroutine: its buffers and its down
// projection's input wrapper taken from the scratch, and the batch's rows
// made ready for its products, on the caller before the pass.
type sharedJob struct {
	sh         *SharedExpert
	xa, ga     *acts
	gate, g, u []float32
	y          []float32
}

// newSharedJob readies the shared expert of xa's rows for expertsParallel.
func (s *Session) newSharedJob(sh *SharedExpert, xa *acts) *sharedJob {
	m := s.m
	sc := &s.sc
	T := xa.T()
	D, F := m.Config.Embd, m.Config.SharedFF
	j := &sc.shared
	*j = sharedJob{sh: sh, xa: xa, gate: sc.floats(T), g: sc.floats(T * F), u: sc.floats(T * F), y: sc.floats(T * D)}
	j.ga = sc.newActs(j.g, F, m.Mode)
	xa.prepare(m.Pool, &sh.Gate)
	xa.prepare(m.Pool, &sh.Up)
	xa.f32()
	return j
}

// run is sharedExpert's products on pool (the bits are sharedExpert's):
// the gates sigmoid(GateInp . x), then silu(Gate x) * (Up x) and its
// down projection.
func (j *sharedJob) run(pool *kernels.Pool, mode Mode) {
	sharedGates(j.gate, j.sh, j.xa.f32(), j.xa.n)
	matMul(pool, &j.sh.Gate, j.xa, j.g)
	matMul(pool, &j.sh.Up, j.xa, j.u)
	gateUp(j.g, j.u, mode)
	matMul(pool, &j.sh.Down, j.ga, j.y)
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
		gateUp(g, u, m.Mode)
		copy(h, g)
		return
	}
	xa.q8()
	s.lap(PhaseQuant)
	xq, gs, us := sc.xq[:0], sc.outs[:0], sc.outs2[:0]
	for j := range gates {
		xq = append(xq, xa.q8()[0])
		gs, us = append(gs, h[j*F:(j+1)*F]), append(us, u[j*F:(j+1)*F])
	}
	sc.xq, sc.outs, sc.outs2 = xq, gs, us
	g := &sc.glu
	if g.fn == nil {
		g.fn = g.run
	}
	g.h, g.u, g.F = h, u, F
	m.Pool.MatVecsQ8GLU(gates, ups, xq, gs, us, g.fn)
	g.h, g.u = nil, nil
}

// gluPass is swiGLU's activation in the products' pass: rows [lo, hi) of
// pair j, h = silu(h) * u, its function bound once (a closure handed to
// the pool would be a new heap object per call).
type gluPass struct {
	h, u []float32
	F    int
	fn   func(j, lo, hi int)
}

func (g *gluPass) run(j, lo, hi int) {
	F := g.F
	kernels.SwiGLU(g.h[j*F+lo:j*F+hi], g.u[j*F+lo:j*F+hi]) // the quantized path: fast mode
}

// gateUp sets g[i] = silu(g[i]) * u[i], the experts' gated activation: in
// fast mode by kernels.SwiGLU (a float32 exponential, vector code), in
// exact mode by silu (a float64 exponential). Each element is its own, so
// the bits do not depend on how the rows are split or batched.
func gateUp(g, u []float32, mode Mode) {
	if mode == Fast {
		kernels.SwiGLU(g, u)
		return
	}
	for i := range g {
		g[i] = silu(g[i]) * u[i]
	}
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
func (s *Session) route(probs, logits []float32, resident func(int) bool, ids []int32, weights []float32, marks *[]bool) {
	K := len(ids)
	exact := K
	if resident != nil {
		exact = min(max(s.Routing.Exact, 0), K)
	}
	taken := bools(marks, len(probs))
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
// it (users[e] lists its (token, rank) slots; distinct are the experts with
// any), writing outputs to ys and, when act is not nil, the SwiGLU products
// to act. With many experts in memory it runs them in parallel, each whole
// on one goroutine (expertsParallel); else one after the other, each
// product split over the pool's rows. Every element is the same product
// either way. shj, when not nil, is the layer's shared expert, run as the
// first item of expertsParallel's pass (only that path takes one).
func (s *Session) expertsBatch(l int, users [][]int, distinct []int, xa *acts, ys, act []float32, shj *sharedJob) error {
	m := s.m
	if s.expertsInParallel(len(distinct)) {
		return s.expertsParallel(l, users, distinct, xa, ys, act, shj)
	}
	if shj != nil {
		panic("engine: a shared expert job outside expertsParallel")
	}
	b := s.sc.expertBufs(1)[0]
	for _, e := range distinct {
		if err := s.expertRun(m.Pool, l, e, users[e], xa, ys, act, b); err != nil {
			return err
		}
		s.Stats.DistinctLoads++
	}
	return nil
}

// expertInput is a routed expert matrix of layer l that reads the MoE's
// input (the gate: every expert's has one type) when the store has every
// expert mapped, for normActs to quantize the input for; nil otherwise.
func (s *Session) expertInput(l int) *kernels.Matrix {
	if me, ok := s.m.Experts.(*mappedExperts); ok && len(me.experts[l]) > 0 {
		return &me.experts[l][0].Gate
	}
	return nil
}

// expertsInParallel reports whether expertsBatch runs n distinct experts
// by expertsParallel.
func (s *Session) expertsInParallel(n int) bool {
	_, mapped := s.m.Experts.(*mappedExperts)
	return mapped && s.m.Pool.Threads > 1 && n >= 2*s.m.Pool.Threads
}

// expertBufs are one goroutine's buffers for expertRun, grown to the
// largest expert it ran and kept in the session's scratch from layer to
// layer and batch to batch: the gathered inputs' wrapper and the down
// projection's input wrapper keep their row lists and quantized rows, so
// a warm prefill allocates none per expert.
type expertBufs struct {
	tok          []int
	xs, g, up, y []float32
	outs         [][]float32
	in, down     acts
}

// expertRun runs expert e of layer l on its slots u (token, rank) of xa,
// its products on pool, into ys (and its SwiGLU products into act when not
// nil).
func (s *Session) expertRun(pool *kernels.Pool, l, e int, u []int, xa *acts, ys, act []float32, b *expertBufs) error {
	m := s.m
	c := &m.Config
	K, D, F := c.ExpertsUsed, c.Embd, c.ExpertFF
	ex, err := m.Experts.Get(l, e)
	if err != nil {
		return fmt.Errorf("layer %d expert %d: %w", l, e, err)
	}
	defer m.Experts.Release(l, e)
	nt := len(u)
	tok := grow(&b.tok, nt)
	for j, slot := range u {
		tok[j] = slot / K
	}
	ea := xa.gatherInto(&b.in, tok, grow(&b.xs, nt*D))
	g, up := grow(&b.g, nt*F), grow(&b.up, nt*F)
	matMul(pool, &ex.Gate, ea, g)
	matMul(pool, &ex.Up, ea, up)
	gateUp(g, up, m.Mode)
	outs := grow(&b.outs, nt)
	for j, slot := range u {
		outs[j] = ys[slot*D : (slot+1)*D]
	}
	b.down.rewrap(g, F, m.Mode)
	matMulTo(pool, &ex.Down, &b.down, outs, grow(&b.y, nt*D))
	if act != nil {
		for j, slot := range u {
			copy(act[slot*F:(slot+1)*F], g[j*F:(j+1)*F])
		}
	}
	return nil
}

// serialPool runs a product on the calling goroutine alone: the products
// of expertsParallel, which are parallel over experts instead.
var serialPool = kernels.NewPool(1)

// expertsParallel is expertsBatch over the pool's goroutines, each taking
// the next expert in turn (those with the most tokens first) and running
// its three products whole: at hundreds of experts of a few tokens each,
// one parallel pass per product cost more in hand-offs and idle workers
// than the products themselves. xa's rows are quantized (or rounded)
// before, so the goroutines only read them. shj, when not nil, is item 0
// of the pass: the shared expert's products on one goroutine.
func (s *Session) expertsParallel(l int, users [][]int, distinct []int, xa *acts, ys, act []float32, shj *sharedJob) error {
	m := s.m
	for _, e := range distinct {
		ex, err := m.Experts.Get(l, e)
		if err != nil {
			return fmt.Errorf("layer %d expert %d: %w", l, e, err)
		}
		xa.prepare(m.Pool, &ex.Gate)
		xa.prepare(m.Pool, &ex.Up)
		m.Experts.Release(l, e)
	}
	order := append(s.sc.order[:0], distinct...)
	slices.SortStableFunc(order, func(a, b int) int { return len(users[b]) - len(users[a]) })
	s.sc.order = order
	var next atomic.Int64
	first := 0 // the shared expert's item, when there is one: item 0, the largest
	if shj != nil {
		first = 1
	}
	errs := make([]error, m.Pool.Threads)
	bufs := s.sc.expertBufs(len(errs))
	// One index per goroutine: each runs items until none is left, in
	// that index's buffers.
	m.Pool.Parallel(len(errs), 1<<30, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			for errs[w] == nil {
				i := int(next.Add(1)-1) - first
				if i >= len(order) {
					break
				}
				if i < 0 {
					shj.run(serialPool, m.Mode)
					continue
				}
				errs[w] = s.expertRun(serialPool, l, order[i], users[order[i]], xa, ys, act, bufs[w])
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.Stats.DistinctLoads += len(distinct)
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
				s.lap(PhaseRoute)
				m.Experts.WaitAny(l, es)
				s.lap(PhaseWait)
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
	s.lap(PhaseRoute)
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
	s.lap(PhaseWait)
	s.swiGLU(gates, ups, xa, h)
	if st := s.Timing; st != nil && st.on {
		st.lap(PhaseExpertUp)
		for _, ex := range exs {
			st.Bytes[PhaseExpertUp] += int64(len(ex.Gate.Data) + len(ex.Up.Data))
		}
	}
	ms, xs, outs := sc.ms[:0], sc.as[:0], sc.outs[:0]
	if act != nil {
		for j, k := range ranks {
			copy(act[k*F:(k+1)*F], h[j*F:(j+1)*F])
		}
	}
	for j, ex := range exs {
		k := ranks[j]
		ms = append(ms, &ex.Down)
		a := sc.newActs(h[j*F:(j+1)*F], F, m.Mode)
		a.prepare(m.Pool, &ex.Down)
		xs = append(xs, a)
		outs = append(outs, ys[k*D:(k+1)*D])
	}
	s.lap(PhaseQuant)
	matVecs(m.Pool, ms, xs, outs, &sc.vecs)
	sc.ms, sc.as, sc.outs = ms, xs, outs
	if st := s.Timing; st != nil && st.on {
		st.lap(PhaseExpertDown)
		for _, ex := range exs {
			st.Bytes[PhaseExpertDown] += int64(len(ex.Down.Data))
		}
	}
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

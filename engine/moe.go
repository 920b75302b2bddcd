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
	xa := newActs(xn, D, m.Mode)
	logits := make([]float32, T*E)
	matMul(m.Pool, &L.Router, xa, logits)
	probs := make([]float32, T*E)
	ids := make([]int32, T*K)
	weights := make([]float32, T*K)
	var resident func(int) bool
	if s.Routing.CacheAware {
		resident = func(e int) bool { return m.Experts.Resident(l, e) }
	}
	for t := 0; t < T; t++ {
		softmax(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E])
		s.route(probs[t*E:(t+1)*E], logits[t*E:(t+1)*E], resident, ids[t*K:(t+1)*K], weights[t*K:(t+1)*K])
	}
	// Which (token, rank) slots each expert serves, experts in ascending id.
	users := make([][]int, E)
	var distinct []int
	for i, e := range ids {
		if users[e] == nil {
			distinct = append(distinct, int(e))
		}
		users[e] = append(users[e], i)
	}
	s.Stats.ExpertUses += len(ids)
	s.raScore(l, distinct)
	m.Experts.Need(l, distinct)
	var ys []float32
	if T > 1 {
		ys = grow(&s.bufs.ys, T*K*D) // expertsBatch writes every slot
	} else {
		ys = make([]float32, T*K*D)
	}
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
	out := make([]float32, T*D)
	for t := 0; t < T; t++ {
		o := out[t*D : (t+1)*D]
		for k := 0; k < K; k++ {
			w := weights[t*K+k]
			yk := ys[(t*K+k)*D : (t*K+k+1)*D]
			for d := range o {
				o[d] += float32(w * yk[d])
			}
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
	gate = make([]float32, T)
	for t := range gate {
		gate[t] = sigmoid(kernels.DotF32(sh.GateInp, xn[t*D:(t+1)*D]))
	}
	g := make([]float32, T*F)
	u := make([]float32, T*F)
	matVecsOrMul(m.Pool, []*kernels.Matrix{&sh.Gate, &sh.Up}, xa, [][]float32{g, u})
	for i := range g {
		g[i] = silu(g[i]) * u[i]
	}
	y = make([]float32, T*D)
	matMul(m.Pool, &sh.Down, newActs(g, F, m.Mode), y)
	return gate, y
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
	taken := make([]bool, len(probs))
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
	left := make([]int, len(ids))
	for k := range left {
		left[k] = k
	}
	var es []int
	for waited := false; len(left) > 0; {
		var now, rest []int
		for _, k := range left {
			if m.Experts.Ready(l, int(ids[k])) {
				now = append(now, k)
			} else {
				rest = append(rest, k)
			}
		}
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
	exs := make([]*Expert, n)
	defer func() {
		for j, ex := range exs {
			if ex != nil {
				m.Experts.Release(l, int(ids[ranks[j]]))
			}
		}
	}()
	for j, k := range ranks {
		ex, err := m.Experts.Get(l, int(ids[k]))
		if err != nil {
			return fmt.Errorf("layer %d expert %d: %w", l, ids[k], err)
		}
		exs[j] = ex
		s.Stats.DistinctLoads++
	}
	gu := make([]float32, 2*n*F)
	ms := make([]*kernels.Matrix, 0, 2*n)
	xs := make([]*acts, 0, 2*n)
	outs := make([][]float32, 0, 2*n)
	for j, ex := range exs {
		ms = append(ms, &ex.Gate, &ex.Up)
		xs = append(xs, xa, xa)
		outs = append(outs, gu[2*j*F:(2*j+1)*F], gu[(2*j+1)*F:(2*j+2)*F])
	}
	matVecs(m.Pool, ms, xs, outs)
	h := make([]float32, n*F)
	for j := 0; j < n; j++ {
		g, u := gu[2*j*F:(2*j+1)*F], gu[(2*j+1)*F:(2*j+2)*F]
		for i := range g {
			h[j*F+i] = silu(g[i]) * u[i]
		}
	}
	if act != nil {
		for j, k := range ranks {
			copy(act[k*F:(k+1)*F], h[j*F:(j+1)*F])
		}
	}
	ms, xs, outs = ms[:0], xs[:0], outs[:0]
	for j, ex := range exs {
		k := ranks[j]
		ms = append(ms, &ex.Down)
		xs = append(xs, newActs(h[j*F:(j+1)*F], F, m.Mode))
		outs = append(outs, ys[k*D:(k+1)*D])
	}
	matVecs(m.Pool, ms, xs, outs)
	return nil
}

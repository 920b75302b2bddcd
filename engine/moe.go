package engine

import (
	"fmt"
	"math"
)

// moe runs the mixture-of-experts block on the normed inputs xn of T tokens
// and returns its output [T][Embd].
func (s *Session) moe(l int, L *Layer, xn, x []float32, T int) ([]float32, error) {
	m := s.m
	c := &m.Config
	E, K, D, F := c.Experts, c.ExpertsUsed, c.Embd, c.ExpertFF
	logits := make([]float32, T*E)
	m.Pool.MatMul(&L.Router, xn, T, logits)
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
	m.Experts.Need(l, distinct)
	ys := make([]float32, T*K*D)
	n := 0
	for _, u := range users {
		n = max(n, len(u))
	}
	xs := make([]float32, n*D)
	g := make([]float32, n*F)
	up := make([]float32, n*F)
	y := make([]float32, n*D)
	for e, u := range users {
		if len(u) == 0 {
			continue
		}
		ex, err := m.Experts.Get(l, e)
		if err != nil {
			return nil, fmt.Errorf("layer %d expert %d: %w", l, e, err)
		}
		s.Stats.DistinctLoads++
		nt := len(u)
		for j, slot := range u {
			t := slot / K
			copy(xs[j*D:(j+1)*D], xn[t*D:(t+1)*D])
		}
		m.Pool.MatMul(&ex.Gate, xs[:nt*D], nt, g[:nt*F])
		m.Pool.MatMul(&ex.Up, xs[:nt*D], nt, up[:nt*F])
		for i := 0; i < nt*F; i++ {
			g[i] = silu(g[i]) * up[i]
		}
		m.Pool.MatMul(&ex.Down, g[:nt*F], nt, y[:nt*D])
		m.Experts.Release(l, e)
		for j, slot := range u {
			copy(ys[slot*D:(slot+1)*D], y[j*D:(j+1)*D])
		}
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
		s.trace = &LayerTrace{Layer: l, Pos0: s.Pos, Tokens: T, Probs: probs, IDs: ids, Weights: weights, ExpertOut: ys}
	}
	return out, nil
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

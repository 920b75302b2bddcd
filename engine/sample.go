package engine

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/stratactl/stratactl/kernels"
)

// Sampler picks the next token from logits: greedy at temperature 0,
// otherwise temperature + nucleus (top-p) sampling from a seeded generator,
// so a seed replays the same text. A Sampler reuses its buffers from call
// to call (one per sequence; not safe for concurrent use).
type Sampler struct {
	Temp float64
	TopP float64
	rng  *rand.Rand

	p         []float64 // per token id, its weight (weigh)
	x         []float32 // per token id, (logit - max) / Temp, then its exponential
	keys, tmp []uint64  // candidates in order: descending logit key << 32 | id
	// The pool's pass of weigh, its function bound once (a closure handed
	// to the pool would be a new heap object per draw), and its arguments.
	weighFn func(lo, hi int)
	logits  []float32
	mx      float64
	keyed   bool
}

// NewSampler makes a sampler; topP <= 0 or >= 1 keeps the whole distribution.
func NewSampler(temp, topP float64, seed uint64) *Sampler {
	return &Sampler{Temp: temp, TopP: topP, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Argmax is the index of the largest logit, ties to the lower id
// (kernels.Argmax: vector code).
func Argmax(logits []float32) int32 { return int32(kernels.Argmax(logits)) }

// Sample draws one token id: the candidates in descending probability
// (ties to the lower id), cut to the smallest prefix whose probabilities
// (over their sum in id order) reach TopP, and one uniform draw over that
// prefix's total, both sums taken in candidate order. Without a cut (TopP
// <= 0 or >= 1) the draw is over every id in id order, which is the same
// distribution and needs no ordering: the total summed and the draw walked
// in id order, ending at the last id of non-zero probability when rounding
// leaves the walk short.
func (s *Sampler) Sample(logits []float32) int32 { return s.sample(logits, nil) }

// sampleWork is one probability's cost (an exponential) in Pool.Parallel's
// units (weights of a dot product).
const sampleWork = 256

// sample is Sample with the probabilities and keys computed on pool's
// threads (nil: on the caller's): each is one element's own, so the
// draws are Sample's at any thread count.
func (s *Sampler) sample(logits []float32, pool *kernels.Pool) int32 {
	if s.Temp <= 0 {
		return Argmax(logits)
	}
	mx := float64(logits[Argmax(logits)])
	n := len(logits)
	if cap(s.p) < n {
		s.p, s.x, s.keys, s.tmp = make([]float64, n), make([]float32, n), make([]uint64, n), make([]uint64, n)
	}
	p, keys := s.p[:n], s.keys[:n]
	all := s.TopP <= 0 || s.TopP >= 1
	if pool != nil {
		if s.weighFn == nil {
			s.weighFn = s.weighRange
		}
		s.logits, s.mx, s.keyed = logits, mx, !all
		pool.Parallel(n, sampleWork, s.weighFn)
		s.logits = nil
	} else {
		s.weigh(logits, mx, 0, n, !all)
	}
	if all {
		return s.drawAll(p)
	}
	order, ok := s.candidateOrder(p, keys)
	if !ok {
		order = comparisonOrder(p, keys)
	}
	keep := n
	if s.TopP > 0 && s.TopP < 1 {
		var sum float64
		for _, e := range p {
			sum += e
		}
		var cum float64
		for i, k := range order {
			cum += p[uint32(k)] / sum
			if cum >= s.TopP {
				keep = i + 1
				break
			}
		}
	}
	var total float64
	for _, k := range order[:keep] {
		total += p[uint32(k)]
	}
	r := s.rng.Float64() * total
	for _, k := range order[:keep] {
		r -= p[uint32(k)]
		if r < 0 {
			return int32(uint32(k))
		}
	}
	return int32(uint32(order[keep-1]))
}

// weigh sets p[i] to id i's weight, e^x in float32 (kernels.ExpF32, vector
// code: within 2 ulp, 0 below x = -87) of x = (logit i - mx) * (1/Temp)
// rounded to float32, and, with keyed, the candidate key of id i, for i in
// [lo, hi).
func (s *Sampler) weigh(logits []float32, mx float64, lo, hi int, keyed bool) {
	p, x := s.p[lo:hi], s.x[lo:hi]
	kernels.ShiftScale(x, logits[lo:hi], mx, 1/s.Temp) // float32((float64(v) - mx) * (1/Temp))
	kernels.ExpF32(x, x)
	kernels.Widen(p, x)
	if keyed {
		keys := s.keys[lo:hi]
		for j, v := range logits[lo:hi] {
			keys[j] = uint64(descendingKey(v))<<32 | uint64(lo+j)
		}
	}
}

func (s *Sampler) weighRange(lo, hi int) { s.weigh(s.logits, s.mx, lo, hi, s.keyed) }

// drawAll is the draw over every id (no top-p cut) in id order.
func (s *Sampler) drawAll(p []float64) int32 {
	var total float64
	for _, e := range p {
		total += e
	}
	r := s.rng.Float64() * total
	last := 0
	for i, e := range p {
		r -= e
		if r < 0 {
			return int32(i)
		}
		if e > 0 {
			last = i
		}
	}
	return int32(last)
}

// descendingKey maps a float32 to a uint32 that orders the other way
// round: larger values get smaller keys (-0 after +0).
func descendingKey(v float32) uint32 {
	b := math.Float32bits(v)
	if b>>31 != 0 {
		return b // negative: larger magnitude, larger key
	}
	return ^(b | 1<<31)
}

// candidateOrder sorts keys (descending logit << 32 | id, in id order) by
// their logit part, stably (an LSD radix sort of 8-bit digits), then
// brings each run of equal probabilities into id order. exp is monotone,
// so that is the order by (probability descending, id ascending); ok is
// false when the result is not (a NaN, or an exp that is not monotone at
// some pair), and the caller sorts by comparison instead.
func (s *Sampler) candidateOrder(p []float64, keys []uint64) ([]uint64, bool) {
	n := len(keys)
	var hist [4][256]int
	for _, k := range keys {
		for d := 0; d < 4; d++ {
			hist[d][byte(k>>(32+8*d))]++
		}
	}
	src, dst := keys, s.tmp[:n]
	for d := 0; d < 4; d++ {
		h := &hist[d]
		if h[byte(src[0]>>(32+8*d))] == n {
			continue // every key has this digit
		}
		var at [256]int
		sum := 0
		for b, c := range h {
			at[b] = sum
			sum += c
		}
		for _, k := range src {
			b := byte(k >> (32 + 8*d))
			dst[at[b]] = k
			at[b]++
		}
		src, dst = dst, src
	}
	for i := 0; i+1 < n; {
		a, b := p[uint32(src[i])], p[uint32(src[i+1])]
		if a > b {
			i++
			continue
		}
		if a != b {
			return nil, false
		}
		j := i + 1
		for j+1 < n && p[uint32(src[j+1])] == a {
			j++
		}
		// Equal logits are in id order already; equal probabilities of
		// distinct logits are not.
		run := src[i : j+1]
		slices.SortFunc(run, func(x, y uint64) int { return cmp.Compare(uint32(x), uint32(y)) })
		i = j
	}
	return src, true
}

// comparisonOrder writes to keys the ids by probability descending, ties
// to the lower id, by a comparison sort: for the logits candidateOrder
// cannot order (with a NaN, the order sort.Slice leaves).
func comparisonOrder(p []float64, keys []uint64) []uint64 {
	type cand struct {
		id int
		p  float64
	}
	cands := make([]cand, len(p))
	for i, v := range p {
		cands[i] = cand{i, v}
	}
	sort.Slice(cands, func(a, b int) bool {
		if cands[a].p != cands[b].p {
			return cands[a].p > cands[b].p
		}
		return cands[a].id < cands[b].id
	})
	for i, c := range cands {
		keys[i] = uint64(c.id)
	}
	return keys
}

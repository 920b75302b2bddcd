package engine

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Sampler picks the next token from logits: greedy at temperature 0,
// otherwise temperature + nucleus (top-p) sampling from a seeded generator,
// so a seed replays the same text.
type Sampler struct {
	Temp float64
	TopP float64
	rng  *rand.Rand
}

// NewSampler makes a sampler; topP <= 0 or >= 1 keeps the whole distribution.
func NewSampler(temp, topP float64, seed uint64) *Sampler {
	return &Sampler{Temp: temp, TopP: topP, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Argmax is the index of the largest logit, ties to the lower id.
func Argmax(logits []float32) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// Sample draws one token id.
func (s *Sampler) Sample(logits []float32) int32 {
	if s.Temp <= 0 {
		return Argmax(logits)
	}
	mx := float64(logits[Argmax(logits)])
	type cand struct {
		id int
		p  float64
	}
	cands := make([]cand, len(logits))
	var sum float64
	for i, v := range logits {
		p := math.Exp((float64(v) - mx) / s.Temp)
		cands[i] = cand{i, p}
		sum += p
	}
	sort.Slice(cands, func(a, b int) bool {
		if cands[a].p != cands[b].p {
			return cands[a].p > cands[b].p
		}
		return cands[a].id < cands[b].id
	})
	keep := len(cands)
	if s.TopP > 0 && s.TopP < 1 {
		var cum float64
		for i, c := range cands {
			cum += c.p / sum
			if cum >= s.TopP {
				keep = i + 1
				break
			}
		}
	}
	var total float64
	for _, c := range cands[:keep] {
		total += c.p
	}
	r := s.rng.Float64() * total
	for _, c := range cands[:keep] {
		r -= c.p
		if r < 0 {
			return int32(c.id)
		}
	}
	return int32(cands[keep-1].id)
}

package engine

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/kernels"
)

func TestSampler(t *testing.T) {
	logits := []float32{1, 3, 3, 0.5, -2}
	if got := Argmax(logits); got != 1 {
		t.Fatalf("argmax %d, want 1 (ties to the lower id)", got)
	}
	if got := NewSampler(0, 0.9, 7).Sample(logits); got != 1 {
		t.Fatalf("temp 0 sampled %d", got)
	}
	// Top-p so small that only the best candidate survives.
	s := NewSampler(1, 1e-9, 7)
	for i := 0; i < 20; i++ {
		if got := s.Sample(logits); got != 1 {
			t.Fatalf("top-p 1e-9 sampled %d", got)
		}
	}
	// Same seed, same draws; the frequencies follow the softmax.
	a, b := NewSampler(1, 1, 42), NewSampler(1, 1, 42)
	counts := make([]int, len(logits))
	const n = 20000
	for i := 0; i < n; i++ {
		x, y := a.Sample(logits), b.Sample(logits)
		if x != y {
			t.Fatal("same seed, different draws")
		}
		counts[x]++
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v))
	}
	for i, v := range logits {
		p := math.Exp(float64(v)) / z
		if got := float64(counts[i]) / n; math.Abs(got-p) > 0.02 {
			t.Errorf("token %d: frequency %.3f, probability %.3f", i, got, p)
		}
	}
}

// TestThreadCountInvariant: logits are the same bits at any thread count.
func TestThreadCountInvariant(t *testing.T) {
	tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[64:96]
	var ref []float32
	for _, th := range []int{1, 3} {
		m, err := Open(testutil.TinyModel(t, "model-mixed.gguf"), Options{Threads: th})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.NewSession().Forward(tokens, true)
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = got
			continue
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("threads %d: logit %d differs", th, i)
			}
		}
	}
}

func TestCacheAwareRoute(t *testing.T) {
	m := &Model{Config: Config{NormTopK: true}}
	s := &Session{m: m}
	logits := []float32{2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 0.1, 0.0}
	probs := make([]float32, len(logits))
	softmax(probs, logits)
	ids := make([]int32, 4)
	w := make([]float32, 4)
	s.route(probs, logits, nil, ids, w, &s.sc.taken)
	if ids[0] != 0 || ids[1] != 1 || ids[2] != 2 || ids[3] != 3 {
		t.Fatalf("plain routing picked %v", ids)
	}
	resident := func(e int) bool { return e >= 6 }
	s.Routing = Routing{CacheAware: true, Bonus: 10, Exact: 2}
	s.route(probs, logits, resident, ids, w, &s.sc.taken)
	if ids[0] != 0 || ids[1] != 1 || ids[2] != 6 || ids[3] != 7 {
		t.Fatalf("cache-aware routing picked %v, want [0 1 6 7]", ids)
	}
	sum := probs[0] + probs[1] + probs[6] + probs[7]
	for k, e := range ids {
		if d := math.Abs(float64(w[k] - probs[e]/sum)); d > 1e-6 {
			t.Fatalf("weight %d is %g, want the renormalised true probability %g", k, w[k], probs[e]/sum)
		}
	}
	// Bonus 0 is the plain order.
	s.Routing.Bonus = 0
	s.route(probs, logits, resident, ids, w, &s.sc.taken)
	if ids[2] != 2 || ids[3] != 3 {
		t.Fatalf("bonus 0 picked %v", ids)
	}
}

// referenceSample is the sampler as first written (a comparison sort of
// every candidate; without a top-p cut, every candidate in id order), the
// truth Sample's faster ordering must reproduce draw for draw.
func referenceSample(s *Sampler, logits []float32) int32 {
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
	inv := 1 / s.Temp
	for i, v := range logits {
		e := []float32{float32((float64(v) - mx) * inv)}
		kernels.ExpF32(e, e)
		p := float64(e[0])
		cands[i] = cand{i, p}
		sum += p
	}
	if s.TopP <= 0 || s.TopP >= 1 {
		r := s.rng.Float64() * sum
		last := 0
		for _, c := range cands {
			if r -= c.p; r < 0 {
				return int32(c.id)
			}
			if c.p > 0 {
				last = c.id
			}
		}
		return int32(last)
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

// TestSamplerMatchesReference: Sample (radix order, reused buffers) draws
// the same ids as the comparison-sort sampler from the same seed, over
// vocabularies with distinct logits, repeated values, signed zeros and
// subnormals (distinct logits of equal probability), underflow to zero
// probability, NaN (the comparison fallback) and several temperatures and
// top-p cuts.
func TestSamplerMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func(n int) []float32{
		"normal": func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * 3)
			}
			return v
		},
		"repeated": func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.IntN(7)) * 0.5
			}
			return v
		},
		"zeros and subnormals": func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				switch rng.IntN(5) {
				case 0:
					v[i] = 0
				case 1:
					v[i] = float32(math.Copysign(0, -1))
				case 2:
					v[i] = math.Float32frombits(uint32(rng.IntN(1 << 20)))
				case 3:
					v[i] = -math.Float32frombits(uint32(rng.IntN(1 << 20)))
				default:
					v[i] = 20
				}
			}
			return v
		},
		"underflow": func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(-rng.Float64() * 3000)
			}
			v[rng.IntN(n)] = 5
			return v
		},
		"nan": func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			v[1+rng.IntN(n-1)] = float32(math.NaN())
			return v
		},
	}
	for name, gen := range gens {
		for _, n := range []int{2, 5, 300, 32768} {
			temps, topPs, draws := []float64{1, 0.7, 0.05}, []float64{1, 0.9, 0.3}, 8
			if n > 1000 {
				temps, topPs, draws = []float64{1}, []float64{1, 0.9}, 2 // the reference is slow
			}
			for _, temp := range temps {
				for _, topP := range topPs {
					seed := rng.Uint64()
					fast, ref := NewSampler(temp, topP, seed), NewSampler(temp, topP, seed)
					for i := 0; i < draws; i++ {
						logits := gen(n)
						if a, b := fast.Sample(logits), referenceSample(ref, logits); a != b {
							t.Fatalf("%s, n %d, temp %g, top-p %g, draw %d: sampled %d, reference %d", name, n, temp, topP, i, a, b)
						}
					}
				}
			}
		}
	}
}

// TestSamplerAllocs: a sampler reuses its buffers, so drawing from logits
// no larger than before allocates nothing.
func TestSamplerAllocs(t *testing.T) {
	logits := make([]float32, 32768)
	for i := range logits {
		logits[i] = float32(i%97) * 0.01
	}
	s := NewSampler(1, 0.95, 1)
	s.Sample(logits)
	if a := testing.AllocsPerRun(10, func() { s.Sample(logits) }); a != 0 {
		t.Fatalf("%v allocations per draw", a)
	}
}

func BenchmarkSample32k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 32768)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 2)
	}
	b.Run("all", func(b *testing.B) { // no top-p cut: id order
		s := NewSampler(1, 1, 1)
		for i := 0; i < b.N; i++ {
			s.Sample(logits)
		}
	})
	b.Run("all-pool", func(b *testing.B) { // as Generate draws: the probabilities on the pool
		s, pool := NewSampler(1, 1, 1), kernels.NewPool(0)
		defer pool.Close()
		for i := 0; i < b.N; i++ {
			s.sample(logits, pool)
		}
	})
	b.Run("top-p-0.9", func(b *testing.B) { // the radix order
		s := NewSampler(1, 0.9, 1)
		for i := 0; i < b.N; i++ {
			s.Sample(logits)
		}
	})
	b.Run("reference", func(b *testing.B) {
		s := NewSampler(1, 1, 1)
		for i := 0; i < b.N; i++ {
			referenceSample(s, logits)
		}
	})
}

// TestSamplePoolSameDraws: the probabilities computed on a pool's threads
// (as Generate computes them) give Sample's draws, at 1 to 3 threads.
func TestSamplePoolSameDraws(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	logits := make([]float32, 32768)
	for _, th := range []int{1, 2, 3} {
		pool := kernels.NewPool(th)
		for _, topP := range []float64{1, 0.9, 0.3} {
			a, b := NewSampler(0.8, topP, 5), NewSampler(0.8, topP, 5)
			for i := 0; i < 10; i++ {
				for j := range logits {
					logits[j] = float32(rng.NormFloat64() * 3)
				}
				if x, y := a.sample(logits, pool), b.Sample(logits); x != y {
					t.Fatalf("threads %d top-p %g draw %d: %d on the pool, %d by Sample", th, topP, i, x, y)
				}
			}
		}
		pool.Close()
	}
}

package engine

import (
	"math"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
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
	s.route(probs, logits, nil, ids, w)
	if ids[0] != 0 || ids[1] != 1 || ids[2] != 2 || ids[3] != 3 {
		t.Fatalf("plain routing picked %v", ids)
	}
	resident := func(e int) bool { return e >= 6 }
	s.Routing = Routing{CacheAware: true, Bonus: 10, Exact: 2}
	s.route(probs, logits, resident, ids, w)
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
	s.route(probs, logits, resident, ids, w)
	if ids[2] != 2 || ids[3] != 3 {
		t.Fatalf("bonus 0 picked %v", ids)
	}
}

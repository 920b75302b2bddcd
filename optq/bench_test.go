package optq

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkQuantizeExpertField times one expert at the field width
// (n_embd 2560, n_ff_exp 640) with 32 calibration tokens, the low-rank path
// bench pack's experts take.
func BenchmarkQuantizeExpertField(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	ex, in := expertFixture(rng, 2560, 640, 32, 4)
	opt := Defaults()
	b.ResetTimer()
	for b.Loop() {
		if _, err := QuantizeExpert(ex, in, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScoreGroup times one scoring pass of 32 candidates over a group.
func BenchmarkScoreGroup(b *testing.B) {
	w, id, band, s := scoreCase(rand.New(rand.NewPCG(1, 2)))
	bt := (*[group * group]float32)((&factors{cols: group, band: band}).bandByColumn())
	for b.Loop() {
		scoreGroup(w, id, bt, s)
	}
}

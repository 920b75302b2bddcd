package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRMSNorm2MatchesRMSNorm: the two-chain norm gives each row rmsNorm's
// bits (in place), over lengths 0..300 and values of every magnitude.
func TestRMSNorm2MatchesRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 300; n++ {
		x0, x1, w := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x0 {
			x0[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(11)-5)))
			x1[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(11)-5)))
			w[i] = float32(rng.NormFloat64())
		}
		want0, want1 := append([]float32(nil), x0...), append([]float32(nil), x1...)
		rmsNorm(want0, want0, w, 1e-6)
		rmsNorm(want1, want1, w, 1e-6)
		rmsNorm2(x0, x1, w, 1e-6)
		for i := range x0 {
			if math.Float32bits(x0[i]) != math.Float32bits(want0[i]) || math.Float32bits(x1[i]) != math.Float32bits(want1[i]) {
				t.Fatalf("n=%d: element %d is %g, %g; want %g, %g", n, i, x0[i], x1[i], want0[i], want1[i])
			}
		}
	}
}

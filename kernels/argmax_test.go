package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArgmaxSetsMatchPortable: every kernel set's Argmax is the portable
// loop's index over every length 0..4096, on unaligned slices followed by
// a larger value that must not be read, with ties (the first wins), -0
// beside +0, infinities and NaNs (one at index 0 answers 0).
func TestArgmaxSetsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negz := float32(math.Copysign(0, -1))
	buf := make([]float32, 4096+16)
	for n := 0; n <= 4096; n++ {
		for trial := 0; trial < 3; trial++ {
			off := rng.IntN(8)
			x := buf[off : off+n]
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			switch k := rng.IntN(8); {
			case n == 0:
			case k == 0: // ties of the maximum
				v := float32(10)
				for i := 0; i < 1+rng.IntN(4); i++ {
					x[rng.IntN(n)] = v
				}
			case k == 1: // all equal
				for i := range x {
					x[i] = 1.5
				}
			case k == 2: // zeros of both signs and below
				for i := range x {
					x[i] = -float32(rng.IntN(3))
					if x[i] == 0 && rng.IntN(2) == 0 {
						x[i] = negz
					}
				}
			case k == 3: // NaNs, one maybe first
				for i := 0; i < 1+rng.IntN(4); i++ {
					x[rng.IntN(n)] = nan
				}
				if rng.IntN(3) == 0 {
					x[0] = nan
				}
			case k == 4: // infinities
				x[rng.IntN(n)] = []float32{inf, -inf}[rng.IntN(2)]
				x[rng.IntN(n)] = -inf
			case k == 5: // every value -inf or NaN
				for i := range x {
					x[i] = []float32{-inf, nan}[rng.IntN(2)]
				}
			}
			// Past the end, values the slice must not see.
			for i := off + n; i < len(buf) && i < off+n+8; i++ {
				buf[i] = 1e30
			}
			want := portable.argmax(x)
			for _, s := range testSets() {
				if got := s.k.argmax(x); got != want {
					t.Fatalf("n=%d trial %d on %s: %d, want %d (x[got] %g, x[want] %g)", n, trial, s.name, got, want, x[got], x[want])
				}
			}
		}
	}
}

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttnMatchesLoops: AttnScores and AttnSum give the bits of the loops
// that define them (one DotF32, one Axpy per position, on the portable
// path) on every kernel set, over head sizes with and without a vector
// kernel, 0..70 positions, strides past the head, unaligned slices between
// guard bands, values of every magnitude (and zeros, infinities, NaN), and
// write nothing outside their outputs; and once more over finite values
// alone (a NaN or infinity among a head's values makes most of its scores
// NaN, which would hide an order).
func TestAttnMatchesLoops(t *testing.T) {
	for _, finite := range []bool{false, true} {
		testAttnMatchesLoops(t, finite)
	}
}

func testAttnMatchesLoops(t *testing.T, finite bool) {
	rng := rand.New(rand.NewPCG(91, 92))
	val := func() float32 {
		if finite {
			return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
		}
		switch rng.IntN(40) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return float32(math.Inf(1 - 2*rng.IntN(2)))
		case 3:
			return float32(math.NaN())
		}
		return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
	}
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = val()
		}
		return x
	}
	sets := testSets()
	for _, d := range []int{8, 32, 40, 64, 96, 128, 160, 256, 384} {
		for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 16, 33, 70} {
			stride := d + []int{0, 8, 3, d}[rng.IntN(4)]
			kv := make([]float32, 0)
			if n > 0 {
				kv = fill((n-1)*stride + d + rng.IntN(5))
			}
			q := fill(d)
			p := fill(n)
			o0 := fill(d)
			scale := float32(1 / math.Sqrt(float64(d)))
			want := make([]float32, n)
			for j := range want {
				want[j] = dotF32Generic(kv[j*stride:j*stride+d], q) * scale
			}
			wantO := append([]float32(nil), o0...)
			for j := range p {
				for i := range wantO {
					wantO[i] += float32(p[j] * kv[j*stride+i])
				}
			}
			for _, s := range sets {
				out, ok := guardedFloats(n, rng.IntN(4))
				s.k.attnScoresSlices(out, q, kv, stride, scale)
				for j := range want {
					if !sameFloat(out[j], want[j]) {
						t.Fatalf("%s d=%d n=%d stride=%d: score %d is %g, want %g", s.name, d, n, stride, j, out[j], want[j])
					}
				}
				if !ok() {
					t.Fatalf("%s d=%d n=%d: AttnScores wrote outside out", s.name, d, n)
				}
				o, ok := guardedFloats(d, rng.IntN(4))
				copy(o, o0)
				s.k.attnSumSlices(o, p, kv, stride)
				for i := range wantO {
					if !sameFloat(o[i], wantO[i]) {
						t.Fatalf("%s d=%d n=%d stride=%d: output %d is %g, want %g", s.name, d, n, stride, i, o[i], wantO[i])
					}
				}
				if !ok() {
					t.Fatalf("%s d=%d n=%d: AttnSum wrote outside o", s.name, d, n)
				}
			}
		}
	}
}

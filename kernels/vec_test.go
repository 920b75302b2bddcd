package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddToScaleMulSetsMatchPortable: every kernel set's AddTo and
// ScaleMul (into another slice and in place) give the portable loops' bits
// over every length 0..4096 on unaligned slices, with infinities, NaN,
// zeros, subnormals and overflowing products among the values, and write
// nothing past the output (a guard band of sentinels after it).
func TestAddToScaleMulSetsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 0,
		1e-40, -3e-45, 3e38, -3e38, 1, -1}
	const guard = 9
	fill := func(v []float32) {
		for i := range v {
			v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
			if rng.IntN(50) == 0 {
				v[i] = specials[rng.IntN(len(specials))]
			}
		}
	}
	sentinel := float32(-7.25)
	for n := 0; n <= 4096; n++ {
		off := rng.IntN(8)
		x, o, w := make([]float32, n+off+guard)[off:], make([]float32, n+off)[off:], make([]float32, n+off)[off:]
		fill(x[:n])
		fill(o)
		fill(w)
		s := float32(rng.NormFloat64())
		if rng.IntN(8) == 0 {
			s = specials[rng.IntN(len(specials))]
		}
		for i := n; i < len(x); i++ {
			x[i] = sentinel
		}
		wantAdd := append([]float32(nil), x...)
		portable.addTo(wantAdd[:n], o)
		wantMul := make([]float32, len(x))
		copy(wantMul[n:], x[n:])
		portable.scaleMul(wantMul[:n], x, w, s)
		for _, set := range testSets() {
			check := func(what string, got, want []float32) {
				for i := range want {
					if !sameFloat(got[i], want[i]) {
						t.Fatalf("n=%d on %s: %s[%d] = %g, want %g", n, set.name, what, i, got[i], want[i])
					}
				}
			}
			got := append([]float32(nil), x...)
			set.k.addTo(got[:n], o)
			check("AddTo", got, wantAdd)
			got = append([]float32(nil), x...)
			y := make([]float32, len(x))
			copy(y[n:], x[n:])
			set.k.scaleMul(y[:n], got, w, s)
			check("ScaleMul", y, wantMul)
			set.k.scaleMul(got[:n], got, w, s) // in place
			check("ScaleMul in place", got, wantMul)
		}
	}
}

// TestShiftScaleWidenSetsMatchPortable: every kernel set's ShiftScale and
// Widen give the portable loops' bits over every length 0..4096 on
// unaligned slices, with infinities, NaN, zeros, subnormals and results
// that overflow float32 or fall below its subnormals, and write nothing
// past the output.
func TestShiftScaleWidenSetsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 0,
		1e-40, -3e-45, 3e38, -3e38, 1, -1}
	const guard = 9
	sentinel := float32(-7.25)
	for n := 0; n <= 4096; n++ {
		off := rng.IntN(8)
		v := make([]float32, n+off)[off:]
		for i := range v {
			v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
			if rng.IntN(50) == 0 {
				v[i] = specials[rng.IntN(len(specials))]
			}
		}
		sub := []float64{0, 1.5, -3, rng.NormFloat64() * 10, 3e38}[rng.IntN(5)]
		mul := []float64{1, 1 / 0.7, 1e-40, 1e40, rng.Float64() * 3}[rng.IntN(5)]
		want := make([]float32, n+guard)
		for i := n; i < len(want); i++ {
			want[i] = sentinel
		}
		portable.shiftScale(want[:n], v, sub, mul)
		wantP := make([]float64, n+guard)
		for i := n; i < len(wantP); i++ {
			wantP[i] = float64(sentinel)
		}
		portable.widen(wantP[:n], v)
		for _, set := range testSets() {
			got := make([]float32, n+guard)
			for i := n; i < len(got); i++ {
				got[i] = sentinel
			}
			set.k.shiftScale(got[:n], v, sub, mul)
			for i := range want {
				if !sameFloat(got[i], want[i]) {
					t.Fatalf("n=%d on %s: ShiftScale[%d] of %g by %g, %g = %g, want %g", n, set.name, i, v[min(i, n-1)], sub, mul, got[i], want[i])
				}
			}
			gotP := make([]float64, n+guard)
			for i := n; i < len(gotP); i++ {
				gotP[i] = float64(sentinel)
			}
			set.k.widen(gotP[:n], v)
			for i := range wantP {
				if math.Float64bits(gotP[i]) != math.Float64bits(wantP[i]) && !(gotP[i] != gotP[i] && wantP[i] != wantP[i]) {
					t.Fatalf("n=%d on %s: Widen[%d] = %g, want %g", n, set.name, i, gotP[i], wantP[i])
				}
			}
		}
	}
}

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// swigluInputs are n gate values: ordinary ones, and now and then a
// special one (zeros, NaN, infinities, subnormals, the clamp's edges and
// past them, the largest finite values).
func swigluInputs(rng *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(1), -math.Float32frombits(1), 87, -87, 88, -88, 87.5, -88.5, 100, -100, 1e30, -1e30,
		math.MaxFloat32, -math.MaxFloat32, 1e-30, -1e-30}
	g := make([]float32, n)
	for i := range g {
		switch rng.IntN(16) {
		case 0:
			g[i] = special[rng.IntN(len(special))]
		case 1:
			g[i] = float32(rng.NormFloat64() * 40)
		default:
			g[i] = float32(rng.NormFloat64() * 3)
		}
	}
	return g
}

// swGuard is the guard band on each side of guarded's slice, and
// swGuardValue what it holds.
const (
	swGuard      = 16
	swGuardValue = -7.25
)

// guarded is a slice of n inside guard bands, and the buffer holding all.
func guarded(n int) (buf, s []float32) {
	buf = make([]float32, n+2*swGuard)
	for i := range buf {
		buf[i] = swGuardValue
	}
	return buf, buf[swGuard : swGuard+n]
}

// guardsKept reports whether guarded's bands around n values are intact.
func guardsKept(buf []float32, n int) bool {
	for i := 0; i < swGuard; i++ {
		if buf[i] != swGuardValue || buf[swGuard+n+i] != swGuardValue {
			return false
		}
	}
	return true
}

// TestSwiGLUPaths: every kernel set's SwiGLU gives the portable loop's
// bits, over lengths 0..4096 at every alignment of 8, and writes nothing
// past the end (guard bands on both sides of h).
func TestSwiGLUPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, set := range testSets() {
		for n := 0; n <= 4096; n += 1 + n/7 {
			g := swigluInputs(rng, n)
			u := swigluInputs(rng, n)
			want := append([]float32(nil), g...)
			swigluGo(want, u)
			buf, h := guarded(n)
			copy(h, g)
			set.k.swigluSlices(h, u)
			for i := range h {
				if math.Float32bits(h[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: n %d, element %d (g %g, u %g): %g, portable %g", set.name, n, i, g[i], u[i], h[i], want[i])
				}
			}
			if !guardsKept(buf, n) {
				t.Fatalf("%s: n %d wrote past h's ends", set.name, n)
			}
		}
	}
}

// TestSwiGLUAccuracy: SwiGLU against silu in float64 (the exact mode's
// e^t is a float64 exponential): within 4 float32 ulp of the exact value
// (and the quotient's rounding at the subnormal spacing, times u), NaN where the gate or
// the up value is NaN, and below the clamp (g < -88, where silu(g) is
// under 1e-36 |g|) at most |g u| 2^-126; and the exponential within 2 ulp
// of e^t over its range.
func TestSwiGLUAccuracy(t *testing.T) {
	for x := float32(siluLo); x <= siluHi; x += 1.0 / 1024 {
		got, want := float64(expSiLU(x)), math.Exp(float64(x))
		if ulp := want * 0x1p-23; math.Abs(got-want) > 2*ulp {
			t.Fatalf("e^%g: %g, exact %g (%.2f ulp)", x, got, want, math.Abs(got-want)/ulp)
		}
	}
	rng := rand.New(rand.NewPCG(13, 14))
	g, u := swigluInputs(rng, 1<<16), swigluInputs(rng, 1<<16)
	h := append([]float32(nil), g...)
	SwiGLU(h, u)
	for i := range h {
		gi, ui := float64(g[i]), float64(u[i])
		want := gi / (1 + math.Exp(-gi)) * ui
		if math.IsNaN(gi) || math.IsNaN(ui) {
			if !math.IsNaN(float64(h[i])) {
				t.Fatalf("g %g, u %g: %g, want NaN", gi, ui, h[i])
			}
			continue
		}
		if math.IsInf(want, 0) || math.IsNaN(want) || math.Abs(want) > math.MaxFloat32 {
			continue // the float32 result overflows or is undefined (inf * 0, inf / inf)
		}
		if gi < -siluHi {
			if a := math.Abs(float64(h[i])); a > math.Abs(gi*ui)*0x1p-126 {
				t.Fatalf("g %g, u %g: %g, want at most %g", gi, ui, h[i], math.Abs(gi*ui)*0x1p-126)
			}
			continue
		}
		// The quotient g/(1+e) rounds at the subnormal spacing too.
		tol := 4*math.Abs(want)*0x1p-23 + (math.Abs(ui)+1)*0x1p-149
		if d := math.Abs(float64(h[i]) - want); d > tol {
			t.Fatalf("g %g, u %g: %g, exact %g (off by %g, tolerance %g)", gi, ui, h[i], want, d, tol)
		}
	}
}

func BenchmarkSwiGLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	g, u := swigluInputs(rng, 5120), swigluInputs(rng, 5120)
	h := make([]float32, len(g))
	b.Run("kernel", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			copy(h, g)
			SwiGLU(h, u)
		}
	})
	b.Run("float64-exp", func(b *testing.B) { // the exact mode's loop
		for i := 0; i < b.N; i++ {
			copy(h, g)
			for j, v := range h {
				h[j] = v / (1 + float32(math.Exp(float64(-v)))) * u[j]
			}
		}
	})
}

// TestExpF32Paths: every kernel set's ExpF32 gives the portable loop's
// bits over lengths 0..4096, in place and into another slice with guard
// bands; the values are within 2 ulp of e^x in [-87, 88], 0 below, +Inf
// above, NaN for NaN.
func TestExpF32Paths(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, set := range testSets() {
		for n := 0; n <= 4096; n += 1 + n/7 {
			x := swigluInputs(rng, n)
			want := make([]float32, n)
			for i, v := range x {
				want[i] = expF32(v)
			}
			buf, dst := guarded(n)
			set.k.expSlices(dst, x)
			inPlace := append([]float32(nil), x...)
			set.k.expSlices(inPlace, inPlace)
			for i := range dst {
				if math.Float32bits(dst[i]) != math.Float32bits(want[i]) || math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: n %d, e^%g: %g (in place %g), portable %g", set.name, n, x[i], dst[i], inPlace[i], want[i])
				}
			}
			if !guardsKept(buf, n) {
				t.Fatalf("%s: n %d wrote past dst's ends", set.name, n)
			}
		}
	}
	for _, c := range []struct{ x, want float32 }{{0, 1}, {-87.5, 0}, {-1e30, 0}, {float32(math.Inf(-1)), 0},
		{88.5, float32(math.Inf(1))}, {float32(math.Inf(1)), float32(math.Inf(1))}} {
		if got := expF32(c.x); got != c.want {
			t.Errorf("e^%g: %g, want %g", c.x, got, c.want)
		}
	}
	if got := expF32(float32(math.NaN())); got == got {
		t.Errorf("e^NaN: %g", got)
	}
	for x := float32(siluLo); x <= siluHi; x += 1.0 / 1024 {
		got, want := float64(expF32(x)), math.Exp(float64(x))
		if ulp := want * 0x1p-23; math.Abs(got-want) > 2*ulp {
			t.Fatalf("e^%g: %g, exact %g (%.2f ulp)", x, got, want, math.Abs(got-want)/ulp)
		}
	}
}

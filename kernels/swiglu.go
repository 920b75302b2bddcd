package kernels

import "math"

// SwiGLU sets h[i] = silu(h[i]) * u[i] = h[i] / (1 + e^-h[i]) * u[i] for
// every i < len(h) (u at least as long), the gated activation of the fast
// mode's experts, with e^t a float32 exponential (expSiLU): within 2 ulp
// of e^t, where the exact mode's silu rounds a float64 exponential. The
// vector path (AVX2: 8 at a time, swiglu_amd64.s) runs the same float32
// operations in the same order, no fused multiply-add, so every path gives
// swigluGo's bits.
func SwiGLU(h, u []float32) { host.swigluSlices(h, u) }

func (k *kernelSet) swigluSlices(h, u []float32) {
	u = u[:len(h)]
	n := 0
	if k.swiglu != nil && len(h) >= 8 {
		n = len(h) &^ 7
		k.swiglu(&h[0], &u[0], n)
	}
	swigluGo(h[n:], u[n:])
}

func swigluGo(h, u []float32) {
	u = u[:len(h)]
	for i, g := range h {
		h[i] = float32(g/float32(1+expSiLU(-g))) * u[i]
	}
}

// expSiLU's constants: e^t is +Inf past siluHi (as a float64 exponential
// rounded to float32 is: silu(g) is then -0 for g < -88), and t is
// clamped to [siluLo, siluHi] (e^t normal and finite; silu's result is g
// at g >= 87 either way, and a NaN g stays NaN through the division and
// takes the clamp's bound), n = round(t log2 e),
// r = t - n ln 2 in two parts (ln2Hi's product with n exact), then e^r by
// a degree-7 polynomial (Cephes' expf coefficients) and 2^n by the
// exponent bits.
const (
	siluHi = 88.0
	siluLo = -87.0
	log2e  = 1.44269504088896341
	ln2Hi  = 0.693359375
	ln2Lo  = -2.12194440e-4
	expP0  = 1.9875691500e-4
	expP1  = 1.3981999507e-3
	expP2  = 8.3334519073e-3
	expP3  = 4.1665795894e-2
	expP4  = 1.6666665459e-1
	expP5  = 5.0000001201e-1
)

// expSiLU is e^t in float32 for SwiGLU.
func expSiLU(t float32) float32 {
	over := t > siluHi
	if !(t < siluHi) {
		t = siluHi
	}
	if !(t > siluLo) {
		t = siluLo
	}
	e := expCore(t)
	if over {
		e = float32(math.Inf(1))
	}
	return e
}

// ExpF32 sets dst[i] = e^x[i] in float32 (dst at least as long as x; it
// may be x): expSiLU's exponential, within 2 ulp, 0 below -87 and +Inf
// above 88 (where e^x is under 1.7e-38 or over 1.6e38), NaN for NaN. The
// vector path (AVX2, swiglu_amd64.s) gives the portable loop's bits.
func ExpF32(dst, x []float32) { host.expSlices(dst, x) }

func (k *kernelSet) expSlices(dst, x []float32) {
	dst = dst[:len(x)]
	n := 0
	if k.exp != nil && len(x) >= 8 {
		n = len(x) &^ 7
		k.exp(&dst[0], &x[0], n)
	}
	for i, v := range x[n:] {
		dst[n+i] = expF32(v)
	}
}

func expF32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > siluHi:
		return float32(math.Inf(1))
	case x < siluLo:
		return 0
	}
	return expCore(x)
}

// expCore is e^t for t in [siluLo, siluHi], each product rounded before
// the sum it feeds (the conversions forbid fusing).
func expCore(t float32) float32 {
	n := float32(math.RoundToEven(float64(float32(t * log2e))))
	r := t - float32(n*ln2Hi)
	r = r - float32(n*ln2Lo)
	z := float32(r * r)
	p := float32(expP0)
	p = float32(p*r) + expP1
	p = float32(p*r) + expP2
	p = float32(p*r) + expP3
	p = float32(p*r) + expP4
	p = float32(p*r) + expP5
	y := float32(float32(p*z)+r) + 1
	return float32(y * math.Float32frombits(uint32(int32(n)+127)<<23))
}

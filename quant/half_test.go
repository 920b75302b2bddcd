package quant

import (
	"math"
	"math/big"
	"testing"
)

// halfValue is the exact real value of a finite half bit pattern.
func halfValue(h uint16) *big.Float {
	exp := int(h>>10) & 0x1f
	mant := int64(h & 0x3ff)
	v := new(big.Float)
	if exp == 0 {
		v.SetMantExp(big.NewFloat(float64(mant)), -24)
	} else {
		v.SetMantExp(big.NewFloat(float64(mant|0x400)), exp-25)
	}
	if h&0x8000 != 0 {
		v.Neg(v)
	}
	return v
}

func TestFP16ToFloat32Exact(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := FP16ToFloat32(h)
		exp := (h >> 10) & 0x1f
		switch {
		case exp == 0x1f && h&0x3ff != 0:
			if !math.IsNaN(float64(f)) || math.Float32bits(f)>>31 != uint32(h>>15) {
				t.Fatalf("%#04x: want NaN with sign, got %v", h, f)
			}
		case exp == 0x1f:
			if !math.IsInf(float64(f), 0) || math.Signbit(float64(f)) != (h>>15 == 1) {
				t.Fatalf("%#04x: want inf, got %v", h, f)
			}
		default:
			if halfValue(h).Cmp(big.NewFloat(float64(f))) != 0 || math.Signbit(float64(f)) != (h>>15 == 1) {
				t.Fatalf("%#04x: got %v, want %v", h, f, halfValue(h))
			}
		}
	}
}

// nearestHalf finds the RNE half of f by comparing against all finite
// halves (an independent, slow definition).
func nearestHalf(f float32) uint16 {
	x := big.NewFloat(float64(f))
	ax := new(big.Float).Abs(x)
	sign := uint16(0)
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	// Overflow: at or beyond 65520 (the midpoint to the next binade) goes to inf.
	if ax.Cmp(big.NewFloat(65520)) >= 0 {
		return sign | 0x7c00
	}
	// Positive half patterns are ordered like their values: find the last
	// half at or below ax, then pick the nearer of it and the next one.
	lo, hi := uint16(0), uint16(0x7bff)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if halfValue(mid).Cmp(ax) <= 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	best := lo
	if lo < 0x7bff {
		dLo := new(big.Float).Sub(ax, halfValue(lo))
		dHi := new(big.Float).Sub(halfValue(lo+1), ax)
		if c := dHi.Cmp(dLo); c < 0 || (c == 0 && lo&1 == 1) {
			best = lo + 1
		}
	}
	return sign | best
}

func TestFloat32ToFP16(t *testing.T) {
	// Round trip of every half.
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if (h>>10)&0x1f == 0x1f && h&0x3ff != 0 {
			if got := Float32ToFP16(FP16ToFloat32(h)); got != h&0x8000|0x7e00 {
				t.Fatalf("NaN %#04x -> %#04x", h, got)
			}
			continue
		}
		if got := Float32ToFP16(FP16ToFloat32(h)); got != h {
			t.Fatalf("round trip %#04x -> %#04x", h, got)
		}
	}
	// A Go literal -0.0 is +0: build the negative zero from its sign.
	negZero := float32(math.Copysign(0, -1))
	if got := Float32ToFP16(negZero); got != 0x8000 {
		t.Fatalf("-0 -> %#04x, want 0x8000", got)
	}
	// Midpoints and neighbours of midpoints, against the exhaustive search on a
	// sample (the search is slow), plus specific edges.
	cases := []float32{65504, 65519.996, 65520, 1e10, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08,
		1.7881393e-07, 6.1035156e-05, 6.1033e-05, 1.0009765625, 1.00048828125, 1.00146484375, 0, negZero, 0.1, -3.14159}
	for i := 0; i < 1<<16; i += 97 {
		h := uint16(i) & 0x7fff
		if h >= 0x7bff {
			continue
		}
		lo, hi := FP16ToFloat32(h), FP16ToFloat32(h+1)
		mid := float32((float64(lo) + float64(hi)) / 2) // exact: one more bit than half
		cases = append(cases, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9), -mid)
	}
	for _, f := range cases {
		if got, want := Float32ToFP16(f), nearestHalf(f); got != want {
			t.Errorf("Float32ToFP16(%g) = %#04x, want %#04x", f, got, want)
		}
	}
	if got := Float32ToFP16(float32(math.NaN())); got&0x7fff != 0x7e00 {
		t.Errorf("NaN -> %#04x", got)
	}
	if got := Float32ToFP16(float32(math.Inf(-1))); got != 0xfc00 {
		t.Errorf("-inf -> %#04x", got)
	}
}

// BF16RoundingCases are float32 bit patterns and the BF16 that ggml's
// round-to-nearest-even conversion gives, shared with the Quantize test.
var BF16RoundingCases = []struct {
	In   uint32
	Want uint16
}{
	{0x3f808000, 0x3f80}, // tie, even stays
	{0x3f818000, 0x3f82}, // tie, odd rounds up
	{0x3f808001, 0x3f81},
	{0x7f7fffff, 0x7f80}, // rounds into inf
	{0xff7f8000, 0xff80},
	{0x7f800001, 0x7fc0}, // signalling NaN whose top bits are inf stays NaN
	{0xffffffff, 0xffff},
	{0x00000001, 0x0000}, // subnormals are rounded, not flushed
	{0x00008000, 0x0000},
	{0x00018000, 0x0002},
}

func TestBF16(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToFloat32(h)
		want := h
		if (h>>7)&0xff == 0xff && h&0x7f != 0 {
			want = h | 0x40
		}
		if got := Float32ToBF16(f); got != want {
			t.Fatalf("bf16 round trip %#04x -> %#04x", h, got)
		}
	}
	for _, c := range BF16RoundingCases {
		if got := Float32ToBF16(math.Float32frombits(c.In)); got != c.Want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", c.In, got, c.Want)
		}
	}
}

package quant

import "math"

// FP16ToFloat32 converts an IEEE binary16 bit pattern to float32. Every half
// value, subnormals included, is exactly representable. A NaN keeps its sign
// and payload and comes back quiet, as the F16C instruction (and ggml's
// portable conversion) give it.
func FP16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		// Zero or subnormal: mant * 2^-24 is exact in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f:
		if mant == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+(127-15))<<23 | mant<<13)
}

// Float32ToFP16 converts f to binary16, rounding to nearest with ties to
// even; values beyond the half range become infinities, and a NaN becomes
// the quiet NaN 0x7e00 with f's sign (ggml's portable conversion).
func Float32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// The result is a half subnormal (or rounds up to the smallest
		// normal, which the carry into bit 10 encodes by itself).
		if exp == 0 {
			return sign // float32 subnormals are far below half's range
		}
		shift := uint(14 - e) // significand (24 bits) to units of 2^-24
		if shift > 24 {
			return sign
		}
		m := mant | 0x800000
		return sign | uint16(roundShiftRNE(m, shift))
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry out of the mantissa bumps the exponent, up to inf
	}
	return sign | uint16(h)
}

// roundShiftRNE is m >> s rounded to nearest, ties to even (0 < s < 32).
func roundShiftRNE(m uint32, s uint) uint32 {
	q := m >> s
	rem := m & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return q
}

// BF16ToFloat32 widens a bfloat16 bit pattern (the upper half of a float32).
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 rounds f to bfloat16 to nearest with ties to even, as ggml's
// conversion does; a NaN is truncated and forced quiet so it cannot round
// into an infinity.
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

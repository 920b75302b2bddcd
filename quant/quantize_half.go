package quant

import "math"

// fp32ToFP16 rounds f to the nearest IEEE binary16 (ties to even), as
// ggml's software conversion does: overflow becomes infinity, values below
// half the smallest subnormal become zero, NaN becomes a quiet NaN that
// keeps the sign.
func fp32ToFP16(f float32) uint16 {
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
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	if e >= 1 {
		h := uint32(e)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++ // a carry into the exponent is the correctly rounded result, up to infinity
		}
		return sign | uint16(h)
	}
	// Subnormal result: the implicit bit joins the significand, which is
	// shifted right by 14-e bits and rounded.
	if exp == 0 || e < -10 {
		return sign // float32 subnormals and anything below 2^-25 round to zero
	}
	m := mant | 0x800000
	shift := uint(14 - e)
	h := m >> shift
	rest := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rest > half || (rest == half && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// fp16ToFP32 is the exact widening of an IEEE binary16.
func fp16ToFP32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	default:
		// subnormal: mant * 2^-24, exact in float32
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
}

// roundFP16 is f as the fp16 field of a block will hold it.
func roundFP16(f float32) float32 { return fp16ToFP32(fp32ToFP16(f)) }

// fp32ToBF16 is ggml's conversion: round to nearest even on the upper 16
// bits, NaN forced quiet. Subnormals are kept (rounded), not flushed.
func fp32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 64
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

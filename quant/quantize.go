package quant

import (
	"encoding/binary"
	"math"
)

func init() {
	quantizers[F32] = quantizeF32
	quantizers[F16] = quantizeF16
	quantizers[BF16] = quantizeBF16
	quantizers[Q8_0] = quantizeQ8_0
}

func quantizeF32(src []float32, dst []byte, _ *QuantizeOptions) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func quantizeF16(src []float32, dst []byte, _ *QuantizeOptions) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], Float32ToFP16(v))
	}
}

func quantizeBF16(src []float32, dst []byte, _ *QuantizeOptions) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], Float32ToBF16(v))
	}
}

// quantizeQ8_0 is ggml's reference: d = amax/127 stored as fp16, codes from
// the unrounded d, halves away from zero. Importance is ignored, as in ggml.
// A block holding NaN or Inf gets d = NaN/Inf as ggml would produce, with
// codes 0 for the elements that do not convert (ggml's behaviour there is
// undefined C).
func quantizeQ8_0(src []float32, dst []byte, _ *QuantizeOptions) {
	const qk = 32
	for b := 0; b < len(src)/qk; b++ {
		out := dst[b*34 : b*34+34]
		var codes [qk]int8
		binary.LittleEndian.PutUint16(out, Q8_0Block((*[qk]float32)(src[b*qk:]), &codes))
		for j, c := range codes {
			out[2+j] = byte(c)
		}
	}
}

// Q8_0Block quantizes one Q8_0 block of x by quantizeQ8_0's rule into
// codes and returns its scale as fp16 bits (kernels' activation quantizer
// writes the codes straight into its own layout through it).
func Q8_0Block(x *[32]float32, codes *[32]int8) uint16 {
	var amax float32
	for _, v := range x {
		a := float32(math.Abs(float64(v)))
		if a > amax || a != a {
			amax = a
		}
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	for j, v := range x {
		codes[j] = int8(roundHalfAway(v * id))
	}
	return Float32ToFP16(d)
}

// roundHalfAway is C's roundf(y) for y within the int8 range (-128.5,
// 127.5), and 0 for anything else (NaN included): the integer part (exact
// in float32), stepped away from zero when the exact fraction is at least
// one half. Equal to math.Round(float64(y)) there, without the float64
// bit manipulation (this runs on every activation of the fast dot path).
func roundHalfAway(y float32) int32 {
	if !(y < 127.5 && y > -128.5) {
		return 0
	}
	q := int32(y)
	f := y - float32(q)
	if f >= 0.5 {
		q++
	} else if f <= -0.5 {
		q--
	}
	return q
}

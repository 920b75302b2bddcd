package kernels

import (
	"encoding/binary"

	"github.com/stratactl/stratactl/quant"
)

// The K-quants' part of DotQ8 (qdot.go's order, its K-quant terms): the
// portable definition every vector path is tested against.

// isKQuant reports whether t is one of the K-quants DotQ8 takes.
func isKQuant(t quant.Type) bool {
	switch t {
	case quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K:
		return true
	}
	return false
}

// kHasMin reports whether t's weights carry a min (d*sc*q - dmin*m).
func kHasMin(t quant.Type) bool { return t == quant.Q2_K || t == quant.Q4_K || t == quant.Q5_K }

// kSubBlock is a K-quant sub-block of 32 weights as integers: weight j is
// d*sc[j/16]*q[j] - dmin*mn[j/16], exactly as quant's decoders form it
// (Q3_K and Q6_K have no min: mn is zero and dmin unused). Where the type
// has one scale per 32 weights (Q4_K, Q5_K), both halves hold it.
type kSubBlock struct {
	q       [32]int8
	sc, mn  [2]int32
	d, dmin float32
}

func fp16At(b []byte) float32 { return quant.FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

// kSub decodes sub-block s (0, 1, ...) of a row of K-quant type t into k.
func kSub(t quant.Type, row []byte, s int, k *kSubBlock) {
	sb := s % 8 // within the 256-weight block
	switch t {
	case quant.Q2_K:
		// scales[16] (low nibble scale, high nibble min per 16), qs[64], d, dmin.
		b := row[84*(s/8) : 84*(s/8)+84]
		qs := b[16+32*(sb/4) : 16+32*(sb/4)+32]
		for j := range k.q {
			k.q[j] = int8(qs[j] >> (2 * (sb % 4)) & 3)
		}
		for h := 0; h < 2; h++ {
			k.sc[h], k.mn[h] = int32(b[2*sb+h]&15), int32(b[2*sb+h]>>4)
		}
		k.d, k.dmin = fp16At(b[80:]), fp16At(b[82:])
	case quant.Q3_K:
		// hmask[32], qs[64], scales[12], d; the high bit (bit sb of hmask)
		// set means the code as it is, clear means 4 less.
		b := row[110*(s/8) : 110*(s/8)+110]
		qs := b[32+32*(sb/4) : 32+32*(sb/4)+32]
		for j := range k.q {
			v := int8(qs[j]>>(2*(sb%4))&3) - 4
			if b[j]>>sb&1 != 0 {
				v += 4
			}
			k.q[j] = v
		}
		for h := 0; h < 2; h++ {
			k.sc[h], k.mn[h] = int32(quant.Q3KScale(b[96:108], 2*sb+h)), 0
		}
		k.d, k.dmin = fp16At(b[108:]), 0
	case quant.Q4_K, quant.Q5_K:
		// d, dmin, scales[12], (Q5_K: qh[32],) qs[128]: sub-block sb is the
		// low (even) or high (odd) nibbles of qs[32*(sb/2):], plus 16 for
		// bit sb of qh.
		bs, qoff := 144, 16
		if t == quant.Q5_K {
			bs, qoff = 176, 48
		}
		b := row[bs*(s/8) : bs*(s/8)+bs]
		qs := b[qoff+32*(sb/2) : qoff+32*(sb/2)+32]
		for j := range k.q {
			v := qs[j] >> (4 * (sb % 2)) & 15
			if t == quant.Q5_K {
				v |= (b[16+j] >> sb & 1) << 4
			}
			k.q[j] = int8(v)
		}
		sc, m := quant.ScaleMinK4(sb, b[4:16])
		k.sc = [2]int32{int32(sc), int32(sc)}
		k.mn = [2]int32{int32(m), int32(m)}
		k.d, k.dmin = fp16At(b), fp16At(b[2:])
	case quant.Q6_K:
		// ql[128], qh[64], scales[16] (int8), d: in half h = sb/4, sub-block
		// sb%4 = i takes the low (i even) or high nibbles of ql[64h+32*(i%2):]
		// and bits 2i, 2i+1 of qh[32h:], minus 32.
		b := row[210*(s/8) : 210*(s/8)+210]
		h, i := sb/4, sb%4
		ql := b[64*h+32*(i%2) : 64*h+32*(i%2)+32]
		qh := b[128+32*h : 128+32*h+32]
		for j := range k.q {
			k.q[j] = int8(ql[j]>>(4*(i/2))&15|(qh[j]>>(2*i)&3)<<4) - 32
		}
		for hh := 0; hh < 2; hh++ {
			k.sc[hh], k.mn[hh] = int32(int8(b[192+2*sb+hh])), 0
		}
		k.d, k.dmin = fp16At(b[208:]), 0
	default:
		panic("kernels: no K-quant sub-blocks for " + t.String())
	}
}

// kSums are a K-quant sub-block's exact integer sums against activation
// sub-block s: a = sum sc[j/16]*q[j]*x[j], b = sum mn[j/16]*x[j].
func kSums(k *kSubBlock, x *Q8Row, s int) (a, b int32) {
	xs := x.qs[32*s : 32*s+32]
	for h := 0; h < 2; h++ {
		var qx, sx int32
		for j := 16 * h; j < 16*h+16; j++ {
			qx += int32(k.q[j]) * int32(xs[j])
			sx += int32(xs[j])
		}
		a += k.sc[h] * qx
		b += k.mn[h] * sx
	}
	return a, b
}

// kTerm is sub-block s's term (qdot.go): float32(a)*(d*dx) - float32(b)*(dmin*dx)
// for the types with a min, float32(a)*(d*dx) for the others, every product
// and the difference rounded to float32.
func kTerm(t quant.Type, k *kSubBlock, x *Q8Row, s int) float32 {
	a, b := kSums(k, x, s)
	dx := x.d[s]
	ta := float32(float32(a) * float32(k.d*dx))
	if !kHasMin(t) {
		return ta
	}
	tb := float32(float32(b) * float32(k.dmin*dx))
	return float32(ta - tb)
}

// kDotTail adds the terms of sub-blocks s0.. of a K-quant row to the lanes.
func kDotTail(t quant.Type, row []byte, x *Q8Row, s0 int, l *[8]float32) {
	var k kSubBlock
	for s := s0; s < len(x.d); s++ {
		kSub(t, row, s, &k)
		l[s%8] += kTerm(t, &k, x, s)
	}
}

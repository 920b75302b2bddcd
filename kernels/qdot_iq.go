package kernels

import (
	"encoding/binary"

	"github.com/stratactl/stratactl/quant"
)

// DotQ8 on IQ4_XS, IQ3_XXS, the IQ2 family and MXFP4 (qdot.go's order and
// terms): the integer weights are quant's codebook or grid values with their
// signs, and each sub-block's factor is the one quant's decoder multiplies
// by, so weight = factor * integer bit for bit.

// The grids and codebooks, quant's (copied once at start-up).
var (
	iq3xxsGrid  = quant.IQ3XXSGrid()
	iq2xxsGrid  = quant.IQ2XXSGrid()
	iq2xsGrid   = quant.IQ2XSGrid()
	iq2sGrid    = quant.IQ2SGrid()
	ksignsIQ2XS = quant.KsignsIQ2XS()
	mxfp4Values = quant.MXFP4Codebook()
	iq1sGrid    = quant.IQ1SGrid()
)

// isIQHalves reports whether t has a scale per 16-weight half of a sub-block
// (qdot.go's two-scale term).
func isIQHalves(t quant.Type) bool {
	return t == quant.IQ2_XS || t == quant.IQ2_S || t == quant.IQ1_M
}

// iq1Group8 writes the 8 integers 8*grid + (1 or -1, the sign of delta) of
// an IQ1 group: quant's dl*(grid + delta) is (dl*0.125) times them, exactly.
func iq1Group8(w []int8, g uint64, negDelta bool) {
	w = w[:8]
	e := int8(1)
	if negDelta {
		e = -1
	}
	for j := range w {
		w[j] = 8*int8(byte(g>>(8*j))) + e
	}
}

// signed8 writes the 8 grid bytes of g to w, negated where sgn has a bit.
func signed8(w []int8, g uint64, sgn uint8) {
	w = w[:8]
	for j := range w {
		v := int8(byte(g >> (8 * j)))
		if sgn>>j&1 != 0 {
			v = -v
		}
		w[j] = v
	}
}

// iqGroupBytes is the bytes of a group of 8 sub-blocks of t (IQ4_XS,
// IQ3_XXS, IQ2_XXS: one block of 256 weights; MXFP4: 8 blocks of 32).
func iqGroupBytes(t quant.Type) int {
	switch t {
	case quant.IQ4_XS, quant.MXFP4:
		return 136
	case quant.IQ3_XXS:
		return 98
	case quant.IQ2_XXS:
		return 66
	case quant.IQ2_XS:
		return 74
	case quant.IQ2_S:
		return 82
	case quant.IQ1_S:
		return 50
	case quant.IQ1_M:
		return 56
	}
	return 0
}

// iqGroupFactors writes the factors of the 8 sub-blocks of group blk of
// type t (iqGroupBytes), as quant's decoders compute them (IQ2_XS, IQ2_S:
// d*0.125, their halves' multipliers apart).
func iqGroupFactors(t quant.Type, blk []byte, f *[8]float32) {
	switch t {
	case quant.IQ4_XS:
		quant.IQ4XSFactors(blk, f)
	case quant.MXFP4:
		for j := range f {
			f[j] = quant.E8M0Half(blk[17*j])
		}
	case quant.IQ3_XXS:
		// The word after qs[64] holds the sub-block's scale in its top 4 bits.
		d := fp16At(blk)
		for j := range f {
			f[j] = d * (0.5 + float32(binary.LittleEndian.Uint32(blk[66+4*j:])>>28)) * 0.5
		}
	case quant.IQ2_XXS:
		d := fp16At(blk)
		for j := range f {
			f[j] = d * (0.5 + float32(binary.LittleEndian.Uint32(blk[6+8*j:])>>28)) * 0.25
		}
	case quant.IQ2_XS, quant.IQ2_S:
		for j := range f {
			f[j] = fp16At(blk) * 0.125
		}
	case quant.IQ1_S:
		// The sub-block's word after qs[32]: scale in bits 12..14.
		d := fp16At(blk)
		for j := range f {
			f[j] = d * float32(2*(binary.LittleEndian.Uint16(blk[34+2*j:])>>12&7)+1) * 0.125
		}
	case quant.IQ1_M:
		// d is the fp16 made of the top 4 bits of the 4 scale words.
		var h uint16
		for k := 0; k < 4; k++ {
			h |= binary.LittleEndian.Uint16(blk[48+2*k:]) >> 12 << (4 * k)
		}
		for j := range f {
			f[j] = quant.FP16ToFloat32(h) * 0.125
		}
	}
}

// iqWeightSub is weightSub for IQ4_XS, IQ3_XXS, IQ2_XXS and MXFP4: sub-block
// s's integer weights and factor (multiplier 1); false for another type.
func iqWeightSub(t quant.Type, row []byte, s int, w *[32]int8) (float32, bool) {
	gb := iqGroupBytes(t)
	if gb == 0 || isIQHalves(t) {
		return 0, false
	}
	ib := s % 8
	var f [8]float32
	if t == quant.MXFP4 {
		// Block of 32: E8M0 exponent, qs[16] (a row may end in a partial group).
		blk := row[17*s : 17*s+17]
		for j := 0; j < 16; j++ {
			w[j] = mxfp4Values[blk[1+j]&15]
			w[j+16] = mxfp4Values[blk[1+j]>>4]
		}
		return quant.E8M0Half(blk[0]), true
	}
	blk := row[gb*(s/8) : gb*(s/8)+gb]
	iqGroupFactors(t, blk, &f)
	switch t {
	case quant.IQ4_XS:
		// Block: fp16 d, scales_h (2 bytes), scales_l[4], qs[128].
		q := blk[8+16*ib : 24+16*ib]
		for j := 0; j < 16; j++ {
			w[j] = quant.KvaluesIQ4NL[q[j]&15]
			w[j+16] = quant.KvaluesIQ4NL[q[j]>>4]
		}
	case quant.IQ3_XXS:
		// Block: fp16 d, qs[64] (grid indices), 8 words of signs and scale.
		a := binary.LittleEndian.Uint32(blk[66+4*ib:])
		qs := blk[2+8*ib : 10+8*ib]
		for l := 0; l < 4; l++ {
			g := uint64(iq3xxsGrid[qs[2*l]]) | uint64(iq3xxsGrid[qs[2*l+1]])<<32
			signed8(w[8*l:], g, ksignsIQ2XS[a>>(7*l)&127])
		}
	case quant.IQ2_XXS:
		// Block: fp16 d, then per sub-block 4 grid indices and a word of
		// signs and scale.
		grp := blk[2+8*ib : 10+8*ib]
		a := binary.LittleEndian.Uint32(grp[4:])
		for l := 0; l < 4; l++ {
			signed8(w[8*l:], iq2xxsGrid[grp[l]], ksignsIQ2XS[a>>(7*l)&127])
		}
	case quant.IQ1_S:
		// Block: fp16 d, qs[32], 8 words of 3-bit index highs, scale, sign.
		a := binary.LittleEndian.Uint16(blk[34+2*ib:])
		for l := 0; l < 4; l++ {
			idx := int(blk[2+4*ib+l]) | int(a>>(3*l)&7)<<8
			iq1Group8(w[8*l:], iq1sGrid[idx], a&0x8000 != 0)
		}
	}
	return f[ib], true
}

// iqHalvesSub writes sub-block s of an IQ2_XS or IQ2_S row to w and returns
// the multipliers 2*sc_h+1 of its halves and the factor d/8.
func iqHalvesSub(t quant.Type, row []byte, s int, w *[32]int8) (m0, m1 int32, dw float32) {
	ib := s % 8
	switch t {
	case quant.IQ2_XS:
		// Block: fp16 d, 32 words of grid index (9 bits) and signs, scales[8].
		blk := row[74*(s/8) : 74*(s/8)+74]
		for l := 0; l < 4; l++ {
			v := binary.LittleEndian.Uint16(blk[2+2*(4*ib+l):])
			signed8(w[8*l:], iq2xsGrid[v&511], ksignsIQ2XS[v>>9])
		}
	case quant.IQ2_S:
		// Block: fp16 d, qs[32], signs[32], qh[8], scales[8].
		blk := row[82*(s/8) : 82*(s/8)+82]
		for l := 0; l < 4; l++ {
			idx := int(blk[2+4*ib+l]) | int(blk[66+ib]>>(2*l)&3)<<8
			signed8(w[8*l:], iq2sGrid[idx], blk[34+4*ib+l])
		}
	case quant.IQ1_M:
		// Block: qs[32], qh[16], 4 scale words (3-bit scale per 16
		// weights, d in the top bits); group g = 4*ib+l, half k = g/2.
		blk := row[56*(s/8) : 56*(s/8)+56]
		for l := 0; l < 4; l++ {
			g := 4*ib + l
			q := blk[32+g/2] >> (4 * (g % 2))
			idx := int(blk[g]) | int(q&7)<<8
			iq1Group8(w[8*l:], iq1sGrid[idx], q&8 != 0)
		}
	default:
		panic("kernels: no two-scale weights for " + t.String())
	}
	var f [8]float32
	gb := iqGroupBytes(t)
	blk := row[gb*(s/8) : gb*(s/8)+gb]
	iqGroupFactors(t, blk, &f)
	m0, m1 = iqHalvesScales(t, blk, ib)
	return m0, m1, f[ib]
}

// iqHalvesScales is the multipliers 2*sc+1 of the halves of sub-block ib of
// block blk of an IQ2_XS, IQ2_S or IQ1_M row.
func iqHalvesScales(t quant.Type, blk []byte, ib int) (m0, m1 int32) {
	var lo, hi byte
	switch t {
	case quant.IQ2_XS:
		lo, hi = blk[66+ib]&15, blk[66+ib]>>4
	case quant.IQ2_S:
		lo, hi = blk[74+ib]&15, blk[74+ib]>>4
	case quant.IQ1_M:
		// A 3-bit scale per half, two sub-blocks to a scale word.
		sw := binary.LittleEndian.Uint16(blk[48+2*(ib/2):])
		lo, hi = byte(sw>>(6*(ib%2))&7), byte(sw>>(6*(ib%2)+3)&7)
	default:
		panic("kernels: no two-scale weights for " + t.String())
	}
	return 2*int32(lo) + 1, 2*int32(hi) + 1
}

// iqHalvesDotTail is q8DotTail for IQ2_XS and IQ2_S.
func iqHalvesDotTail(t quant.Type, row []byte, x *Q8Row, s0 int, l *[8]float32) {
	var w [32]int8
	for s := s0; s < len(x.d); s++ {
		m0, m1, dw := iqHalvesSub(t, row, s, &w)
		xs := x.qs[32*s : 32*s+32]
		var lo, hi int32
		for j := 0; j < 16; j++ {
			lo += int32(w[j]) * int32(xs[j])
			hi += int32(w[16+j]) * int32(xs[16+j])
		}
		scale := float32(dw * x.d[s])
		l[s%8] += float32(float32(m0*lo+m1*hi) * scale)
	}
}

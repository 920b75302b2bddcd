//go:build amd64 && !noasm

package kernels

import "github.com/stratactl/stratactl/quant"

// The IQ4_XS and MXFP4 DotQ8 kernels take whole groups of 8 sub-blocks (136
// bytes of weights) and the groups' factors (qdot_iq_amd64.s); groups > 0.

//go:noescape
func q8dotIQ4XSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)

//go:noescape
func q8dotMXFP4AVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)

//go:noescape
func q8dotIQ2XXSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)

//go:noescape
func q8dotIQ3XXSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint32, signs *uint8)

// The IQ2_XXS and IQ3_XXS kernels in AVX-512 (qdot_iqxxs512_amd64.s): the
// grid entries gathered, the signs as masks, VPDPBUSD; the same lanes.

//go:noescape
func q8dotIQ2XXSAVX512(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64)

//go:noescape
func q8dotIQ3XXSAVX512(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint32)

//go:noescape
func q8dotIQ2XSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)

//go:noescape
func q8dotIQ2SAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)

//go:noescape
func q8dotIQ1SAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)

//go:noescape
func q8dotIQ1MAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)

// The factors of groups of IQ4_XS, IQ3_XXS and IQ2_XXS in vectors
// (iqGroupFactors' operations; AVX2, F16C), 8 per group at dw.
//
//go:noescape
func iqFactorsIQ4XS(w *byte, groups int, dw *float32)

//go:noescape
func iqFactorsIQ3XXS(w *byte, groups int, dw *float32)

//go:noescape
func iqFactorsIQ2XXS(w *byte, groups int, dw *float32)

// iqFactorsMXFP4 writes quant.E8M0Half of each MXFP4 block's exponent by
// integer operations (AVX2), 8 per group of 8 blocks.
//
//go:noescape
func iqFactorsMXFP4(w *byte, groups int, dw *float32)

// q8decodeIQ4XSAVX2 is the tiles' decoder for IQ4_XS (weights and
// multipliers; the wrapper adds the factors).
//
//go:noescape
func q8decodeIQ4XSAVX2(w *byte, blocks int, table *int8, out *int8, m *int16)

func q8decodeIQ4XSVector(row []byte, g0, ng int, d *q8Decoded, at int) {
	iqFactorsIQ4XS(&row[136*g0], ng, &d.dw[8*at])
	q8decodeIQ4XSAVX2(&row[136*g0], ng, &quant.KvaluesIQ4NL[0], &d.w[256*at], &d.m[8*at])
}

// q8decodeMXFP4AVX2 is the tiles' decoder for MXFP4 (groups of 8 blocks;
// the wrapper adds the factors).
//
//go:noescape
func q8decodeMXFP4AVX2(w *byte, groups int, table *int8, out *int8, m *int16)

func q8decodeMXFP4Vector(row []byte, g0, ng int, d *q8Decoded, at int) {
	_ = row[136*(g0+ng)-1]
	iqFactorsMXFP4(&row[136*g0], ng, &d.dw[8*at])
	q8decodeMXFP4AVX2(&row[136*g0], ng, &mxfp4Values[0], &d.w[256*at], &d.m[8*at])
}

// iqBatch is how many groups iqKernel takes per call (the factors of as
// many computed first, where the kernel does not make them itself).
const iqBatch = 16

// q8dotIQGroups runs t's kernel over the row's whole groups (8 sub-blocks,
// one block of 256 weights; 8 blocks for MXFP4), the factors computed here
// (by the AVX-512 kernels of IQ2_XS, IQ2_S, IQ1_S and IQ1_M themselves),
// then, for MXFP4 rows ending in a partial group, over a zero-padded copy of
// it when the activations are padded (as qdot_amd64.go's wrappers: a
// padded sub-block adds +0); it returns the lanes and the sub-blocks taken.
func q8dotIQGroups(t quant.Type, wide bool, row []byte, x *Q8Row) (l [8]float32, taken int) {
	nsub := len(x.d)
	groups := nsub / 8
	gb := iqGroupBytes(t)
	for g0 := 0; g0 < groups; g0 += iqBatch {
		ng := min(iqBatch, groups-g0)
		iqKernel(t, wide, row[gb*g0:], x, 8*g0, ng, &l)
	}
	s0 := 8 * groups
	if t != quant.MXFP4 || s0 == nsub || !x.padded(s0) {
		return l, s0
	}
	var pad [136]byte
	copy(pad[:], row[17*s0:17*nsub])
	iqKernel(t, wide, pad[:], x, s0, 1, &l)
	return l, nsub
}

// iqKernel runs t's kernel over ng <= iqBatch groups of w against the
// activations from sub-block s0.
func iqKernel(t quant.Type, wide bool, w []byte, x *Q8Row, s0, ng int, l *[8]float32) {
	if wide && iqLowDot(t, w, x, s0, ng, l) {
		return
	}
	// A short row's one or two groups take a small array: clearing a
	// whole batch's cost as much as their factors.
	if ng <= 2 {
		var dw [16]float32
		iqFactorsKernel(t, wide, w, x, s0, ng, l, dw[:8*ng])
		return
	}
	var dw [8 * iqBatch]float32
	iqFactorsKernel(t, wide, w, x, s0, ng, l, dw[:8*ng])
}

// iqFactorsKernel is iqKernel with room for the ng groups' factors; wide
// selects the AVX-512 kernels where t has one (IQ3_XXS, IQ2_XXS; IQ2_XS,
// IQ2_S, IQ1_S and IQ1_M take no factors: iqKernel runs them).
func iqFactorsKernel(t quant.Type, wide bool, w []byte, x *Q8Row, s0, ng int, l *[8]float32, dw []float32) {
	gb := iqGroupBytes(t)
	_ = w[gb*ng-1]
	switch t {
	case quant.IQ4_XS:
		iqFactorsIQ4XS(&w[0], ng, &dw[0])
	case quant.IQ3_XXS:
		iqFactorsIQ3XXS(&w[0], ng, &dw[0])
	case quant.IQ2_XXS:
		iqFactorsIQ2XXS(&w[0], ng, &dw[0])
	case quant.MXFP4:
		iqFactorsMXFP4(&w[0], ng, &dw[0])
	default:
		for g := 0; g < ng; g++ {
			iqGroupFactors(t, w[gb*g:gb*(g+1)], (*[8]float32)(dw[8*g:]))
		}
	}
	wp, xq, xd := &w[0], &x.qs[32*s0], &x.d[s0]
	switch t {
	case quant.IQ4_XS:
		q8dotIQ4XSAVX2(wp, xq, xd, &dw[0], ng, l, &quant.KvaluesIQ4NL[0])
	case quant.MXFP4:
		q8dotMXFP4AVX2(wp, xq, xd, &dw[0], ng, l, &mxfp4Values[0])
	case quant.IQ2_XXS:
		if wide {
			q8dotIQ2XXSAVX512(wp, xq, xd, &dw[0], ng, l, &iq2xxsGrid[0])
		} else {
			q8dotIQ2XXSAVX2(wp, xq, xd, &dw[0], ng, l, &iq2xxsGrid[0], &ksignsIQ2XS[0])
		}
	case quant.IQ3_XXS:
		if wide {
			q8dotIQ3XXSAVX512(wp, xq, xd, &dw[0], ng, l, &iq3xxsGrid[0])
		} else {
			q8dotIQ3XXSAVX2(wp, xq, xd, &dw[0], ng, l, &iq3xxsGrid[0], &ksignsIQ2XS[0])
		}
	case quant.IQ2_XS:
		q8dotIQ2XSAVX2(wp, xq, xd, &dw[0], ng, l, &iq2xsGrid[0], &ksignsIQ2XS[0])
	case quant.IQ2_S:
		q8dotIQ2SAVX2(wp, xq, xd, &dw[0], ng, l, &iq2sGrid[0], &ksignsIQ2XS[0])
	case quant.IQ1_S:
		q8dotIQ1SAVX2(wp, xq, xd, &dw[0], ng, l, &iq1sGrid[0], &ksignsIQ2XS[0])
	case quant.IQ1_M:
		q8dotIQ1MAVX2(wp, xq, xd, &dw[0], ng, l, &iq1sGrid[0], &ksignsIQ2XS[0])
	}
}

// iqVectorTypes are the types q8dotIQGroups runs.
var iqVectorTypes = []quant.Type{quant.IQ4_XS, quant.MXFP4, quant.IQ2_XXS, quant.IQ3_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S, quant.IQ1_M}

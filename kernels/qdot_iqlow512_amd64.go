//go:build amd64 && !noasm

package kernels

import "github.com/stratactl/stratactl/quant"

// The IQ2_XS, IQ2_S, IQ1_S and IQ1_M tile decoders in AVX-512
// (qdot_iqlow512_amd64.s): the grid entries gathered, the signs or deltas
// applied in vectors; the multipliers and factors here, once per group, as
// iqHalvesSub and iqWeightSub make them, so a group decodes to halvesSub's
// and decodeGroupsPortable's weights, multipliers and scales.

//go:noescape
func q8decodeIQ2XSAVX512(w *byte, blocks int, grid *uint64, out *int8)

//go:noescape
func q8decodeIQ2SAVX512(w *byte, blocks int, grid *uint64, out *int8)

//go:noescape
func q8decodeIQ1SAVX512(w *byte, blocks int, grid *uint64, out *int8)

//go:noescape
func q8decodeIQ1MAVX512(w *byte, blocks int, grid *uint64, out *int8)

// iqHalvesDecoder is a kernelSet.q8decodeHalves entry for t (IQ2_XS,
// IQ2_S, IQ1_M) by its AVX-512 decoder dec.
func iqHalvesDecoder(t quant.Type, dec func(w *byte, blocks int, grid *uint64, out *int8)) func(row []byte, g0, ng int, d *q8Decoded) {
	gb := iqGroupBytes(t)
	grid := &iq2xsGrid[0]
	switch t {
	case quant.IQ2_S:
		grid = &iq2sGrid[0]
	case quant.IQ1_M:
		grid = &iq1sGrid[0]
	}
	return func(row []byte, g0, ng int, d *q8Decoded) {
		if ng < 1 {
			return
		}
		blk := row[gb*g0 : gb*(g0+ng)]
		_ = d.w[256*ng-1]
		dec(&blk[0], ng, grid, &d.w[0])
		for g := 0; g < ng; g++ {
			b := blk[gb*g : gb*(g+1)]
			var f [8]float32
			iqGroupFactors(t, b, &f)
			copy(d.dw[8*g:8*g+8], f[:])
			for ib := 0; ib < 8; ib++ {
				m0, m1 := iqHalvesScales(t, b, ib)
				d.mh[16*g+2*ib], d.mh[16*g+2*ib+1] = int16(m0), int16(m1)
			}
		}
	}
}

// q8decodeIQ1SVector512 is the q8decode entry for IQ1_S.
func q8decodeIQ1SVector512(row []byte, g0, ng int, d *q8Decoded, at int) {
	if ng < 1 {
		return
	}
	blk := row[50*g0 : 50*(g0+ng)]
	_ = d.w[256*(at+ng)-1]
	q8decodeIQ1SAVX512(&blk[0], ng, &iq1sGrid[0], &d.w[256*at])
	for g := 0; g < ng; g++ {
		iqGroupFactors(quant.IQ1_S, blk[50*g:50*(g+1)], (*[8]float32)(d.dw[8*(at+g):]))
		for j := 8 * (at + g); j < 8*(at+g+1); j++ {
			d.m[j] = 1
		}
	}
}

// The DotQ8 kernels of the same types in AVX-512 (qdot_iqlow512_amd64.s):
// q8dotIQGroups' lanes over whole groups, each group's factors made in the
// kernel as iqGroupFactors makes them.

//go:noescape
func q8dotIQ2XSAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64)

//go:noescape
func q8dotIQ2SAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64)

//go:noescape
func q8dotIQ1SAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64, sums *int32)

//go:noescape
func q8dotIQ1MAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64)

// iqLowDot runs t's AVX-512 DotQ8 kernel over ng groups of w against the
// activations from sub-block s0 (called directly, not through a func
// value, so that l does not escape) and reports whether t has one.
func iqLowDot(t quant.Type, w []byte, x *Q8Row, s0, ng int, l *[8]float32) bool {
	switch t {
	case quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S, quant.IQ1_M:
	default:
		return false
	}
	_ = w[iqGroupBytes(t)*ng-1]
	_ = x.qs[32*(s0+8*ng)-1]
	_ = x.d[s0+8*ng-1]
	wp, xq, xd := &w[0], &x.qs[32*s0], &x.d[s0]
	switch t {
	case quant.IQ2_XS:
		q8dotIQ2XSAVX512(wp, xq, xd, ng, l, &iq2xsGrid[0])
	case quant.IQ2_S:
		q8dotIQ2SAVX512(wp, xq, xd, ng, l, &iq2sGrid[0])
	case quant.IQ1_S:
		_ = x.sums[s0+8*ng-1]
		q8dotIQ1SAVX512(wp, xq, xd, ng, l, &iq1sGrid[0], &x.sums[s0])
	case quant.IQ1_M:
		q8dotIQ1MAVX512(wp, xq, xd, ng, l, &iq1sGrid[0])
	}
	return true
}

// The rows kernels (qdot_iqlow512_amd64.s): rows whole rows of groups
// groups, stride bytes apart, against one input, each row's lanes from +0
// over its groups as the DotQ8 kernel takes them and folded as foldLanes
// into out.

//go:noescape
func q8rowsIQ2XSAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32)

//go:noescape
func q8rowsIQ2SAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32)

//go:noescape
func q8rowsIQ1SAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32, sums *int32)

//go:noescape
func q8rowsIQ1MAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32)

// iqLowRows is a kernelSet.q8rows entry for IQ2_XS, IQ2_S, IQ1_S and IQ1_M
// on AVX-512: rows [lo, hi) in one call of the type's rows kernel (DotQ8's
// lanes and fold, row by row), without DotQ8's per-row lookups; false
// where x does not fit m's rows.
func iqLowRows(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	t := m.Type
	ng := len(x.d) / 8
	if lo >= hi || ng == 0 || 8*ng != len(x.d) || m.RowBytes != iqGroupBytes(t)*ng {
		return false
	}
	_, _ = m.Data[hi*m.RowBytes-1], out[hi-1]
	_, _ = x.qs[32*8*ng-1], x.sums[8*ng-1]
	w, xq, xd, o := &m.Data[lo*m.RowBytes], &x.qs[0], &x.d[0], &out[lo]
	switch t {
	case quant.IQ2_XS:
		q8rowsIQ2XSAVX512(w, m.RowBytes, hi-lo, xq, xd, ng, &iq2xsGrid[0], o)
	case quant.IQ2_S:
		q8rowsIQ2SAVX512(w, m.RowBytes, hi-lo, xq, xd, ng, &iq2sGrid[0], o)
	case quant.IQ1_S:
		q8rowsIQ1SAVX512(w, m.RowBytes, hi-lo, xq, xd, ng, &iq1sGrid[0], o, &x.sums[0])
	case quant.IQ1_M:
		q8rowsIQ1MAVX512(w, m.RowBytes, hi-lo, xq, xd, ng, &iq1sGrid[0], o)
	default:
		return false
	}
	return true
}

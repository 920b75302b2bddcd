//go:build amd64 && !noasm

package kernels

import (
	"unsafe"

	"github.com/stratactl/stratactl/quant"
)

//go:noescape
func q8dotTile2AVX2(d *q8Decoded, rows, groups, half int, xq0 *int8, xd0 *float32, xq1 *int8, xd1 *float32, l0, l1 *[8]float32, o0, o1 *float32)

//go:noescape
func q8dotTile2HAVX2(d *q8Decoded, rows, groups int, xq0 *int8, xd0 *float32, xq1 *int8, xd1 *float32, l0, l1 *[8]float32, o0, o1 *float32)

// q8Decoded's layout as the tile kernels read it: the weights, then the
// multipliers at 2048, the scales at 2176 and the halves' multipliers at
// 2432, 2688 bytes in all (a compile-time check: the array lengths are
// negative otherwise).
var (
	_ [2688 - unsafe.Sizeof(q8Decoded{})]struct{}
	_ [unsafe.Sizeof(q8Decoded{}) - 2688]struct{}
	_ [2048 - unsafe.Offsetof(q8Decoded{}.m)]struct{}
	_ [unsafe.Offsetof(q8Decoded{}.m) - 2048]struct{}
	_ [2176 - unsafe.Offsetof(q8Decoded{}.dw)]struct{}
	_ [unsafe.Offsetof(q8Decoded{}.dw) - 2176]struct{}
	_ [2432 - unsafe.Offsetof(q8Decoded{}.mh)]struct{}
	_ [unsafe.Offsetof(q8Decoded{}.mh) - 2432]struct{}
)

// q8dotTile2HVector is the halves types' tile kernel on AVX2.
func q8dotTile2HVector(d *[qmmRows]q8Decoded, nr, ng int, x0, x1 *Q8Row, g0 int, l0, l1 [][8]float32, o0, o1 []float32) {
	if nr < 1 || ng < 1 {
		return
	}
	_, _ = l0[nr-1], l1[nr-1]
	var p0, p1 *float32
	if o0 != nil {
		_, _ = o0[nr-1], o1[nr-1]
		p0, p1 = &o0[0], &o1[0]
	}
	q8dotTile2HAVX2(&d[0], nr, ng, &x0.qs[256*g0], &x0.d[8*g0], &x1.qs[256*g0], &x1.d[8*g0], &l0[0], &l1[0], p0, p1)
}

// q8dotTile2Vector is tileDot2 on AVX2 (qmm_amd64.s).
func q8dotTile2Vector(d *[qmmRows]q8Decoded, nr, whole, half int, x0, x1 *Q8Row, g0 int, l0, l1 [][8]float32, o0, o1 []float32) {
	if nr < 1 || whole+half < 1 {
		return
	}
	_, _ = l0[nr-1], l1[nr-1]
	var p0, p1 *float32
	if o0 != nil {
		_, _ = o0[nr-1], o1[nr-1]
		p0, p1 = &o0[0], &o1[0]
	}
	q8dotTile2AVX2(&d[0], nr, whole, half, &x0.qs[256*g0], &x0.d[8*g0], &x1.qs[256*g0], &x1.d[8*g0], &l0[0], &l1[0], p0, p1)
}

//go:noescape
func q8quantAVX2(x *float32, nb int, qs *int8, d *float32, sums *int32, q2 *int8) bool

//go:noescape
func roundFP16F16C(d *float32, n int)

// q8quantVector is QuantizeQ8Row's loop on AVX2 and F16C (quant8_amd64.s):
// codes, sums and the codes' plane order in one pass, then the scales
// through fp16 (the padding's zeros stay zero); false when the row holds a
// NaN (the portable loop takes it).
func q8quantVector(x []float32, r *Q8Row) bool {
	nb := len(x) / 32
	if nb == 0 {
		return true
	}
	pb := (nb + 7) / 8 * 8
	q2 := r.q2[:32*pb]
	if nb%8 != 0 {
		clear(q2[256*(nb/8):]) // the padding's planes, between the codes'
	}
	if q8quantAVX2(&x[0], nb, &r.qs[0], &r.d[0], &r.sums[0], &q2[0]) {
		return false
	}
	roundFP16F16C(&r.d[:pb][0], pb)
	return true
}

//go:noescape
func qmmDecodeQ8_0AVX(w *byte, groups int, out *int8, m *int16, dw *float32)

//go:noescape
func qmmDecodeQ2_0AVX(w *byte, groups int, out *int8, m *int16, dw *float32)

// q8decodeQ8_0Vector and q8decodeQ2_0Vector decode whole groups for the
// tiles (qmm_decode_amd64.s).
func q8decodeQ8_0Vector(row []byte, g0, ng int, d *q8Decoded, at int) {
	qmmDecodeQ8_0AVX(&row[272*g0], ng, &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

func q8decodeQ2_0Vector(row []byte, g0, ng int, d *q8Decoded, at int) {
	qmmDecodeQ2_0AVX(&row[72*g0], ng, &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

//go:noescape
func qmmDecodeNibAVX(w *byte, groups int, table *int8, out *int8, m *int16, dw *float32)

// q8decodeQ4_0Vector and q8decodeIQ4NLVector decode whole groups of the
// nibble types for the tiles (qmm_decode_amd64.s).
func q8decodeQ4_0Vector(row []byte, g0, ng int, d *q8Decoded, at int) {
	qmmDecodeNibAVX(&row[144*g0], ng, &q4_0Values[0], &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

func q8decodeIQ4NLVector(row []byte, g0, ng int, d *q8Decoded, at int) {
	qmmDecodeNibAVX(&row[144*g0], ng, &quant.KvaluesIQ4NL[0], &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

//go:noescape
func qmmDecodeQ6KAVX2(w *byte, groups int, out *int8, mh *int16, dw *float32)

// q8decodeQ6KHalves decodes whole groups of a Q6_K row for the halves tiles
// (qmm_decode_amd64.s): codes, the 16 scales per block as multipliers, d.
func q8decodeQ6KHalves(row []byte, g0, ng int, d *q8Decoded) {
	qmmDecodeQ6KAVX2(&row[210*g0], ng, &d.w[0], &d.mh[0], &d.dw[0])
}

//go:noescape
func qmmPlanesAVX512(src, dst *int8, groups int, bias uint32)

// tilePlanesVector writes src's groups of 256 codes to dst in plane order
// (qmm_amd64.s), each byte XOR bias.
func tilePlanesVector(dst, src []int8, bias byte) {
	groups := len(src) / 256
	if groups == 0 {
		return
	}
	_ = dst[256*groups-1]
	qmmPlanesAVX512(&src[0], &dst[0], groups, uint32(bias)*0x01010101)
}

//go:noescape
func q8dotTilePlanesVNNI(d *q8Decoded, rows, groups int, xq0 *int8, xd0 *float32, xs0 *int32, xq1 *int8, xd1 *float32, xs1 *int32, l0, l1 *[8]float32, o0, o1 *float32, mul, first int)

// q8dotTilePlanesVector is q8dotTilePlanes on AVX-512 VNNI (qmm_amd64.s).
func q8dotTilePlanesVector(d *[qmmRows]q8Decoded, nr, ng int, x0, x1 planeInput, g0 int, mul bool, l0, l1 [][8]float32, o0, o1 []float32) {
	if nr < 1 || ng < 1 {
		return
	}
	_, _ = l0[nr-1], l1[nr-1]
	_, _, _ = x0.q[256*ng-1], x0.s[8*ng-1], x0.x.d[:8*(g0+ng)][8*(g0+ng)-1]
	_, _, _ = x1.q[256*ng-1], x1.s[8*ng-1], x1.x.d[:8*(g0+ng)][8*(g0+ng)-1]
	var q0, q1 *float32
	if o0 != nil {
		_, _ = o0[nr-1], o1[nr-1]
		q0, q1 = &o0[0], &o1[0]
	}
	var m, first int
	if mul {
		m = 1
	}
	if g0 == 0 {
		first = 1
	}
	q8dotTilePlanesVNNI(&d[0], nr, ng, &x0.q[0], &x0.x.d[8*g0], &x0.s[0], &x1.q[0], &x1.x.d[8*g0], &x1.s[0], &l0[0], &l1[0], q0, q1, m, first)
}

//go:noescape
func qmmDecodeNibPlanesAVX512(w *byte, groups int, table *int8, out *int8, m *int16, dw *float32)

// q8decodeQ4_0Planes and q8decodeIQ4NLPlanes decode whole groups of the
// nibble types straight to the plane tiles' layout (qmm_amd64.s).
func q8decodeQ4_0Planes(row []byte, g0, ng int, d *q8Decoded, at int) {
	_ = row[144*(g0+ng)-1]
	qmmDecodeNibPlanesAVX512(&row[144*g0], ng, &q4_0Values[0], &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

func q8decodeIQ4NLPlanes(row []byte, g0, ng int, d *q8Decoded, at int) {
	_ = row[144*(g0+ng)-1]
	qmmDecodeNibPlanesAVX512(&row[144*g0], ng, &quant.KvaluesIQ4NL[0], &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

//go:noescape
func qmmDecodeMXFP4PlanesAVX512(w *byte, groups int, table *int8, out *int8, m *int16, dw *float32)

// q8decodeMXFP4Planes decodes whole groups of MXFP4 straight to the plane
// tiles' layout, the factors by integer operations (qmm_amd64.s).
func q8decodeMXFP4Planes(row []byte, g0, ng int, d *q8Decoded, at int) {
	_ = row[136*(g0+ng)-1]
	qmmDecodeMXFP4PlanesAVX512(&row[136*g0], ng, &mxfp4Values[0], &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

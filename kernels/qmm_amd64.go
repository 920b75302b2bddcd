//go:build amd64 && !noasm

package kernels

import "github.com/stratactl/stratactl/quant"

//go:noescape
func q8dotDecoded2AVX2(w *int8, m *int16, dw *float32, xq0 *int8, xd0 *float32, xq1 *int8, xd1 *float32, groups int, l0, l1 *[8]float32)

// q8dotDecoded2Vector is tileDot2 on AVX2 (qmm_amd64.s).
func q8dotDecoded2Vector(d *q8Decoded, ng int, x0, x1 *Q8Row, g0 int, l0, l1 *[8]float32) {
	q8dotDecoded2AVX2(&d.w[0], &d.m[0], &d.dw[0], &x0.qs[256*g0], &x0.d[8*g0], &x1.qs[256*g0], &x1.d[8*g0], ng, l0, l1)
}

//go:noescape
func q8quantAVX2(x *float32, nb int, qs *int8, d *float32, sums *int32) bool

// q8quantVector is QuantizeQ8Row's loop on AVX2 (quant8_amd64.s); false
// when the row holds a NaN (the portable loop takes it).
func q8quantVector(x []float32, r *Q8Row) bool {
	nb := len(x) / 32
	if nb == 0 {
		return true
	}
	if q8quantAVX2(&x[0], nb, &r.qs[0], &r.d[0], &r.sums[0]) {
		return false
	}
	for b, d := range r.d {
		r.d[b] = quant.FP16ToFloat32(quant.Float32ToFP16(d))
	}
	return true
}

//go:noescape
func qmmDecodeQ8_0AVX(w *byte, groups int, out *int8, m *int16, dw *float32)

//go:noescape
func qmmDecodeQ2_0AVX(w *byte, groups int, out *int8, m *int16, dw *float32)

// q8decodeQ8_0Vector and q8decodeQ2_0Vector decode whole groups for the
// tiles (qmm_decode_amd64.s).
func q8decodeQ8_0Vector(row []byte, g0, ng int, d *q8Decoded) {
	qmmDecodeQ8_0AVX(&row[272*g0], ng, &d.w[0], &d.m[0], &d.dw[0])
}

func q8decodeQ2_0Vector(row []byte, g0, ng int, d *q8Decoded) {
	qmmDecodeQ2_0AVX(&row[72*g0], ng, &d.w[0], &d.m[0], &d.dw[0])
}

//go:build amd64 && !noasm

package kernels

//go:noescape
func q8dotDecoded2AVX2(w *int8, m *int16, dw *float32, xq0 *int8, xd0 *float32, xq1 *int8, xd1 *float32, groups int, l0, l1 *[8]float32)

// q8dotDecoded2Vector is tileDot2 on AVX2 (qmm_amd64.s).
func q8dotDecoded2Vector(d *q8Decoded, ng int, x0, x1 *Q8Row, g0 int, l0, l1 *[8]float32) {
	q8dotDecoded2AVX2(&d.w[0], &d.m[0], &d.dw[0], &x0.qs[256*g0], &x0.d[8*g0], &x1.qs[256*g0], &x1.d[8*g0], ng, l0, l1)
}

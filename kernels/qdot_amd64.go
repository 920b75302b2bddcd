//go:build amd64 && !noasm

package kernels

import "github.com/stratactl/stratactl/quant"

// The DotQ8 kernels take whole groups of 8 sub-blocks (qdot_amd64.s).

//go:noescape
func q8dotQ8_0AVX2(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32)

//go:noescape
func q8dotNib32AVX2(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32, table *int8)

//go:noescape
func q8dotQ2_0AVX2(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32)

func q8dotQ8_0Vector(row []byte, x *Q8Row, l *[8]float32) int {
	g := len(x.d) / 8
	if g > 0 {
		q8dotQ8_0AVX2(&row[0], &x.qs[0], &x.d[0], &x.sums[0], g, l)
	}
	return 8 * g
}

func q8dotNib32Vector(table *[16]int8) func(row []byte, x *Q8Row, l *[8]float32) int {
	return func(row []byte, x *Q8Row, l *[8]float32) int {
		g := len(x.d) / 8
		if g > 0 {
			q8dotNib32AVX2(&row[0], &x.qs[0], &x.d[0], &x.sums[0], g, l, &table[0])
		}
		return 8 * g
	}
}

func q8dotQ2_0Vector(row []byte, x *Q8Row, l *[8]float32) int {
	g := len(x.d) / 8
	if g > 0 {
		q8dotQ2_0AVX2(&row[0], &x.qs[0], &x.d[0], &x.sums[0], g, l)
	}
	return 8 * g
}

var (
	q8dotIQ4NLVector = q8dotNib32Vector(&quant.KvaluesIQ4NL)
	q8dotQ4_0Vector  = q8dotNib32Vector(&q4_0Values)
)

//go:noescape
func q8dotIQ3SAVX2(w *byte, xq *int8, xd *float32, blocks int, lanes *[8]float32, grid *uint32)

func q8dotIQ3SVector(row []byte, x *Q8Row, l *[8]float32) int {
	g := len(x.d) / 8
	if g > 0 {
		q8dotIQ3SAVX2(&row[0], &x.qs[0], &x.d[0], g, l, &iq3sGrid[0])
	}
	return 8 * g
}

//go:noescape
func q8dotDecodedAVX2(w *int8, m *int16, dw *float32, xq *int8, xd *float32, groups int, lanes *[8]float32)

//go:noescape
func q8decodeIQ3SAVX2(w *byte, blocks int, grid *uint32, out *int8, m *int16, dw *float32)

func q8dotDecodedVector(d *q8Decoded, ng int, x *Q8Row, g0 int, l *[8]float32) {
	q8dotDecodedAVX2(&d.w[0], &d.m[0], &d.dw[0], &x.qs[256*g0], &x.d[8*g0], ng, l)
}

func q8decodeIQ3SVector(row []byte, g0, ng int, d *q8Decoded) {
	q8decodeIQ3SAVX2(&row[110*g0], ng, &iq3sGrid[0], &d.w[0], &d.m[0], &d.dw[0])
}

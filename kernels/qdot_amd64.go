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

// Each wrapper runs the whole groups of 8 sub-blocks, then a last partial
// group over a zero-padded copy of the row's tail when the activations are
// padded (Q8Row.padded): a zero weight scale against a zero activation
// scale adds +0 to a lane, which leaves it as it is (a lane starts at +0
// and so is never -0). It returns how many sub-blocks it took.

func q8dotQ8_0Vector(row []byte, x *Q8Row) (l [8]float32, taken int) {
	nsub := len(x.d)
	g := nsub / 8
	if g > 0 {
		q8dotQ8_0AVX2(&row[0], &x.qs[0], &x.d[0], &x.sums[0], g, &l)
	}
	s0 := 8 * g
	if s0 == nsub || !x.padded(s0) {
		return l, s0
	}
	var pad [8 * 34]byte
	copy(pad[:], row[34*s0:34*nsub])
	q8dotQ8_0AVX2(&pad[0], &x.qs[32*s0], &x.d[s0], &x.sums[s0], 1, &l)
	return l, nsub
}

func q8dotNib32Vector(table *[16]int8) func(row []byte, x *Q8Row) ([8]float32, int) {
	return func(row []byte, x *Q8Row) (l [8]float32, taken int) {
		nsub := len(x.d)
		g := nsub / 8
		if g > 0 {
			q8dotNib32AVX2(&row[0], &x.qs[0], &x.d[0], &x.sums[0], g, &l, &table[0])
		}
		s0 := 8 * g
		if s0 == nsub || !x.padded(s0) {
			return l, s0
		}
		var pad [8 * 18]byte
		copy(pad[:], row[18*s0:18*nsub])
		q8dotNib32AVX2(&pad[0], &x.qs[32*s0], &x.d[s0], &x.sums[s0], 1, &l, &table[0])
		return l, nsub
	}
}

// q2Groups runs the AVX-512 kernel (wide) or the AVX2 one.
func q2Groups(wide bool, w *byte, x *Q8Row, s0, groups int, l *[8]float32) {
	if wide {
		q8dotQ2_0AVX512(w, &x.qs[32*s0], &x.d[s0], &x.sums[s0], groups, l)
	} else {
		q8dotQ2_0AVX2(w, &x.qs[32*s0], &x.d[s0], &x.sums[s0], groups, l)
	}
}

// q2Rows is the Q2_0 wrapper (4 blocks of 18 bytes per group).
func q2Rows(wide bool, row []byte, x *Q8Row) (l [8]float32, taken int) {
	nsub := len(x.d)
	g := nsub / 8
	if g > 0 {
		q2Groups(wide, &row[0], x, 0, g, &l)
	}
	s0 := 8 * g
	if s0 == nsub || !x.padded(s0) {
		return l, s0
	}
	var pad [4 * 18]byte
	copy(pad[:], row[9*s0:9*nsub])
	q2Groups(wide, &pad[0], x, s0, 1, &l)
	return l, nsub
}

func q8dotQ2_0Vector(row []byte, x *Q8Row) ([8]float32, int) { return q2Rows(false, row, x) }

func q8dotQ2_0Vector512(row []byte, x *Q8Row) ([8]float32, int) { return q2Rows(true, row, x) }

var (
	q8dotIQ4NLVector = q8dotNib32Vector(&quant.KvaluesIQ4NL)
	q8dotQ4_0Vector  = q8dotNib32Vector(&q4_0Values)
)

//go:noescape
func q8dotIQ3SAVX2(w *byte, xq *int8, xd *float32, blocks int, lanes *[8]float32, grid *uint32)

func q8dotIQ3SVector(row []byte, x *Q8Row) (l [8]float32, taken int) {
	g := len(x.d) / 8
	if g > 0 {
		q8dotIQ3SAVX2(&row[0], &x.qs[0], &x.d[0], g, &l, &iq3sGrid[0])
	}
	return l, 8 * g
}

//go:noescape
func q8dotDecodedAVX2(w *int8, m *int16, dw *float32, xq *int8, xd *float32, groups int, lanes *[8]float32)

//go:noescape
func q8decodeIQ3SAVX2(w *byte, blocks int, grid *uint32, out *int8, m *int16, dw *float32)

func q8dotDecodedVector(d *q8Decoded, ng int, x *Q8Row, g0 int, l *[8]float32) {
	q8dotDecodedAVX2(&d.w[0], &d.m[0], &d.dw[0], &x.qs[256*g0], &x.d[8*g0], ng, l)
}

func q8decodeIQ3SVector(row []byte, g0, ng int, d *q8Decoded, at int) {
	q8decodeIQ3SAVX2(&row[110*g0], ng, &iq3sGrid[0], &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

//go:noescape
func q8dotQ2_0AVX512(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32)

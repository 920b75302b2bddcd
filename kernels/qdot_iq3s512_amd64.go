//go:build amd64 && !noasm

package kernels

// q8dotIQ3SAVX512 is q8dotIQ3SAVX2 with the grid entries gathered (a
// VPGATHERDD per 64 weights), the signs applied under masks and VPDPBUSD
// (qdot_iq3s512_amd64.s); the same lanes.
//
//go:noescape
func q8dotIQ3SAVX512(w *byte, xq *int8, xd *float32, blocks int, lanes *[8]float32, grid *uint32)

func q8dotIQ3SVector512(row []byte, x *Q8Row) (l [8]float32, taken int) {
	g := len(x.d) / 8
	if g > 0 {
		q8dotIQ3SAVX512(&row[0], &x.qs[0], &x.d[0], g, &l, &iq3sGrid[0])
	}
	return l, 8 * g
}

// q8decodeIQ3SAVX512 is q8decodeIQ3SAVX2 with the grid entries gathered
// and the signs applied under masks; the same output.
//
//go:noescape
func q8decodeIQ3SAVX512(w *byte, blocks int, grid *uint32, out *int8, m *int16, dw *float32)

func q8decodeIQ3SVector512(row []byte, g0, ng int, d *q8Decoded, at int) {
	q8decodeIQ3SAVX512(&row[110*g0], ng, &iq3sGrid[0], &d.w[256*at], &d.m[8*at], &d.dw[8*at])
}

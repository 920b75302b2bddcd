//go:build amd64 && !noasm

package kernels

// The multi-row DotQ8 kernels (qdot_rows_amd64.s).

//go:noescape
func q2RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32)

//go:noescape
func q8RowsQ8_0AVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[8]uint64, out *float32)

// byteMask has the low n of 64 bits set (n clamped to 0..64).
func byteMask(n int) uint64 {
	switch {
	case n <= 0:
		return 0
	case n >= 64:
		return ^uint64(0)
	}
	return 1<<n - 1
}

// rowsQ2_0AVX512 runs rows [lo, hi) of m (Q2_0) against x, or reports
// false where x lacks the plane order, or the padding a partial last group
// reads.
func rowsQ2_0AVX512(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	nb := m.Cols / 64
	groups, tail := nb/4, nb%4
	if tail > 0 && (!x.padded(8*groups) || cap(x.q2) < 256*(groups+1)) || len(x.q2) != m.Cols || len(x.d) != 2*nb {
		return false
	}
	q2RowsAVX512(&m.Data[lo*m.RowBytes], m.RowBytes, hi-lo, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
		groups, tail, byteMask(18*tail), &out[lo])
	return true
}

// rowsQ8_0AVX512 is rowsQ2_0AVX512 for Q8_0.
func rowsQ8_0AVX512(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	nb := m.Cols / 32
	groups, tail := nb/8, nb%8
	if tail > 0 && !x.padded(8*groups) || len(x.d) != nb {
		return false
	}
	var masks [8]uint64
	for j := 0; j < tail; j++ {
		if j%2 == 0 {
			masks[j] = byteMask(32)
		} else {
			masks[j] = ^byteMask(32)
		}
	}
	q8RowsQ8_0AVX512(&m.Data[lo*m.RowBytes], m.RowBytes, hi-lo, &x.qs[:1][0], &x.d[:1][0], &x.sums[:1][0],
		groups, tail, &masks, &out[lo])
	return true
}

//go:build amd64 && !noasm

package kernels

import "unsafe"

// The multi-row DotQ8 kernels (qdot_rows_amd64.s).

//go:noescape
func q2RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32)

//go:noescape
func q2Rows2AVX512(w *byte, stride, pairs int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32, boff int, outB *float32, pf int)

//go:noescape
func q2Rows4AVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32, boff, ooff int, xt *int8, pf int)

//go:noescape

//go:noescape
func q2Rows2AVX2(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, out *float32, boff, ooff, pf int)

//go:noescape
func q8RowsQ8_0AVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[8]uint64, out *float32)

//go:noescape
func q8RowsNQ8_0AVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[8]uint64, out *float32, boff, ooff, n, pf, hint int)

//go:noescape
func q8Rows2Q8_0AVX2(w *byte, stride, rows int, xq *int8, xd *float32, groups int, out *float32, boff, ooff, pf, hint int)

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

// q2PrefetchDist is how far ahead of each of its row streams the two-
// and four-row Q2_0 kernels prefetch (PREFETCHT0, one line per group): two
// streams from DRAM leave the hardware prefetcher short; 3072 bytes was
// the best of 0..8192 over a 256 MiB matrix and over expert-sized matrices
// (docs/BENCHMARKS.md). (The one-row Q8_0 kernel's single stream gains
// nothing from it: software prefetch there only slowed it.)
const q2PrefetchDist = 3072

// rowsQ2_0PairsAt is rowsQ2_0AVX512 by the two-row kernel
// (q2Rows2AVX512), prefetching pf bytes ahead: row lo+i beside row
// lo+pairs+i, so that each of the two is one sequential stream; the last
// row of an odd number by the one-row kernel.
func rowsQ2_0PairsAt(m *Matrix, lo, hi int, x *Q8Row, out []float32, pf int) bool {
	nb := m.Cols / 64
	groups, tail := nb/4, nb%4
	if tail > 0 && (!x.padded(8*groups) || cap(x.q2) < 256*(groups+1)) || len(x.q2) != m.Cols || len(x.d) != 2*nb {
		return false
	}
	mask := byteMask(18 * tail)
	if pairs := (hi - lo) / 2; pairs > 0 {
		q2Rows2AVX512(&m.Data[lo*m.RowBytes], m.RowBytes, pairs, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
			groups, tail, mask, &out[lo], pairs*m.RowBytes, &out[lo+pairs], pf)
		lo += 2 * pairs
	}
	if lo < hi {
		q2RowsAVX512(&m.Data[lo*m.RowBytes], m.RowBytes, 1, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
			groups, tail, mask, &out[lo])
	}
	return true
}

// q2Quad is a four-row Q2_0 kernel (q2Rows4AVX512).
type q2Quad func(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32, boff, ooff int, xt *int8, pf int)

// q2QuadRows is a kernelSet.q8rows entry running the four-row kernel k:
// rowsQ2_0AVX512 with the range cut into four parts, row i of each beside
// row i of the others (four sequential streams, each prefetched
// q2QuadPrefetchDist bytes ahead); the rows left over from a whole number
// of four, and rows ending in a partial group of three blocks, by
// rowsQ2_0PairsAt.
func q2QuadRows(k q2Quad) func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	return func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
		return rowsQ2_0QuadsAt(m, lo, hi, x, out, k, q2QuadPrefetchDist)
	}
}

// q2QuadPrefetchDist is q2PrefetchDist for the four streams of the
// four-row kernels: on the lent Intel Xeon (BenchmarkRowsDRAM's expert
// shape, main 7943506, two runs each) 1024 and 2048 bytes ahead read
// 81-86% of the plain read, 3072 75-84%, 6144 73-81%, none 61-73%.
const q2QuadPrefetchDist = 2048

// rowsQ2_0QuadsAt is q2QuadRows(k) prefetching pf bytes ahead.
func rowsQ2_0QuadsAt(m *Matrix, lo, hi int, x *Q8Row, out []float32, k q2Quad, pf int) bool {
	nb := m.Cols / 64
	groups, tail := nb/4, nb%4
	if nb == 0 || tail > 0 && (!x.padded(8*groups) || cap(x.q2) < 256*(groups+1)) || len(x.q2) != m.Cols || len(x.d) != 2*nb {
		return false
	}
	var xt *int8
	if tail > 0 {
		if tail == 3 || len(x.q2t) != 256 {
			return rowsQ2_0PairsAt(m, lo, hi, x, out, pf)
		}
		xt = &x.q2t[0]
	}
	if part := (hi - lo) / 4; part > 0 {
		k(&m.Data[lo*m.RowBytes], m.RowBytes, part, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
			groups, tail, byteMask(18*tail), &out[lo], part*m.RowBytes, 4*part, xt, pf)
		lo += 4 * part
	}
	if lo < hi {
		return rowsQ2_0PairsAt(m, lo, hi, x, out, pf)
	}
	return true
}

// q2QuadLanes is a kernelSet.q8lanes entry running the four-row kernel k
// on four lanes, lane rows apart (rowsQ2_0QuadsAt's four parts, placed by
// the caller); rows ending in a partial group of three blocks, or x
// without the plane order's tail, by the two-row kernel, lanes 0 and 1
// then 2 and 3.
func q2QuadLanes(k q2Quad) func(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
	return func(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
		return lanesQ2_0QuadsAt(m, row, steps, lane, x, out, k, q2QuadPrefetchDist)
	}
}

// lanesQ2_0QuadsAt is q2QuadLanes(k) prefetching pf bytes ahead.
func lanesQ2_0QuadsAt(m *Matrix, row, steps, lane int, x *Q8Row, out []float32, k q2Quad, pf int) bool {
	nb := m.Cols / 64
	groups, tail := nb/4, nb%4
	if nb == 0 || tail > 0 && (!x.padded(8*groups) || cap(x.q2) < 256*(groups+1)) || len(x.q2) != m.Cols || len(x.d) != 2*nb {
		return false
	}
	_, _ = m.Data[(row+3*lane+steps)*m.RowBytes-1], out[row+3*lane+steps-1]
	mask := byteMask(18 * tail)
	if tail == 3 || tail > 0 && len(x.q2t) != 256 {
		for l := 0; l < 4; l += 2 {
			r := row + l*lane
			q2Rows2AVX512(&m.Data[r*m.RowBytes], m.RowBytes, steps, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
				groups, tail, mask, &out[r], lane*m.RowBytes, &out[r+lane], pf)
		}
		return true
	}
	var xt *int8
	if tail > 0 {
		xt = &x.q2t[0]
	}
	k(&m.Data[row*m.RowBytes], m.RowBytes, steps, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
		groups, tail, mask, &out[row], lane*m.RowBytes, 4*lane, xt, pf)
	return true
}

// rowsQ2_0AVX2 is rowsQ2_0AVX512 on AVX2 and F16C (q2Rows2AVX2): row lo+i
// beside row lo+pairs+i (two sequential streams, each prefetched
// q2PrefetchDist bytes ahead); the last row of an odd number as both rows
// of a pair.
func rowsQ2_0AVX2(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	nb := m.Cols / 64
	groups, tail := nb/4, nb%4
	if nb == 0 || tail > 0 && (!x.padded(8*groups) || cap(x.q2) < 256*(groups+1)) || len(x.q2) != m.Cols || len(x.d) != 2*nb {
		return false
	}
	if pairs := (hi - lo) / 2; pairs > 0 {
		q2Rows2AVX2(&m.Data[lo*m.RowBytes], m.RowBytes, pairs, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
			groups, tail, &out[lo], pairs*m.RowBytes, 4*pairs, q2PrefetchDist)
		lo += 2 * pairs
	}
	if lo < hi {
		q2Rows2AVX2(&m.Data[lo*m.RowBytes], m.RowBytes, 1, &x.q2[:1][0], &x.d[:1][0], &x.sums[:1][0],
			groups, tail, &out[lo], 0, 0, q2PrefetchDist)
	}
	return true
}

// rowsQ8_0AVX512 is rowsQ2_0AVX512 for Q8_0, in the walk q8Walk512.
func rowsQ8_0AVX512(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	return rowsQ8_0Streams(m, lo, hi, x, out, q8Walk512)
}

// q8Walk512 and q8WalkAVX2 are the walks the decode's Q8_0 rows take on
// AVX-512 VNNI and on AVX2: the best of BenchmarkRowsDRAM's on one thread
// of an Intel Xeon (docs/BENCHMARKS.md: from DRAM the one-row kernel read
// 58-60% of the plain read's rate, two streams 70-73%, four 75-80%, and
// four with PREFETCHT0 1-4 KiB ahead of each 83-92%, distances and hints
// within the noise; on AVX2 row by row 49-51%, two streams with the
// prefetch 86-87%).
var (
	q8Walk512  = q8Streams{n: 4, pf: 2048, hint: 1}
	q8WalkAVX2 = q8Streams{n: 2, pf: 2048, hint: 1}
)

// rowsQ8_0AVX2Walk is rowsQ8_0AVX2 in the walk q8WalkAVX2.
func rowsQ8_0AVX2Walk(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	return rowsQ8_0AVX2(m, lo, hi, x, out, q8WalkAVX2)
}

// q8Streams is how the Q8_0 row kernels walk a range of rows: n (1..4)
// sequential streams at once (the range cut into n parts, row i of each
// part beside row i of the others: the q8RowsNQ8_0AVX512 kernel; the rows
// left over from a whole number of n by the one-row kernel), each stream
// prefetched pf bytes ahead by PREFETCHT0 (hint 1) or PREFETCHT2 (hint 2),
// none with hint 0 (nor with n = 1: the one-row kernel never prefetches).
// Any choice gives the one-row kernel's bits.
type q8Streams struct{ n, pf, hint int }

// rowsQ8_0Streams is rowsQ8_0AVX512 in the walk s.
func rowsQ8_0Streams(m *Matrix, lo, hi int, x *Q8Row, out []float32, s q8Streams) bool {
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
	if s.n >= 2 {
		if part := (hi - lo) / s.n; part > 0 {
			q8RowsNQ8_0AVX512(&m.Data[lo*m.RowBytes], m.RowBytes, part, &x.qs[:1][0], &x.d[:1][0], &x.sums[:1][0],
				groups, tail, &masks, &out[lo], part*m.RowBytes, 4*part, s.n, s.pf, s.hint)
			lo += s.n * part
		}
	}
	if lo < hi {
		q8RowsQ8_0AVX512(&m.Data[lo*m.RowBytes], m.RowBytes, hi-lo, &x.qs[:1][0], &x.d[:1][0], &x.sums[:1][0],
			groups, tail, &masks, &out[lo])
	}
	return true
}

// lanesQ8_0AVX512 is a kernelSet.q8lanes entry: rowsQ8_0Streams' kernel
// in the walk q8Walk512 (q8Walk512.n streams) on lanes lane rows apart.
func lanesQ8_0AVX512(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
	return lanesQ8_0Streams(m, row, steps, lane, x, out, q8Walk512)
}

// lanesQ8_0Streams is lanesQ8_0AVX512 in the walk s (s.n >= 2).
func lanesQ8_0Streams(m *Matrix, row, steps, lane int, x *Q8Row, out []float32, s q8Streams) bool {
	nb := m.Cols / 32
	groups, tail := nb/8, nb%8
	if tail > 0 && !x.padded(8*groups) || len(x.d) != nb {
		return false
	}
	_, _ = m.Data[(row+(s.n-1)*lane+steps)*m.RowBytes-1], out[row+(s.n-1)*lane+steps-1]
	var masks [8]uint64
	for j := 0; j < tail; j++ {
		if j%2 == 0 {
			masks[j] = byteMask(32)
		} else {
			masks[j] = ^byteMask(32)
		}
	}
	q8RowsNQ8_0AVX512(&m.Data[row*m.RowBytes], m.RowBytes, steps, &x.qs[:1][0], &x.d[:1][0], &x.sums[:1][0],
		groups, tail, &masks, &out[row], lane*m.RowBytes, 4*lane, s.n, s.pf, s.hint)
	return true
}

// rowsQ8_0AVX2 is rowsQ8_0Streams on AVX2 and F16C (q8Rows2Q8_0AVX2) in
// the walk s (n 2, pf, hint), or reports false where a row ends in a
// partial group of 8 blocks (the row by row path takes those). A last row
// of an odd number runs as both rows of a pair (the same row twice).
func rowsQ8_0AVX2(m *Matrix, lo, hi int, x *Q8Row, out []float32, s q8Streams) bool {
	nb := m.Cols / 32
	if nb%8 != 0 || len(x.d) != nb {
		return false
	}
	if part := (hi - lo) / 2; part > 0 {
		q8Rows2Q8_0AVX2(&m.Data[lo*m.RowBytes], m.RowBytes, part, &x.qs[:1][0], &x.d[:1][0],
			nb/8, &out[lo], part*m.RowBytes, 4*part, s.pf, s.hint)
		lo += 2 * part
	}
	if lo < hi {
		q8Rows2Q8_0AVX2(&m.Data[lo*m.RowBytes], m.RowBytes, 1, &x.qs[:1][0], &x.d[:1][0],
			nb/8, &out[lo], 0, 0, s.pf, s.hint)
	}
	return true
}

//go:noescape
func iq4RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[3]uint64, out *float32, boff, ooff, n, pf int)

// rowStreams and rowPrefetch are how the IQ4_NL, MXFP4, IQ4_XS, IQ3_S,
// IQ3_XXS, IQ2_XXS and K-quant row kernels walk a range of rows: Q8_0's walk on
// AVX-512 (q8Walk512), four streams, each prefetched 2048 bytes ahead by
// PREFETCHT0.
var rowStreams, rowPrefetch = q8Walk512.n, q8Walk512.pf

//go:noescape
func mxfp4RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[3]uint64, out *float32, boff, ooff, n, pf int)

// nibRowsKernel is iq4RowsAVX512 or mxfp4RowsAVX512.
type nibRowsKernel func(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[3]uint64, out *float32, boff, ooff, n, pf int)

// nibRows is a nibble row kernel with its type's geometry: groups of 8
// blocks of bb bytes, the group's last window at tw.
type nibRows struct {
	k      nibRowsKernel
	bb, tw int
}

var (
	iq4Rows   = nibRows{iq4RowsAVX512, 18, 80}
	mxfp4Rows = nibRows{mxfp4RowsAVX512, 17, 72}
)

// args are the arguments of r's kernel that depend on the row length
// alone, or ok false where x lacks the padding a partial last group reads
// (or the row has no blocks).
func (r nibRows) args(m *Matrix, x *Q8Row) (groups, tail int, masks [3]uint64, ok bool) {
	nb := m.Cols / 32
	groups, tail = nb/8, nb%8
	if nb == 0 || tail > 0 && !x.padded(8*groups) || len(x.d) != nb {
		return 0, 0, masks, false
	}
	masks = [3]uint64{byteMask(r.bb * tail), byteMask(r.bb*tail - 64), byteMask(r.bb*tail - r.tw)}
	return groups, tail, masks, true
}

// rows is a kernelSet.q8rows entry (IQ4_NL, MXFP4): the range cut into
// rowStreams parts, row i of each beside row i of the others, the rows
// left over from a whole number of parts one at a time.
func (r nibRows) rows(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	groups, tail, masks, ok := r.args(m, x)
	if !ok || lo >= hi {
		return false
	}
	_, _ = m.Data[hi*m.RowBytes-1], out[hi-1]
	if part := (hi - lo) / rowStreams; part > 0 {
		r.k(&m.Data[lo*m.RowBytes], m.RowBytes, part, &x.qs[0], &x.d[0], &x.sums[0],
			groups, tail, &masks, &out[lo], part*m.RowBytes, 4*part, rowStreams, rowPrefetch)
		lo += rowStreams * part
	}
	if lo < hi {
		r.k(&m.Data[lo*m.RowBytes], m.RowBytes, hi-lo, &x.qs[0], &x.d[0], &x.sums[0],
			groups, tail, &masks, &out[lo], 0, 0, 1, 0)
	}
	return true
}

// lanes is a kernelSet.q8lanes entry (IQ4_NL, MXFP4): the kernel's
// rowStreams streams on lanes lane rows apart.
func (r nibRows) lanes(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
	groups, tail, masks, ok := r.args(m, x)
	if !ok {
		return false
	}
	_, _ = m.Data[(row+(rowStreams-1)*lane+steps)*m.RowBytes-1], out[row+(rowStreams-1)*lane+steps-1]
	r.k(&m.Data[row*m.RowBytes], m.RowBytes, steps, &x.qs[0], &x.d[0], &x.sums[0],
		groups, tail, &masks, &out[row], lane*m.RowBytes, 4*lane, rowStreams, rowPrefetch)
	return true
}

//go:noescape
func iq3RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, tab *byte, out *float32, boff, ooff, n, pf int)

// iq3sNibbles is iq3RowsAVX512's table, 64-byte aligned: bytes 0 and 1 of
// each IQ3_S grid entry as one byte's low and high nibble (every grid byte
// is below 16), then bytes 2 and 3 at 512.
var iq3sNibbles = func() *[1024]byte {
	buf := make([]byte, 1024+63)
	off := int(-uintptr(unsafe.Pointer(&buf[0])) & 63)
	t := (*[1024]byte)(buf[off:])
	for i, g := range iq3sGrid {
		if g&0xf0f0f0f0 != 0 {
			panic("kernels: an IQ3_S grid byte above 15")
		}
		t[i] = byte(g&15 | g>>8&15<<4)
		t[512+i] = byte(g>>16&15 | g>>24&15<<4)
	}
	return t
}()

//go:noescape
func iq3xxsRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, tab *byte, out *float32, boff, ooff, n, pf int)

//go:noescape
func iq2xxsRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, tab *byte, out *float32, boff, ooff, n, pf int)

// xxsTab is the IQ3_XXS and IQ2_XXS row kernels' table, 64-byte aligned:
// at 0 byte j of each IQ3_XXS grid entry at 256j+entry; at 1024
// ksigns_iq2xs; at 1152 the IQ2_XXS grid entries' bytes 0..3 (entry) and
// 4..7 (256+entry) as 2-bit codes of the grid's three values, byte j's at
// bits 2j; at 1664, 1728, 1792 the values of the codes at bits 0, 2 and 4
// of a 6-bit index.
var xxsTab = func() *[1856]byte {
	buf := make([]byte, 1856+63)
	off := int(-uintptr(unsafe.Pointer(&buf[0])) & 63)
	t := (*[1856]byte)(buf[off:])
	for e, g := range iq3xxsGrid {
		for j := 0; j < 4; j++ {
			t[256*j+e] = byte(g >> (8 * j))
		}
	}
	copy(t[1024:1152], ksignsIQ2XS[:])
	values := [4]byte{0x08, 0x19, 0x2b, 0}
	code := func(v byte) byte {
		for c, w := range values[:3] {
			if v == w {
				return byte(c)
			}
		}
		panic("kernels: an IQ2_XXS grid byte not 8, 25 or 43")
	}
	for e, g := range iq2xxsGrid {
		for h := 0; h < 2; h++ {
			var b byte
			for j := 0; j < 4; j++ {
				b |= code(byte(g>>(8*(4*h+j)))) << (2 * j)
			}
			t[1152+256*h+e] = b
		}
	}
	for x := 0; x < 64; x++ {
		for k := 0; k < 3; k++ {
			t[1664+64*k+x] = values[x>>(2*k)&3]
		}
	}
	return t
}()

// planeRowsKernel is a row kernel against the plane-order activations
// (Q8Row.q2) whose rows are whole 256-weight blocks, taking a table:
// iq3RowsAVX512's arguments.
type planeRowsKernel func(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, tab *byte, out *float32, boff, ooff, n, pf int)

// planeRows is a kernelSet.q8rows entry running k with table tab:
// nibRows.rows' walk (rowStreams parts, prefetched rowPrefetch ahead).
func planeRows(k planeRowsKernel, tab *byte) func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	return func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
		blocks, ok := iq3Blocks(m, x)
		if !ok || lo >= hi {
			return false
		}
		_, _ = m.Data[hi*m.RowBytes-1], out[hi-1]
		if part := (hi - lo) / rowStreams; part > 0 {
			k(&m.Data[lo*m.RowBytes], m.RowBytes, part, &x.q2[0], &x.d[0], blocks, tab,
				&out[lo], part*m.RowBytes, 4*part, rowStreams, rowPrefetch)
			lo += rowStreams * part
		}
		if lo < hi {
			k(&m.Data[lo*m.RowBytes], m.RowBytes, hi-lo, &x.q2[0], &x.d[0], blocks, tab,
				&out[lo], 0, 0, 1, 0)
		}
		return true
	}
}

// planeLanes is a kernelSet.q8lanes entry running k with table tab: its
// rowStreams streams on lanes lane rows apart.
func planeLanes(k planeRowsKernel, tab *byte) func(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
	return func(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
		blocks, ok := iq3Blocks(m, x)
		if !ok {
			return false
		}
		_, _ = m.Data[(row+(rowStreams-1)*lane+steps)*m.RowBytes-1], out[row+(rowStreams-1)*lane+steps-1]
		k(&m.Data[row*m.RowBytes], m.RowBytes, steps, &x.q2[0], &x.d[0], blocks, tab,
			&out[row], lane*m.RowBytes, 4*lane, rowStreams, rowPrefetch)
		return true
	}
}

// iq3Blocks is how many 256-weight blocks (IQ3_S, IQ3_XXS, IQ2_XXS) a
// row of m has, or ok false where x lacks the plane order (or the row has
// no blocks).
func iq3Blocks(m *Matrix, x *Q8Row) (blocks int, ok bool) {
	blocks, ok = kBlocks(m, x)
	return blocks, ok && len(x.q2) == m.Cols
}

//go:noescape
func q4kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, blocks int, out *float32, boff, ooff, n, pf int)

//go:noescape
func q5kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, blocks int, out *float32, boff, ooff, n, pf int)

//go:noescape
func q6kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, out *float32, boff, ooff, n, pf int)

// kRowsKernel is a K-quant row kernel (qdot_rows_k_amd64.s) against x:
// rows rows, each stride bytes from the last, outputs at out, in n
// streams boff bytes and ooff output bytes apart, each prefetched pf
// bytes ahead.
type kRowsKernel func(w *byte, stride, rows int, x *Q8Row, blocks int, out *float32, boff, ooff, n, pf int)

func q4kRows(w *byte, stride, rows int, x *Q8Row, blocks int, out *float32, boff, ooff, n, pf int) {
	q4kRowsAVX512(w, stride, rows, &x.qs[0], &x.d[0], &x.sums[0], blocks, out, boff, ooff, n, pf)
}

func q5kRows(w *byte, stride, rows int, x *Q8Row, blocks int, out *float32, boff, ooff, n, pf int) {
	q5kRowsAVX512(w, stride, rows, &x.qs[0], &x.d[0], &x.sums[0], blocks, out, boff, ooff, n, pf)
}

func q6kRows(w *byte, stride, rows int, x *Q8Row, blocks int, out *float32, boff, ooff, n, pf int) {
	q6kRowsAVX512(w, stride, rows, &x.qs[0], &x.d[0], blocks, out, boff, ooff, n, pf)
}

//go:noescape
func q2kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, out *float32, boff, ooff, n, pf int)

//go:noescape
func q3kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, out *float32, boff, ooff, n, pf int)

func q2kRows(w *byte, stride, rows int, x *Q8Row, blocks int, out *float32, boff, ooff, n, pf int) {
	q2kRowsAVX512(w, stride, rows, &x.qs[0], &x.d[0], blocks, out, boff, ooff, n, pf)
}

func q3kRows(w *byte, stride, rows int, x *Q8Row, blocks int, out *float32, boff, ooff, n, pf int) {
	q3kRowsAVX512(w, stride, rows, &x.qs[0], &x.d[0], blocks, out, boff, ooff, n, pf)
}

//go:noescape
func iq4xsRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, blocks int, out *float32, boff, ooff, n, pf int)

// iq4xsRows is IQ4_XS's row kernel (qdot_rows_iq_amd64.s, VBMI): its
// blocks are 256 weights, as the K-quants', so it takes their walk.
func iq4xsRows(w *byte, stride, rows int, x *Q8Row, blocks int, out *float32, boff, ooff, n, pf int) {
	iq4xsRowsAVX512(w, stride, rows, &x.qs[0], &x.d[0], &x.sums[0], blocks, out, boff, ooff, n, pf)
}

// kBlocks is how many 256-weight blocks a row of m has, or ok false where
// the row has none (or x is not m's length).
func kBlocks(m *Matrix, x *Q8Row) (blocks int, ok bool) {
	blocks = m.Cols / 256
	return blocks, blocks > 0 && len(x.d) == m.Cols/32
}

// kRowsAVX512 is a kernelSet.q8rows entry running the K-quant row kernel
// k: nibRows.rows' walk (rowStreams parts, prefetched
// rowPrefetch ahead).
func kRowsAVX512(k kRowsKernel) func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
	return func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
		blocks, ok := kBlocks(m, x)
		if !ok || lo >= hi {
			return false
		}
		_, _ = m.Data[hi*m.RowBytes-1], out[hi-1]
		if part := (hi - lo) / rowStreams; part > 0 {
			k(&m.Data[lo*m.RowBytes], m.RowBytes, part, x, blocks, &out[lo], part*m.RowBytes, 4*part, rowStreams, rowPrefetch)
			lo += rowStreams * part
		}
		if lo < hi {
			k(&m.Data[lo*m.RowBytes], m.RowBytes, hi-lo, x, blocks, &out[lo], 0, 0, 1, 0)
		}
		return true
	}
}

// kLanesAVX512 is a kernelSet.q8lanes entry running the K-quant row
// kernel k: its rowStreams streams on lanes lane rows apart.
func kLanesAVX512(k kRowsKernel) func(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
	return func(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool {
		blocks, ok := kBlocks(m, x)
		if !ok {
			return false
		}
		_, _ = m.Data[(row+(rowStreams-1)*lane+steps)*m.RowBytes-1], out[row+(rowStreams-1)*lane+steps-1]
		k(&m.Data[row*m.RowBytes], m.RowBytes, steps, x, blocks, &out[row], lane*m.RowBytes, 4*lane, rowStreams, rowPrefetch)
		return true
	}
}

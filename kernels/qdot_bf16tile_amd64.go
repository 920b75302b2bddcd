//go:build amd64 && !noasm

package kernels

// The tiled DotBF16 kernels (qdot_bf16tile_amd64.s): bf16TileRxTAVX512
// (VDPBF16PS) and bf16TileRxTFMA (fused multiply-adds under DAZ and FTZ,
// nonzero where a result may not be VDPBF16PS's) run steps tiles of R rows
// x T activation rows, each output DotBF16's bits.

//go:noescape
func bf16Tile4x1AVX512(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile1x1AVX512(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile2x3AVX512(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile2x2AVX512(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile1x3AVX512(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile1x2AVX512(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile4x1FMA(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile1x1FMA(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile2x3FMA(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile2x2FMA(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile1x3FMA(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

//go:noescape
func bf16Tile1x2FMA(w *byte, stride, steps int, x0, x1, x2 *uint16, chunks int, m01, m23 uint64, out *float32, ostride int) int

// bf16TileShape is the chunks of an n-element row for the tile kernels:
// whole chunks, and the word masks of the last partial one (zero when
// there is none).
func bf16TileShape(n int) (chunks int, m01, m23 uint64) {
	tail := n % bf16Chunk
	return n / bf16Chunk, byteMask(tail), byteMask(tail - 64)
}

// bf16Tiling is one call's shape for a tile kernel: the row stride, the
// chunks and masks (bf16TileShape), the outputs' stride between inputs in
// bytes, and whether the FMA kernels run first.
type bf16Tiling struct {
	stride, chunks int
	m01, m23       uint64
	ostride        int
	fma            bool
}

// tile runs the R x T kernel (rt: 41, 11, 23, 22, 13 or 12) on steps tiles
// from w: the FMA kernel, then the VDPBF16PS one where its flags say a
// result may differ, or the VDPBF16PS one alone.
func (g *bf16Tiling) tile(rt int, w *byte, steps int, x0, x1, x2 *uint16, out *float32) {
	s, c, m01, m23, o := g.stride, g.chunks, g.m01, g.m23, g.ostride
	if g.fma {
		var f int
		switch rt {
		case 41:
			f = bf16Tile4x1FMA(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
		case 11:
			f = bf16Tile1x1FMA(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
		case 23:
			f = bf16Tile2x3FMA(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
		case 22:
			f = bf16Tile2x2FMA(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
		case 13:
			f = bf16Tile1x3FMA(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
		case 12:
			f = bf16Tile1x2FMA(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
		}
		if f == 0 {
			return
		}
	}
	switch rt {
	case 41:
		bf16Tile4x1AVX512(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
	case 11:
		bf16Tile1x1AVX512(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
	case 23:
		bf16Tile2x3AVX512(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
	case 22:
		bf16Tile2x2AVX512(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
	case 13:
		bf16Tile1x3AVX512(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
	case 12:
		bf16Tile1x2AVX512(w, s, steps, x0, x1, x2, c, m01, m23, out, o)
	}
}

// bf16RowsFMA is a kernelSet.bf16rows entry: rows [lo, hi) of m against
// x four at a time, the rows left over one at a time (bf16Rows4).
func bf16RowsFMA(m *Matrix, lo, hi int, x *BF16Row, out []float32) bool {
	return bf16Rows4(m, lo, hi, x, out, true)
}

// bf16Rows4 is bf16RowsFMA by the FMA kernels first (fma), or by the
// VDPBF16PS kernels alone (the tests' check of them on every input).
func bf16Rows4(m *Matrix, lo, hi int, x *BF16Row, out []float32, fma bool) bool {
	n := m.Cols
	if n == 0 || !x.padded() || lo >= hi {
		return false
	}
	_, _ = m.Data[hi*m.RowBytes-1], out[hi-1]
	g := bf16Tiling{stride: m.RowBytes, fma: fma}
	g.chunks, g.m01, g.m23 = bf16TileShape(n)
	g.rows(m, lo, hi, &x.v[0], out)
	return true
}

// rows runs rows [lo, hi) of m against x four at a time, then one at a
// time.
func (g *bf16Tiling) rows(m *Matrix, lo, hi int, x *uint16, out []float32) {
	if q := (hi - lo) / 4; q > 0 {
		g.tile(41, &m.Data[lo*m.RowBytes], q, x, nil, nil, &out[lo])
		lo += 4 * q
	}
	if lo < hi {
		g.tile(11, &m.Data[lo*m.RowBytes], hi-lo, x, nil, nil, &out[lo])
	}
}

// bf16TileBlockBytes is the weight bytes of the rows bf16Tiles runs every
// input over before it moves on: a block stays in L2 while the inputs pass
// three at a time, each three in L1 while it meets the block.
const bf16TileBlockBytes = 256 << 10

// bf16TilesFMA is a kernelSet.bf16tiles entry (bf16Tiles).
func bf16TilesFMA(m *Matrix, lo, hi int, xs []*BF16Row, out []float32) bool {
	return bf16Tiles(m, lo, hi, xs, out, true)
}

// bf16Tiles sets out[t*m.Rows+r] for rows [lo, hi) of m and every input,
// in blocks of rows of about bf16TileBlockBytes, each block against the
// inputs three at a time by the 2x3 kernel (two at a time by the 2x2, one
// by the four-row kernel for the last ones), a last odd row by the 1x3
// and 1x2 kernels; the FMA kernels first (fma) or the VDPBF16PS ones
// alone, as bf16Rows4.
func bf16Tiles(m *Matrix, lo, hi int, xs []*BF16Row, out []float32, fma bool) bool {
	n, rows, ntok := m.Cols, m.Rows, len(xs)
	if n == 0 || lo >= hi || ntok == 0 {
		return false
	}
	for _, x := range xs {
		if !x.padded() {
			return false
		}
	}
	_, _ = m.Data[hi*m.RowBytes-1], out[(ntok-1)*rows+hi-1]
	g := bf16Tiling{stride: m.RowBytes, ostride: 4 * rows, fma: fma}
	g.chunks, g.m01, g.m23 = bf16TileShape(n)
	block := max(2, bf16TileBlockBytes/m.RowBytes&^1)
	for b := lo; b < hi; b += block {
		e := min(hi, b+block)
		pairs := (e - b) / 2
		w, r := &m.Data[b*m.RowBytes], b+2*pairs
		for t := 0; t < ntok; {
			switch ntok - t {
			case 1:
				g.rows(m, b, e, &xs[t].v[0], out[t*rows:(t+1)*rows])
				t++
			case 2:
				x0, x1 := &xs[t].v[0], &xs[t+1].v[0]
				if pairs > 0 {
					g.tile(22, w, pairs, x0, x1, nil, &out[t*rows+b])
				}
				if r < e {
					g.tile(12, &m.Data[r*m.RowBytes], 1, x0, x1, nil, &out[t*rows+r])
				}
				t += 2
			default:
				x0, x1, x2 := &xs[t].v[0], &xs[t+1].v[0], &xs[t+2].v[0]
				if pairs > 0 {
					g.tile(23, w, pairs, x0, x1, x2, &out[t*rows+b])
				}
				if r < e {
					g.tile(13, &m.Data[r*m.RowBytes], 1, x0, x1, x2, &out[t*rows+r])
				}
				t += 3
			}
		}
	}
	return true
}

//go:build amd64 && !noasm

package kernels

// The tiled DotBF16 kernels (qdot_bf16tile_amd64.s): bf16TileRxTAVX512
// runs steps tiles of R rows x T activation rows, each output DotBF16's
// bits.

//go:noescape
func bf16Tile4x1AVX512(w *byte, stride, steps int, xs **uint16, chunks int, m01, m23 uint64, out *float32, ostride int)

//go:noescape
func bf16Tile1x1AVX512(w *byte, stride, steps int, xs **uint16, chunks int, m01, m23 uint64, out *float32, ostride int)

//go:noescape
func bf16Tile2x3AVX512(w *byte, stride, steps int, xs **uint16, chunks int, m01, m23 uint64, out *float32, ostride int)

//go:noescape
func bf16Tile2x2AVX512(w *byte, stride, steps int, xs **uint16, chunks int, m01, m23 uint64, out *float32, ostride int)

//go:noescape
func bf16Tile1x3AVX512(w *byte, stride, steps int, xs **uint16, chunks int, m01, m23 uint64, out *float32, ostride int)

//go:noescape
func bf16Tile1x2AVX512(w *byte, stride, steps int, xs **uint16, chunks int, m01, m23 uint64, out *float32, ostride int)

// bf16TileShape is the chunks of an n-element row for the tile kernels:
// whole chunks, and the word masks of the last partial one (zero when
// there is none).
func bf16TileShape(n int) (chunks int, m01, m23 uint64) {
	tail := n % bf16Chunk
	return n / bf16Chunk, byteMask(tail), byteMask(tail - 64)
}

// bf16RowsAVX512 is a kernelSet.bf16rows entry: rows [lo, hi) of m against
// x four at a time (bf16Tile4x1AVX512), the rows left over one at a time.
func bf16RowsAVX512(m *Matrix, lo, hi int, x *BF16Row, out []float32) bool {
	n := m.Cols
	if n == 0 || !x.padded() || lo >= hi {
		return false
	}
	_, _ = m.Data[hi*m.RowBytes-1], out[hi-1]
	chunks, m01, m23 := bf16TileShape(n)
	xs := [1]*uint16{&x.v[0]}
	if q := (hi - lo) / 4; q > 0 {
		bf16Tile4x1AVX512(&m.Data[lo*m.RowBytes], m.RowBytes, q, &xs[0], chunks, m01, m23, &out[lo], 0)
		lo += 4 * q
	}
	if lo < hi {
		bf16Tile1x1AVX512(&m.Data[lo*m.RowBytes], m.RowBytes, hi-lo, &xs[0], chunks, m01, m23, &out[lo], 0)
	}
	return true
}

// bf16TileBlockBytes is the weight bytes of the rows bf16TilesAVX512 runs
// every input over before it moves on: a block stays in L2 while the
// inputs pass three at a time, each three in L1 while it meets the block.
const bf16TileBlockBytes = 256 << 10

// bf16TilesAVX512 is a kernelSet.bf16tiles entry: out[t*m.Rows+r] for rows
// [lo, hi) of m and every input, in blocks of rows of about
// bf16TileBlockBytes, each block against the inputs three at a time by the
// 2x3 kernel (two at a time by the 2x2, one by bf16RowsAVX512 for the last
// ones), a last odd row by the 1x3 and 1x2 kernels.
func bf16TilesAVX512(m *Matrix, lo, hi int, xs []*BF16Row, out []float32) bool {
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
	chunks, m01, m23 := bf16TileShape(n)
	block := max(2, bf16TileBlockBytes/m.RowBytes&^1)
	ostride := 4 * rows
	for b := lo; b < hi; b += block {
		e := min(hi, b+block)
		pairs := (e - b) / 2
		w := &m.Data[b*m.RowBytes]
		for t := 0; t < ntok; {
			switch r := b + 2*pairs; {
			case ntok-t >= 3:
				ps := [3]*uint16{&xs[t].v[0], &xs[t+1].v[0], &xs[t+2].v[0]}
				if pairs > 0 {
					bf16Tile2x3AVX512(w, m.RowBytes, pairs, &ps[0], chunks, m01, m23, &out[t*rows+b], ostride)
				}
				if r < e {
					bf16Tile1x3AVX512(&m.Data[r*m.RowBytes], m.RowBytes, 1, &ps[0], chunks, m01, m23, &out[t*rows+r], ostride)
				}
				t += 3
			case ntok-t == 2:
				ps := [2]*uint16{&xs[t].v[0], &xs[t+1].v[0]}
				if pairs > 0 {
					bf16Tile2x2AVX512(w, m.RowBytes, pairs, &ps[0], chunks, m01, m23, &out[t*rows+b], ostride)
				}
				if r < e {
					bf16Tile1x2AVX512(&m.Data[r*m.RowBytes], m.RowBytes, 1, &ps[0], chunks, m01, m23, &out[t*rows+r], ostride)
				}
				t += 2
			default:
				bf16RowsAVX512(m, b, e, xs[t], out[t*rows:(t+1)*rows])
				t++
			}
		}
	}
	return true
}

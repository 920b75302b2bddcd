//go:build amd64 && !noasm

package kernels

// The K-quants' DotQ8 kernels take whole 256-weight blocks, one group of 8
// sub-blocks each (qdot_k_amd64.s); a K-quant row is always whole blocks,
// so they take every sub-block.

//go:noescape
func q8dotQ2KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

//go:noescape
func q8dotQ3KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

//go:noescape
func q8dotQ4KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

//go:noescape
func q8dotQ5KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

//go:noescape
func q8dotQ6KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

// q8dotKBlocks wraps a K-quant kernel as a kernelSet.q8dot entry.
func q8dotKBlocks(f func(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)) func(row []byte, x *Q8Row) ([8]float32, int) {
	return func(row []byte, x *Q8Row) (l [8]float32, taken int) {
		blocks := len(x.d) / 8
		if blocks > 0 {
			f(&row[0], &x.qs[0], &x.d[0], &x.sums[0], blocks, &l)
		}
		return l, 8 * blocks
	}
}

var (
	q8dotQ2KVector = q8dotKBlocks(q8dotQ2KAVX2)
	q8dotQ3KVector = q8dotKBlocks(q8dotQ3KAVX2)
	q8dotQ4KVector = q8dotKBlocks(q8dotQ4KAVX2)
	q8dotQ5KVector = q8dotKBlocks(q8dotQ5KAVX2)
	q8dotQ6KVector = q8dotKBlocks(q8dotQ6KAVX2)
)

//go:noescape
func q8dotQ2KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

//go:noescape
func q8dotQ3KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

//go:noescape
func q8dotQ5KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

//go:noescape
func q8dotQ6KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)

var (
	q8dotQ2KVector512 = q8dotKBlocks(q8dotQ2KAVX512)
	q8dotQ3KVector512 = q8dotKBlocks(q8dotQ3KAVX512)
	q8dotQ5KVector512 = q8dotKBlocks(q8dotQ5KAVX512)
	q8dotQ6KVector512 = q8dotKBlocks(q8dotQ6KAVX512)
)

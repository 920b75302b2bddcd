//go:build amd64 && !noasm

package kernels

// The DotBF16 kernels take whole chunks of 128 elements (qdot_bf16_amd64.s),
// x at the chunk's 128 hi values (the 128 lo follow).

//go:noescape
func bf16dotAVX512(w *byte, x *uint16, chunks int, lanes *[64]float32)

//go:noescape
func bf16dotAVX2(w *byte, x *uint16, chunks int, lanes *[64]float32) int

// bf16foldAVX is foldBF16Lanes (AVX).
//
//go:noescape
func bf16foldAVX(lanes *[64]float32) float32

// bf16Chunks runs the AVX-512 BF16 kernel (wide) or the AVX2 one and
// reports whether the lanes are VDPBF16PS's.
func bf16Chunks(wide bool, w *byte, x *uint16, chunks int, l *[64]float32) bool {
	if wide {
		bf16dotAVX512(w, x, chunks, l)
		return true
	}
	return bf16dotAVX2(w, x, chunks, l) == 0
}

// bf16Rows runs the kernel over the row's whole chunks, then over a
// zero-padded copy of its last partial chunk (x is padded: QuantizeBF16Row's
// rows are), and folds the lanes; false when a product was not exact (the
// AVX2 kernel's flags): the whole row is then the portable path's.
func bf16Rows(wide bool, row []byte, x *BF16Row) (float32, bool) {
	var l [64]float32
	n := x.Len()
	c := n / bf16Chunk
	ok := true
	if c > 0 {
		ok = bf16Chunks(wide, &row[0], &x.v[0], c, &l)
	}
	if ok && c*bf16Chunk < n {
		var pad [2 * bf16Chunk]byte
		copy(pad[:], row[2*bf16Chunk*c:2*n])
		ok = bf16Chunks(wide, &pad[0], &x.v[2*bf16Chunk*c], 1, &l)
	}
	if !ok {
		return 0, false
	}
	return bf16foldAVX(&l), true
}

func bf16dotVector512(row []byte, x *BF16Row) (float32, bool) { return bf16Rows(true, row, x) }

func bf16dotVector(row []byte, x *BF16Row) (float32, bool) { return bf16Rows(false, row, x) }

// bf16QuantAVX512 is QuantizeBF16Row's loop over n >= 1 activations into
// v, a cleared buffer of the padded row's length (qdot_bf16_amd64.s).
//
//go:noescape
func bf16QuantAVX512(x *float32, n int, v *uint16)

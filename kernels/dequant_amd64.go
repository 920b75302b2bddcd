//go:build amd64 && !noasm

package kernels

import (
	"unsafe"

	"github.com/stratactl/stratactl/quant"
)

// iq3sGridAsm is quant's iq3s_grid, kept here so the assembly can index it.
var iq3sGridAsm = quant.IQ3SGrid()

// kvaluesIQ4NLAsm is the IQ4_NL codebook as the 16-byte VPSHUFB table.
var kvaluesIQ4NLAsm = quant.KvaluesIQ4NL

// q4_0Table maps a Q4_0 nibble to nibble - 8, so Q4_0 runs the IQ4_NL kernel
// (same block layout; y = d * (nibble - 8) is the same exact product).
var q4_0Table = [16]int8{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}

// mxfp4Table is MXFP4's codebook for the shuffle.
var mxfp4Table = quant.MXFP4Codebook()

//go:noescape
func dequantQ8_0AVX2(src *byte, dst *float32, blocks int)

//go:noescape
func dequantIQ4NLAVX2(src *byte, dst *float32, blocks int, table *int8)

//go:noescape
func dequantQ2_0AVX2(src *byte, dst *float32, blocks int)

//go:noescape
func dequantIQ3SAVX2(src *byte, dst *float32, blocks int, grid *uint32)

//go:noescape
func dequantF16AVX2(src *byte, dst *float32, groups int)

//go:noescape
func dequantBF16AVX2(src *byte, dst *float32, groups int)

//go:noescape
func dequantQ6KAVX2(src *byte, dst *float32, blocks int, factors *float32)

//go:noescape
func dequantQ4KAVX2(src *byte, dst *float32, blocks int, factors *float32)

// kBatch is how many k-quant blocks get their scale factors computed (by
// quant, the one definition) before the vector kernel decodes them.
const kBatch = 64

func dequantQ6KVector(src []byte, dst []float32) {
	var f [kBatch][16]float32
	blocks := len(dst) / 256
	for b0 := 0; b0 < blocks; b0 += kBatch {
		n := min(kBatch, blocks-b0)
		for i := 0; i < n; i++ {
			quant.Q6KFactors(src[(b0+i)*210:], &f[i])
		}
		dequantQ6KAVX2(&src[b0*210], &dst[b0*256], n, &f[0][0])
	}
}

func dequantQ4KVector(src []byte, dst []float32) {
	var f [kBatch][16]float32
	blocks := len(dst) / 256
	for b0 := 0; b0 < blocks; b0 += kBatch {
		n := min(kBatch, blocks-b0)
		for i := 0; i < n; i++ {
			quant.Q4KFactors(src[(b0+i)*144:], &f[i])
		}
		dequantQ4KAVX2(&src[b0*144], &dst[b0*256], n, &f[0][0])
	}
}

//go:noescape
func dequantIQ4XSAVX2(src *byte, dst *float32, blocks int, table *int8, factors *float32)

func dequantIQ4XSVector(src []byte, dst []float32) {
	var f [kBatch][8]float32
	blocks := len(dst) / 256
	for b0 := 0; b0 < blocks; b0 += kBatch {
		n := min(kBatch, blocks-b0)
		for i := 0; i < n; i++ {
			quant.IQ4XSFactors(src[(b0+i)*136:], &f[i])
		}
		dequantIQ4XSAVX2(&src[b0*136], &dst[b0*256], n, &kvaluesIQ4NLAsm[0], &f[0][0])
	}
}

//go:noescape
func dequantQ5KAVX2(src *byte, dst *float32, blocks int, factors *float32)

//go:noescape
func dequantQ2KAVX2(src *byte, dst *float32, blocks int, factors *float32)

//go:noescape
func dequantQ3KAVX2(src *byte, dst *float32, blocks int, factors *float32)

func dequantQ5KVector(src []byte, dst []float32) {
	var f [kBatch][16]float32
	blocks := len(dst) / 256
	for b0 := 0; b0 < blocks; b0 += kBatch {
		n := min(kBatch, blocks-b0)
		for i := 0; i < n; i++ {
			quant.Q4KFactors(src[(b0+i)*176:], &f[i])
		}
		dequantQ5KAVX2(&src[b0*176], &dst[b0*256], n, &f[0][0])
	}
}

func dequantQ2KVector(src []byte, dst []float32) {
	var f [kBatch][32]float32
	blocks := len(dst) / 256
	for b0 := 0; b0 < blocks; b0 += kBatch {
		n := min(kBatch, blocks-b0)
		for i := 0; i < n; i++ {
			quant.Q2KFactors(src[(b0+i)*84:], &f[i])
		}
		dequantQ2KAVX2(&src[b0*84], &dst[b0*256], n, &f[0][0])
	}
}

func dequantQ3KVector(src []byte, dst []float32) {
	var f [kBatch][16]float32
	blocks := len(dst) / 256
	for b0 := 0; b0 < blocks; b0 += kBatch {
		n := min(kBatch, blocks-b0)
		for i := 0; i < n; i++ {
			quant.Q3KFactors(src[(b0+i)*110:], &f[i])
		}
		dequantQ3KAVX2(&src[b0*110], &dst[b0*256], n, &f[0][0])
	}
}

//go:noescape
func dequantNib32AVX2(src *byte, dst *float32, blocks int, table *int8, factors *float32, blockBytes int, qsOff int)

func dequantMXFP4Vector(src []byte, dst []float32) {
	const bb = 17
	var f [kBatch * 4]float32
	blocks := len(dst) / 32
	for b0 := 0; b0 < blocks; b0 += len(f) {
		n := min(len(f), blocks-b0)
		for i := 0; i < n; i++ {
			f[i] = quant.E8M0Half(src[(b0+i)*bb])
		}
		dequantNib32AVX2(&src[b0*bb], &dst[b0*32], n, &mxfp4Table[0], &f[0], bb, 1)
	}
}

// halfWidth runs a 16-at-a-time kernel over the whole groups and quant's
// portable path over the last len(dst)%16 values.
func halfWidth(t quant.Type, kernel func(*byte, *float32, int)) func(src []byte, dst []float32) {
	return func(src []byte, dst []float32) {
		n := len(dst) &^ 15
		if n > 0 {
			kernel(&src[0], &dst[0], n/16)
		}
		if n < len(dst) {
			// Sizes were checked by the caller; a tail of whole elements cannot fail.
			_ = quant.Dequantize(t, src[2*n:], dst[n:])
		}
	}
}

// dequantF32LE: on this little-endian machine the bytes are the values.
func dequantF32LE(src []byte, dst []float32) {
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), src)
}

func dequantQ4_0Vector(src []byte, dst []float32) {
	dequantIQ4NLAVX2(&src[0], &dst[0], len(dst)/32, &q4_0Table[0])
}

func dequantQ8_0Vector(src []byte, dst []float32) { dequantQ8_0AVX2(&src[0], &dst[0], len(dst)/32) }

func dequantIQ4NLVector(src []byte, dst []float32) {
	dequantIQ4NLAVX2(&src[0], &dst[0], len(dst)/32, &kvaluesIQ4NLAsm[0])
}

func dequantQ2_0Vector(src []byte, dst []float32) { dequantQ2_0AVX2(&src[0], &dst[0], len(dst)/64) }

func dequantIQ3SVector(src []byte, dst []float32) {
	dequantIQ3SAVX2(&src[0], &dst[0], len(dst)/256, &iq3sGridAsm[0])
}

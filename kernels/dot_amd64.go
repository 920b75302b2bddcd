//go:build amd64 && !noasm

package kernels

import (
	"unsafe"

	"github.com/stratactl/stratactl/quant"
)

// The kernels take n a multiple of 32 (n/32 blocks for Q8_0 and IQ4_NL, n/64
// for Q2_0) and follow the summation order documented in dot.go exactly.
// The extensions each one executes are listed in chooseKernels.

//go:noescape
func dotF32AVX2(w, x *float32, n int) float32

//go:noescape
func dotF32x2AVX2(w0, w1, x *float32, n int, o0, o1 *float32)

//go:noescape
func dotBF16AVX2(w *byte, x *float32, n int) float32

//go:noescape
func dotF16AVX2(w *byte, x *float32, n int) float32

//go:noescape
func dotQ8AVX2(w *byte, x *float32, blocks int) float32

//go:noescape
func dotQ2AVX2(w *byte, x *float32, blocks int) float32

//go:noescape
func dotIQ4NLAVX2(w *byte, x *float32, blocks int, table *int8) float32

//go:noescape
func axpyAVX2(y *float32, a float32, x *float32, n int)

func dotF32Vector(row []byte, x []float32) float32 {
	return dotF32AVX2((*float32)(unsafe.Pointer(&row[0])), &x[0], len(x))
}

func dotBF16Vector(row []byte, x []float32) float32 { return dotBF16AVX2(&row[0], &x[0], len(x)) }

func dotF16Vector(row []byte, x []float32) float32 { return dotF16AVX2(&row[0], &x[0], len(x)) }

func dotQ8_0Vector(row []byte, x []float32) float32 { return dotQ8AVX2(&row[0], &x[0], len(x)/32) }

func dotIQ4NLVector(row []byte, x []float32) float32 {
	return dotIQ4NLAVX2(&row[0], &x[0], len(x)/32, &quant.KvaluesIQ4NL[0])
}

func dotQ2_0Vector(row []byte, x []float32) float32 { return dotQ2AVX2(&row[0], &x[0], len(x)/64) }

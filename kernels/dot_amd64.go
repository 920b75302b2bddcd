//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/klauspost/cpuid/v2"
)

const haveAsm = true

// f16c gates the kernels that convert fp16 in registers.
var f16c = cpuid.CPU.Supports(cpuid.F16C)

// The kernels take n a multiple of 32 (n/32 blocks for Q8_0) and follow the
// summation order documented in dot.go exactly.

//go:noescape
func dotF32AVX2(w, x *float32, n int) float32

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

func dotF32AVX2Bytes(w *byte, x *float32, n int) float32 {
	return dotF32AVX2((*float32)(unsafe.Pointer(w)), x, n)
}

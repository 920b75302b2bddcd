//go:build !amd64 || purego

package kernels

const haveAsm = false

const f16c = false

func dotF32AVX2(w, x *float32, n int) float32            { panic("no asm") }
func dotF32AVX2Bytes(w *byte, x *float32, n int) float32 { panic("no asm") }
func dotBF16AVX2(w *byte, x *float32, n int) float32     { panic("no asm") }
func dotF16AVX2(w *byte, x *float32, n int) float32      { panic("no asm") }
func dotQ8AVX2(w *byte, x *float32, blocks int) float32  { panic("no asm") }
func dotQ2AVX2(w *byte, x *float32, blocks int) float32  { panic("no asm") }
func dotIQ4NLAVX2(w *byte, x *float32, blocks int, table *int8) float32 {
	panic("no asm")
}
func axpyAVX2(y *float32, a float32, x *float32, n int) { panic("no asm") }

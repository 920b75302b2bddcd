//go:build amd64 && !noasm

package kernels

// argmax_amd64.s; n a positive multiple of 8, x[0] not NaN (argmax.go).

//go:noescape
func maxF32AVX(x *float32, n int) float32

//go:noescape
func findF32AVX(x *float32, n int, v float32) int

//go:build amd64 && !noasm

package kernels

// swigluAVX2 is SwiGLU's loop over n values, n a positive multiple of 8
// (swiglu_amd64.s).
//
//go:noescape
func swigluAVX2(h, u *float32, n int)

// expAVX2 is ExpF32's loop over n values, n a positive multiple of 8
// (swiglu_amd64.s).
//
//go:noescape
func expAVX2(dst, x *float32, n int)

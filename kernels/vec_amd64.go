//go:build amd64 && !noasm

package kernels

// vec_amd64.s; n a positive multiple of 8 (vec.go).

//go:noescape
func addAVX(x, o *float32, n int)

//go:noescape
func scaleMulAVX(y, x, w *float32, s float32, n int)

//go:noescape
func shiftScaleAVX(x, v *float32, sub, mul float64, n int)

//go:noescape
func widenAVX(p *float64, x *float32, n int)

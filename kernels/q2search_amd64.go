//go:build amd64 && !noasm

package kernels

// The AVX2 loops follow quant.Q2SearchKernels' arithmetic contract: one
// 8-lane accumulator per sum, lane i taking elements i, i+8, ..., products
// rounded before each addition (VMULPS then VADDPS, never FMA), the same
// 8-to-1 reduction tree, VROUNDPS to nearest even.

//go:noescape
func q2ScoreAVX2(x *float32, inv *float32, n int, out *float32)

//go:noescape
func q2ScoreWeightedAVX2(x, w *float32, inv *float32, n int, out *float32)

//go:noescape
func q2PackAVX2(x *float32, inv float32, qs *byte)

func q2ScoreVector(x, w *[64]float32, inv []float32, out []float32) {
	if len(inv) == 0 {
		return
	}
	_ = out[2*len(inv)-1]
	if w == nil {
		q2ScoreAVX2(&x[0], &inv[0], len(inv), &out[0])
	} else {
		q2ScoreWeightedAVX2(&x[0], &w[0], &inv[0], len(inv), &out[0])
	}
}

func q2PackVector(x *[64]float32, inv float32, qs []byte) {
	_ = qs[15]
	q2PackAVX2(&x[0], inv, &qs[0])
}

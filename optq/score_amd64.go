//go:build amd64 && !noasm

package optq

import "github.com/klauspost/cpuid/v2"

// scoreGroupAVX2 is scoreGroupGo in 4 × 8 lanes: VMULPS then VADDPS (never
// FMA), VROUNDPS to nearest even, the same order of every sum; w is
// blockRows (one row per 8 lanes).
//
//go:noescape
func scoreGroupAVX2(w, invDiag, bandT *float32, s *groupScore)

func scoreGroupVector(w *blockRows, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore) {
	scoreGroupAVX2(&w[0][0], &invDiag[0], &bandT[0], s)
}

//go:noescape
func fp16RoundF16C(v *float32, n int)

func fp16RoundVector(v []float32) {
	n := len(v) &^ 7
	if n > 0 {
		fp16RoundF16C(&v[0], n)
	}
	fp16RoundGo(v[n:])
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		scoreGroup = scoreGroupVector
	}
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.F16C) {
		fp16Round = fp16RoundVector
	}
}

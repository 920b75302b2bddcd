//go:build amd64 && !noasm

package optq

import "github.com/klauspost/cpuid/v2"

// scoreGroupAVX2 is scoreGroupGo in 4 × 8 lanes: VMULPS then VADDPS (never
// FMA), VROUNDPS to nearest even, the same order of every sum.
//
//go:noescape
func scoreGroupAVX2(w, invDiag, bandT *float32, s *groupScore)

func scoreGroupVector(w, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore) {
	scoreGroupAVX2(&w[0], &invDiag[0], &bandT[0], s)
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		scoreGroup = scoreGroupVector
	}
}

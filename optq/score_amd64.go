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

// scoreGroupAVX512 is scoreGroupGo with the 32 lanes in two ZMM
// registers and the columns four at a time (eight independent sums).
//
//go:noescape
func scoreGroupAVX512(w, invDiag, bandT *float32, s *groupScore)

func scoreGroupVector512(w *blockRows, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore) {
	scoreGroupAVX512(&w[0][0], &invDiag[0], &bandT[0], s)
}

//go:noescape
func fp16RoundF16C(v *float32, n int)

// absMaxBits64AVX2 is absMax's bits loop over one group (score_amd64.s).
//
//go:noescape
func absMaxBits64AVX2(v *float32) uint32

func absMaxBits64Vector(v *[group]float32) uint32 { return absMaxBits64AVX2(&v[0]) }

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
		scoreGroupPaths = append(scoreGroupPaths, scorePath{"AVX2", scoreGroupVector})
	}
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		scoreGroup = scoreGroupVector512
		scoreGroupPaths = append(scoreGroupPaths, scorePath{"AVX-512", scoreGroupVector512})
	}
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.F16C) {
		fp16Round = fp16RoundVector
	}
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		absMaxBits64 = absMaxBits64Vector
	}
}

// scoreLanesAVX512 is scoreLaneRowsGo in ZMM registers: scoreGroupAVX512
// with each lane's own row.
//
//go:noescape
func scoreLanesAVX512(w, invDiag, bandT *float32, s *groupScore)

func scoreLanesVector512(w *laneWeights, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore) {
	scoreLanesAVX512(&w[0][0], &invDiag[0], &bandT[0], s)
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		scoreLaneRows = scoreLanesVector512
	}
}

// plainLanesAVX512 is plainLanes in ZMM registers, 16 lanes at a time
// (plain512_amd64.s): each lane's candidates, sums, scores and
// least-squares refinements are quant's q2Searcher.block's on its row
// (the sums by column mod 8 in order, then the same reduction tree; VMULPS
// then VADDPS, never FMA; VRNDSCALEPS to nearest even; the fp16 rounding
// by VCVTPS2PH).
//
//go:noescape
func plainLanesAVX512(w, imp, ratios *float32, n int, out *float32) uint32

func plainLanesVector(w *laneWeights, imp *[group]float32, ratios []float32, out *[scoreLanes]float32) uint32 {
	if len(ratios) == 0 {
		return ^uint32(0)
	}
	return plainLanesAVX512(&w[0][0], &imp[0], &ratios[0], len(ratios), &out[0])
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		plainLanes = plainLanesVector
	}
}

//go:build amd64 && !noasm

package optq

import "github.com/klauspost/cpuid/v2"

// dotLanesAVX2, axpyLanesAVX2, codeStepsAVX2 and groupSumsAVX2 are
// dotLanesGo, axpyLanesGo, codeStepsGo and groupSumsGo with the
// lanes in one YMM register: VMULPS then VADDPS (never FMA), the same
// order of every sum.
//
//go:noescape
func dotLanesAVX2(x *float32, n int, m *laneVec, out *laneVec)

//go:noescape
func axpyLanesAVX2(m *laneVec, a *laneVec, mask *laneMask, x *float32, n int)

//go:noescape
func codeStepsAVX2(xt *float32, n int, r, e, lv *laneVec, sq *float32, cnt int, d *laneVec, lam float32) int

func codeStepsVector(xt []float32, n int, r, e, lv []laneVec, sq []float32, d *laneVec, lam float32) bool {
	k := len(e)
	if k == 0 || n == 0 {
		return codeStepsGo(xt, n, r, e, lv, sq, d, lam)
	}
	_, _, _, _ = xt[k*n-1], r[n-1], lv[k-1], sq[k-1]
	return codeStepsAVX2(&xt[0], n, &r[0], &e[0], &lv[0], &sq[0], k, d, lam) != 0
}

//go:noescape
func groupSumsAVX2(xt *float32, n int, r, e, lv, u *laneVec, cnt int, lam float32, num, l2 *laneVec)

func groupSumsVector(xt []float32, n int, r, e, lv, u []laneVec, lam float32, num, l2 *laneVec) {
	k := len(e)
	if k == 0 || n == 0 {
		groupSumsGo(xt, n, r, e, lv, u, lam, num, l2)
		return
	}
	_, _, _, _ = xt[k*n-1], r[n-1], lv[k-1], u[n-1]
	groupSumsAVX2(&xt[0], n, &r[0], &e[0], &lv[0], &u[0], k, lam, num, l2)
}

func dotLanesVector(x []float32, m []laneVec, out *laneVec) {
	if len(x) == 0 {
		*out = laneVec{}
		return
	}
	_ = m[len(x)-1]
	dotLanesAVX2(&x[0], len(x), &m[0], out)
}

func axpyLanesVector(m []laneVec, a *laneVec, mask *laneMask, x []float32) {
	if len(x) == 0 {
		return
	}
	_ = m[len(x)-1]
	axpyLanesAVX2(&m[0], a, mask, &x[0], len(x))
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		dotLanes = dotLanesVector
		axpyLanes = axpyLanesVector
		codeSteps = codeStepsVector
		groupSums = groupSumsVector
	}
}

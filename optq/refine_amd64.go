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

// wcodeStepsAVX2, wgroupSumsAVX2, wgroupUAVX2, dotPairLanesAVX2, scaleLanesAVX2 and
// scaleColsAVX2 are the weighted refinement's kernels (refine_weighted.go)
// in YMM registers, the same products and sums in the same order.
//
//go:noescape
func wcodeStepsAVX2(blk *laneVec, n int, r, e, lv, sq *float32, cnt int, d, mu float32) int

func wcodeStepsVector(blk []laneVec, r, e, lv, sq []float32, d, mu float32) bool {
	n, k := len(r), len(e)/rowLanes
	if n == 0 || k == 0 || len(e)%rowLanes != 0 {
		return wcodeStepsGo(blk, r, e, lv, sq, d, mu)
	}
	_, _, _ = blk[k*n-1], lv[k*rowLanes-1], sq[k*rowLanes-1]
	return wcodeStepsAVX2(&blk[0], n, &r[0], &e[0], &lv[0], &sq[0], k, d, mu) != 0
}

//go:noescape
func wgroupSumsAVX2(lv, e *float32, cnt int, mu float32, np int, off *int32, coef *float32, num, l2 *float32) int

func wgroupSumsVector(lv, e []float32, mu float32, np int, off []int32, coef []float32, num, l2 *float32) int {
	k := len(lv)
	if k == 0 {
		return 0
	}
	_, _, _ = e[k-1], off[k-1], coef[k-1]
	return wgroupSumsAVX2(&lv[0], &e[0], k, mu, np, &off[0], &coef[0], num, l2)
}

//go:noescape
func wgroupUAVX2(sx *float32, off *int32, coef *float32, cnt int, u *float32, np int)

func wgroupUVector(sx []float32, off []int32, coef []float32, u []float32) {
	np := len(u)
	if np == 0 || np%8 != 0 || len(off) == 0 {
		wgroupUGo(sx, off, coef, u)
		return
	}
	_ = coef[len(off)-1]
	for _, o := range off {
		if o < 0 || int(o)+np > len(sx) {
			panic("optq: wgroupU column out of range")
		}
	}
	wgroupUAVX2(&sx[0], &off[0], &coef[0], len(off), &u[0], np)
}

//go:noescape
func dotPairLanesAVX2(a, b *laneVec, n int, out *laneVec)

func dotPairLanesVector(a, b []laneVec, out *laneVec) {
	if len(a) == 0 {
		*out = laneVec{}
		return
	}
	_ = b[len(a)-1]
	dotPairLanesAVX2(&a[0], &b[0], len(a), out)
}

//go:noescape
func scaleLanesAVX2(m *laneVec, s *float32, n, cnt int, dst *laneVec)

func scaleLanesVector(m []laneVec, s []float32, n int, dst []laneVec) {
	if n == 0 || len(m) == 0 || len(m)%n != 0 {
		scaleLanesGo(m, s, n, dst)
		return
	}
	_, _ = s[n-1], dst[len(m)-1]
	scaleLanesAVX2(&m[0], &s[0], n, len(m)/n, &dst[0])
}

//go:noescape
func scaleColsAVX2(xt, s *float32, n, np, cols int, dst *float32)

func scaleColsVector(xt, s []float32, n, np int, dst []float32) {
	if n == 0 || np < n || len(xt) < n {
		scaleColsGo(xt, s, n, np, dst)
		return
	}
	cols := len(xt) / n
	_, _ = s[n-1], dst[cols*np-1]
	scaleColsAVX2(&xt[0], &s[0], n, np, cols, &dst[0])
}

//go:noescape
func mulAddLanesAVX2(m *laneVec, a *laneVec, mask *laneMask, x *laneVec, n int)

func mulAddLanesVector(m []laneVec, a *laneVec, mask *laneMask, x []laneVec) {
	if len(x) == 0 {
		return
	}
	_ = m[len(x)-1]
	mulAddLanesAVX2(&m[0], a, mask, &x[0], len(x))
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		mulAddLanes = mulAddLanesVector
		wcodeSteps = wcodeStepsVector
		wgroupU = wgroupUVector
		wgroupSums = wgroupSumsVector
		dotPairLanes = dotPairLanesVector
		scaleLanes = scaleLanesVector
		scaleCols = scaleColsVector
		dotLanes = dotLanesVector
		axpyLanes = axpyLanesVector
		codeSteps = codeStepsVector
		groupSums = groupSumsVector
	}
}

// codeStepsAVX512, groupSumsAVX512, dotPairLanesAVX512 and
// mulAddLanesAVX512 are the wide (16-lane) kernels of the low-rank
// refinement in ZMM registers: the 8-lane kernels' products and sums.
//
//go:noescape
func codeStepsAVX512(xt *float32, n int, r, e, lv *wideVec, sq *float32, cnt int, d *wideVec, lam float32) int

//go:noescape
func groupSumsAVX512(xt *float32, n int, r, e, lv, u *wideVec, cnt int, lam float32, num, l2 *wideVec)

//go:noescape
func dotPairLanesAVX512(a, b *wideVec, n int, out *wideVec)

//go:noescape
func mulAddLanesAVX512(m *wideVec, a *wideVec, mask *wideMask, x *wideVec, n int)

//go:noescape
func carryBlockAVX512(et *wideVec, cnt int, cp *float32, n int, z *wideVec, xt *float32, kcnt int, dots *wideVec)

func carryBlockWideVector(et []wideVec, cp []float32, n int, z []wideVec, xt []float32, dots []wideVec) {
	cnt, kcnt := len(et), len(dots)
	if cnt == 0 || kcnt == 0 || n == 0 {
		carryBlockOf(dotLanesOf[wideVec], axpyLanesOf[wideVec, wideMask], et, cp, n, z, xt, dots)
		return
	}
	_, _, _ = cp[cnt*n-1], z[n-1], xt[kcnt*n-1]
	carryBlockAVX512(&et[0], cnt, &cp[0], n, &z[0], &xt[0], kcnt, &dots[0])
}

func codeStepsWideVector(xt []float32, n int, r, e, lv []wideVec, sq []float32, d *wideVec, lam float32) bool {
	k := len(e)
	if k == 0 || n == 0 {
		return false // no column, or no residual to move: nothing moves
	}
	_, _, _, _ = xt[k*n-1], r[n-1], lv[k-1], sq[k-1]
	return codeStepsAVX512(&xt[0], n, &r[0], &e[0], &lv[0], &sq[0], k, d, lam) != 0
}

func groupSumsWideVector(xt []float32, n int, r, e, lv, u []wideVec, lam float32, num, l2 *wideVec) {
	k := len(e)
	if k == 0 || n == 0 {
		groupSumsOf(dotLanesOf[wideVec], axpyLanesOf[wideVec, wideMask], xt, n, r, e, lv, u, lam, num, l2)
		return
	}
	_, _, _, _ = xt[k*n-1], r[n-1], lv[k-1], u[n-1]
	groupSumsAVX512(&xt[0], n, &r[0], &e[0], &lv[0], &u[0], k, lam, num, l2)
}

func dotPairWideVector(a, b []wideVec, out *wideVec) {
	if len(a) == 0 {
		*out = wideVec{}
		return
	}
	_ = b[len(a)-1]
	dotPairLanesAVX512(&a[0], &b[0], len(a), out)
}

func mulAddWideVector(m []wideVec, a *wideVec, mask *wideMask, x []wideVec) {
	if len(x) == 0 {
		return
	}
	_ = m[len(x)-1]
	mulAddLanesAVX512(&m[0], a, mask, &x[0], len(x))
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		codeStepsWide = codeStepsWideVector
		groupSumsWide = groupSumsWideVector
		dotPairWide = dotPairWideVector
		mulAddWide = mulAddWideVector
		carryBlockWide = carryBlockWideVector
		useWide = true
	}
}

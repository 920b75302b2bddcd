package optq

import "unsafe"

// The low-rank refinement runs rowLanes rows at once, one row per lane:
// every lane does exactly what descend does on its row with lowQuad (the
// same products, sums and their order, kernels.DotF32's for every dot
// product), so the codes and scales are descend's, bit for bit. A row
// whose pass changed nothing would change nothing in a further pass (its
// state is the same), so lanes simply run until no row changes.

// rowLanes is the number of rows the lane refinement takes at once.
const rowLanes = 8

// laneVec is one value per lane.
type laneVec = [rowLanes]float32

// laneMask selects lanes: all ones or zero.
type laneMask = [rowLanes]uint32

// wideLanes is the rows the low-rank refinement takes at once where the
// CPU has 16-lane vectors (useWide): the same steps in every lane, so the
// same codes and scales as rowLanes at a time.
const wideLanes = 16

type wideVec = [wideLanes]float32

type wideMask = [wideLanes]uint32

// lanes and masks are the two lane widths' vectors and masks.
type lanes interface{ laneVec | wideVec }

type masks interface{ laneMask | wideMask }

// dotLanes sets out[l] = kernels.DotF32(x, column l of m) for x of n values
// and m n rows of rowLanes lanes, in DotF32's order.
var dotLanes = dotLanesGo

// axpyLanes adds a[l]·x[t] to m[t][l] (the product rounded, then the add,
// as kernels.Axpy) in the lanes where mask is set, for t < len(x).
var axpyLanes = axpyLanesGo

// dotLanesGo is the portable definition of dotLanes.
func dotLanesGo(x []float32, m []laneVec, out *laneVec) { dotLanesOf(x, m, out) }

func axpyLanesGo(m []laneVec, a *laneVec, mask *laneMask, x []float32) { axpyLanesOf(m, a, mask, x) }

// dotLanesOf is dotLanes at either width: 4 accumulators of 8 positions
// over chunks of 32, (a0+a1)+(a2+a3), the 8 positions folded as
// ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)), then the tail one element at a time.
func dotLanesOf[V lanes](x []float32, m []V, out *V) {
	n := len(x)
	m = m[:n]
	chunks := n / 32
	var s [8]V
	for p := 0; p < 8; p++ {
		var a [4]V
		for c := 0; c < chunks; c++ {
			for q := 0; q < 4; q++ {
				i := 32*c + 8*q + p
				xi, mi := x[i], m[i]
				for l := 0; l < len(mi); l++ {
					a[q][l] += float32(xi * mi[l])
				}
			}
		}
		for l := 0; l < len(s[p]); l++ {
			s[p][l] = (a[0][l] + a[1][l]) + (a[2][l] + a[3][l])
		}
	}
	var r V
	for l := 0; l < len(r); l++ {
		r[l] = ((s[0][l] + s[4][l]) + (s[2][l] + s[6][l])) + ((s[1][l] + s[5][l]) + (s[3][l] + s[7][l]))
	}
	for i := 32 * chunks; i < n; i++ {
		xi, mi := x[i], m[i]
		for l := 0; l < len(r); l++ {
			r[l] += float32(xi * mi[l])
		}
	}
	*out = r
}

func axpyLanesOf[V lanes, M masks](m []V, a *V, mask *M, x []float32) {
	m = m[:len(x)]
	av, mk := *a, *mask
	for t, xt := range x {
		mt := &m[t]
		for l := 0; l < len(av); l++ {
			if mk[l] != 0 {
				(*mt)[l] += float32(av[l] * xt)
			}
		}
	}
}

// laneRows is the refinement state of one block of rows, one per lane.
type laneRows[V lanes, M masks] struct {
	e    []V // [cols]: the rows' errors t − ŵ
	lv   []V // [cols]: the rows' levels -1..2
	sc   []V // [groups]
	r, u []V // [n]: X e, and a group's X l
	k    *laneKernels[V, M]
}

// laneKernels are one width's kernels of the low-rank refinement.
type laneKernels[V lanes, M masks] struct {
	codeSteps func(xt []float32, n int, r, e, lv []V, sq []float32, d *V, lam float32) bool
	groupSums func(xt []float32, n int, r, e, lv, u []V, lam float32, num, l2 *V)
	dotPair   func(a, b []V, out *V)
	mulAdd    func(m []V, a *V, mask *M, x []V)
}

// useWide makes refineLow take wideLanes rows at once (set where the wide
// kernels run in vectors; a variable so that tests can run both widths).
var useWide = false

// The wide kernels: portable definitions, replaced where the CPU has them.
var (
	codeStepsWide = func(xt []float32, n int, r, e, lv []wideVec, sq []float32, d *wideVec, lam float32) bool {
		return codeStepsOf(dotLanesOf[wideVec], axpyLanesOf[wideVec, wideMask], xt, n, r, e, lv, sq, d, lam)
	}
	groupSumsWide = func(xt []float32, n int, r, e, lv, u []wideVec, lam float32, num, l2 *wideVec) {
		groupSumsOf(dotLanesOf[wideVec], axpyLanesOf[wideVec, wideMask], xt, n, r, e, lv, u, lam, num, l2)
	}
	dotPairWide = dotPairLanesOf[wideVec]
	mulAddWide  = mulAddLanesOf[wideVec, wideMask]
)

// refineLow is refine for a low-rank H, a block of rows at a time.
func (q *quantized) refineLow(t []float32, lr *lowRank, passes int) {
	if useWide {
		refineLowBy(q, t, lr, passes, &laneKernels[wideVec, wideMask]{codeStepsWide, groupSumsWide, dotPairWide, mulAddWide})
		return
	}
	refineLowBy(q, t, lr, passes, &laneKernels[laneVec, laneMask]{codeSteps, groupSums, dotPairLanes, mulAddLanes})
}

func refineLowBy[V lanes, M masks](q *quantized, t []float32, lr *lowRank, passes int, k *laneKernels[V, M]) {
	cols, groups, n := q.cols, q.cols/group, lr.n
	b := &laneRows[V, M]{e: make([]V, cols), lv: make([]V, cols), sc: make([]V, groups),
		r: make([]V, n), u: make([]V, n), k: k}
	width := len(b.e[0])
	// The rows' errors row by row (for X e), then into the lanes a group
	// at a time (a group's lanes stay in cache while every row fills them).
	es, re := make([]float32, width*cols), make([]float32, n)
	// Where a block fills all 16 lanes, the levels go row by row as
	// floats (ls) and into and out of the lanes by 16 × 16 tiles.
	tiles := width == 16
	var ls, beF, blF []float32
	if tiles {
		ls = make([]float32, width*cols)
		beF = unsafe.Slice((*float32)(unsafe.Pointer(&b.e[0])), cols*width)
		blF = unsafe.Slice((*float32)(unsafe.Pointer(&b.lv[0])), cols*width)
	}
	for r0 := 0; r0 < q.rows; r0 += width {
		nr := min(width, q.rows-r0)
		full := tiles && nr == width
		clear(b.sc)
		if !full {
			clear(b.lv)
			clear(b.e)
		}
		for l := 0; l < nr; l++ {
			r := r0 + l
			lv := q.levels[r*cols : (r+1)*cols]
			sc := q.scales[r*groups : (r+1)*groups]
			tr := t[r*cols : (r+1)*cols]
			e := es[l*cols : (l+1)*cols]
			for g, d := range sc {
				j0 := g * group
				eg, tg, lg := (*[group]float32)(e[j0:]), (*[group]float32)(tr[j0:]), (*[group]int8)(lv[j0:])
				if full {
					lf := (*[group]float32)(ls[l*cols+j0:])
					for i := range eg {
						lf[i] = float32(lg[i])
						eg[i] = tg[i] - d*lf[i]
					}
				} else {
					for i := range eg {
						eg[i] = tg[i] - d*float32(lg[i])
					}
				}
				b.sc[g][l] = d
			}
			dotMany(re, e, lr.x, cols) // X e
			for k, v := range re {
				b.r[k][l] = v
			}
		}
		for j0 := 0; full && j0 < cols; j0 += 16 {
			transpose16(beF[j0*width:], width, es[j0:], cols)
			transpose16(blF[j0*width:], width, ls[j0:], cols)
		}
		for g := 0; !full && g < groups; g++ {
			j0 := g * group
			be, bl := (*[group]V)(b.e[j0:]), (*[group]V)(b.lv[j0:])
			for l := 0; l < nr; l++ {
				eg, lg := (*[group]float32)(es[l*cols+j0:]), (*[group]int8)(q.levels[(r0+l)*cols+j0:])
				for i := range eg {
					be[i][l] = eg[i]
					bl[i][l] = float32(lg[i])
				}
			}
		}
		for l := nr; l < width; l++ { // idle lanes: scale 0, no moves
			for k := range b.r {
				b.r[k][l] = 0
			}
		}
		for range passes {
			if !b.pass(lr) {
				break
			}
		}
		if full {
			for j0 := 0; j0 < cols; j0 += 16 {
				transpose16(ls[j0:], cols, blF[j0*width:], width)
			}
			for l := 0; l < nr; l++ {
				out, lf := q.levels[(r0+l)*cols:(r0+l+1)*cols], ls[l*cols:(l+1)*cols]
				for i, v := range lf {
					out[i] = int8(v)
				}
			}
		}
		for g := 0; !full && g < groups; g++ {
			j0 := g * group
			bl := (*[group]V)(b.lv[j0:])
			for l := 0; l < nr; l++ {
				var lg [group]int8
				for i := range lg {
					lg[i] = int8(bl[i][l])
				}
				*(*[group]int8)(q.levels[(r0+l)*cols+j0:]) = lg
			}
		}
		for l := 0; l < nr; l++ {
			r := r0 + l
			for g := 0; g < groups; g++ {
				q.scales[r*groups+g] = b.sc[g][l]
			}
		}
	}
}

// pass is one of descend's passes in every lane; it reports whether any
// lane changed.
func (b *laneRows[V, M]) pass(lr *lowRank) bool {
	n := lr.n
	changed := false
	var zero V
	for g := range b.sc {
		d := &b.sc[g]
		if *d == zero {
			continue
		}
		j0, j1 := g*group, (g+1)*group
		if b.k.codeSteps(lr.xt[j0*n:j1*n], n, b.r, b.e[j0:j1], b.lv[j0:j1], lr.sq[j0:j1], d, lr.lambdaR) {
			changed = true
		}
	}
	for g := range b.sc {
		if b.group(lr, g) {
			changed = true
		}
	}
	return changed
}

// codeSteps is descend's code step for the columns of one group in every
// lane: xt their inputs ([k][n]), e, lv and sq their errors, levels and
// ‖x_j‖², d the group's scales and lam the refinement's damping, r the
// rows' output errors X e. It reports whether any lane moved a code.
var codeSteps = codeStepsGo

// codeStepsGo is the portable definition of codeSteps.
func codeStepsGo(xt []float32, n int, r, e, lv []laneVec, sq []float32, d *laneVec, lam float32) bool {
	return codeStepsOf(dotLanes, axpyLanes, xt, n, r, e, lv, sq, d, lam)
}

// codeStepsOf is codeSteps at either width with the lanes' dot and axpy.
func codeStepsOf[V lanes, M masks](dot func([]float32, []V, *V), axpy func([]V, *V, *M, []float32), xt []float32, n int, r, e, lv []V, sq []float32, d *V, lam float32) bool {
	var dt, coef V
	var mask M
	moved := false
	for k := range e {
		x := xt[k*n : (k+1)*n]
		hjj := lam + sq[k]
		dot(x, r, &dt)
		ej, lj := &e[k], &lv[k]
		any := false
		for l := 0; l < len(mask); l++ {
			mask[l] = 0
			if (*d)[l] == 0 {
				continue
			}
			bestC, bestD, bestL := levelStep((*d)[l], (*lj)[l], hjj, lam*(*ej)[l]+dt[l])
			if bestC < 0 {
				(*ej)[l] -= bestD
				(*lj)[l] = bestL
				coef[l] = -bestD
				mask[l] = ^uint32(0)
				any = true
			}
		}
		if any {
			axpy(r, &coef, &mask, x)
			moved = true
		}
	}
	return moved
}

// group is descend's scale step of group g in every lane (lowQuad.group,
// then the move).
func (b *laneRows[V, M]) group(lr *lowRank, g int) bool {
	n := lr.n
	lam := lr.lambdaR
	clear(b.u)
	var num, l2 V
	j0, j1 := g*group, (g+1)*group
	b.k.groupSums(lr.xt[j0*n:j1*n], n, b.r, b.e[j0:j1], b.lv[j0:j1], b.u, lam, &num, &l2)
	var uu V
	b.k.dotPair(b.u, b.u, &uu)
	// The lanes whose scale moves by dd: e_j −= dd·l_j, r += (−dd)·u.
	var neg V
	var mask M
	changed := false
	for l := 0; l < len(neg); l++ {
		d := b.sc[g][l]
		if nd, ok := scaleStep(d, num[l], lam*l2[l]+uu[l]); ok {
			neg[l], mask[l] = -(nd - d), ^uint32(0)
			b.sc[g][l] = nd
			changed = true
		}
	}
	if changed { // e + (−dd)·l is e − dd·l, bit for bit
		b.k.mulAdd(b.e[j0:j1], &neg, &mask, b.lv[j0:j1])
		b.k.mulAdd(b.r, &neg, &mask, b.u)
	}
	return changed
}

// mulAddLanes adds a[l]·x[t][l] to m[t][l] (the product rounded, then the
// add) in the lanes where mask is set, for t < len(x).
var mulAddLanes = mulAddLanesGo

func mulAddLanesGo(m []laneVec, a *laneVec, mask *laneMask, x []laneVec) {
	mulAddLanesOf(m, a, mask, x)
}

func mulAddLanesOf[V lanes, M masks](m []V, a *V, mask *M, x []V) {
	m = m[:len(x)]
	av, mk := *a, *mask
	for t := range x {
		mt, xt := &m[t], x[t]
		for l := 0; l < len(av); l++ {
			if mk[l] != 0 {
				(*mt)[l] += float32(av[l] * xt[l])
			}
		}
	}
}

// groupSums is lowQuad.group's sums for one group in every lane: for each
// column j whose level l is not 0 in a lane, in column order, u += l·x_j
// (kernels.Axpy's rounding), num += l·(lam·e_j + x_jᵀr) and l2 += l·l.
var groupSums = groupSumsGo

// groupSumsGo is the portable definition of groupSums.
func groupSumsGo(xt []float32, n int, r, e, lv, u []laneVec, lam float32, num, l2 *laneVec) {
	groupSumsOf(dotLanes, axpyLanes, xt, n, r, e, lv, u, lam, num, l2)
}

func groupSumsOf[V lanes, M masks](dot func([]float32, []V, *V), axpy func([]V, *V, *M, []float32), xt []float32, n int, r, e, lv, u []V, lam float32, num, l2 *V) {
	var dt, coef V
	var mask M
	for k := range e {
		lk := lv[k]
		any := false
		for l := 0; l < len(mask); l++ {
			mask[l] = 0
			if lk[l] != 0 {
				coef[l] = lk[l]
				mask[l] = ^uint32(0)
				any = true
			}
		}
		if !any {
			continue
		}
		x := xt[k*n : (k+1)*n]
		axpy(u, &coef, &mask, x)
		dot(x, r, &dt)
		for l := 0; l < len(dt); l++ {
			if fl := lk[l]; fl != 0 {
				(*num)[l] += fl * (lam*e[k][l] + dt[l])
				(*l2)[l] += fl * fl
			}
		}
	}
}

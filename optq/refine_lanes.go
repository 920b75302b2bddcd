package optq

import (
	"github.com/stratactl/stratactl/kernels"
)

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

// dotLanes sets out[l] = kernels.DotF32(x, column l of m) for x of n values
// and m n rows of rowLanes lanes, in DotF32's order.
var dotLanes = dotLanesGo

// axpyLanes adds a[l]·x[t] to m[t][l] (the product rounded, then the add,
// as kernels.Axpy) in the lanes where mask is set, for t < len(x).
var axpyLanes = axpyLanesGo

// dotLanesGo is the portable definition of dotLanes: 4 accumulators of 8
// positions over chunks of 32, (a0+a1)+(a2+a3), the 8 positions folded as
// ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)), then the tail one element at a time.
func dotLanesGo(x []float32, m []laneVec, out *laneVec) {
	n := len(x)
	m = m[:n]
	chunks := n / 32
	var s [8]laneVec
	for p := 0; p < 8; p++ {
		var a [4]laneVec
		for c := 0; c < chunks; c++ {
			for q := 0; q < 4; q++ {
				i := 32*c + 8*q + p
				xi, mi := x[i], &m[i]
				for l := range a[q] {
					a[q][l] += float32(xi * mi[l])
				}
			}
		}
		for l := range s[p] {
			s[p][l] = (a[0][l] + a[1][l]) + (a[2][l] + a[3][l])
		}
	}
	var r laneVec
	for l := range r {
		r[l] = ((s[0][l] + s[4][l]) + (s[2][l] + s[6][l])) + ((s[1][l] + s[5][l]) + (s[3][l] + s[7][l]))
	}
	for i := 32 * chunks; i < n; i++ {
		xi, mi := x[i], &m[i]
		for l := range r {
			r[l] += float32(xi * mi[l])
		}
	}
	*out = r
}

func axpyLanesGo(m []laneVec, a *laneVec, mask *laneMask, x []float32) {
	m = m[:len(x)]
	for t, xt := range x {
		mt := &m[t]
		for l := range mt {
			if mask[l] != 0 {
				mt[l] += float32(a[l] * xt)
			}
		}
	}
}

// laneRows is the refinement state of one block of rowLanes rows.
type laneRows struct {
	e    []laneVec // [cols]: the rows' errors t − ŵ
	lv   []laneVec // [cols]: the rows' levels -1..2
	sc   []laneVec // [groups]
	r, u []laneVec // [n]: X e, and a group's X l
}

// refineLow is refine for a low-rank H, rowLanes rows at a time.
func (q *quantized) refineLow(t []float32, lr *lowRank, passes int) {
	cols, groups, n := q.cols, q.cols/group, lr.n
	b := &laneRows{e: make([]laneVec, cols), lv: make([]laneVec, cols), sc: make([]laneVec, groups),
		r: make([]laneVec, n), u: make([]laneVec, n)}
	e := make([]float32, cols)
	for r0 := 0; r0 < q.rows; r0 += rowLanes {
		nr := min(rowLanes, q.rows-r0)
		clear(b.lv)
		clear(b.sc)
		clear(b.e)
		for l := 0; l < nr; l++ {
			r := r0 + l
			lv := q.levels[r*cols : (r+1)*cols]
			sc := q.scales[r*groups : (r+1)*groups]
			tr := t[r*cols : (r+1)*cols]
			for g, d := range sc {
				j0 := g * group
				eg, tg, lg := (*[group]float32)(e[j0:]), (*[group]float32)(tr[j0:]), (*[group]int8)(lv[j0:])
				be, bl := b.e[j0:j0+group], b.lv[j0:j0+group]
				for i := range eg {
					eg[i] = tg[i] - d*float32(lg[i])
					be[i][l] = eg[i]
					bl[i][l] = float32(lg[i])
				}
			}
			for g, d := range sc {
				b.sc[g][l] = d
			}
			for k := 0; k < n; k++ {
				b.r[k][l] = kernels.DotF32(lr.x[k*cols:(k+1)*cols], e)
			}
		}
		for l := nr; l < rowLanes; l++ { // idle lanes: scale 0, no moves
			for k := range b.r {
				b.r[k][l] = 0
			}
		}
		for range passes {
			if !b.pass(lr) {
				break
			}
		}
		out := q.levels[r0*cols : (r0+nr)*cols]
		for j := range b.lv {
			lj := &b.lv[j]
			for l := 0; l < nr; l++ {
				out[l*cols+j] = int8(lj[l])
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
func (b *laneRows) pass(lr *lowRank) bool {
	n := lr.n
	changed := false
	for g := range b.sc {
		d := &b.sc[g]
		if *d == (laneVec{}) {
			continue
		}
		j0, j1 := g*group, (g+1)*group
		if codeSteps(lr.xt[j0*n:j1*n], n, b.r, b.e[j0:j1], b.lv[j0:j1], lr.sq[j0:j1], d, lr.lambdaR) {
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
	var dot, coef laneVec
	var mask laneMask
	moved := false
	for k := range e {
		x := xt[k*n : (k+1)*n]
		hjj := lam + sq[k]
		dotLanes(x, r, &dot)
		ej, lj := &e[k], &lv[k]
		any := false
		for l := range rowLanes {
			mask[l] = 0
			if d[l] == 0 {
				continue
			}
			bestC, bestD, bestL := levelStep(d[l], lj[l], hjj, lam*ej[l]+dot[l])
			if bestC < 0 {
				ej[l] -= bestD
				lj[l] = bestL
				coef[l] = -bestD
				mask[l] = ^uint32(0)
				any = true
			}
		}
		if any {
			axpyLanes(r, &coef, &mask, x)
			moved = true
		}
	}
	return moved
}

// group is descend's scale step of group g in every lane (lowQuad.group,
// then the move).
func (b *laneRows) group(lr *lowRank, g int) bool {
	n := lr.n
	lam := lr.lambdaR
	clear(b.u)
	var num, l2 laneVec
	j0, j1 := g*group, (g+1)*group
	groupSums(lr.xt[j0*n:j1*n], n, b.r, b.e[j0:j1], b.lv[j0:j1], b.u, lam, &num, &l2)
	var uu laneVec
	dotPairLanes(b.u, b.u, &uu)
	// The lanes whose scale moves by dd: e_j −= dd·l_j, r += (−dd)·u.
	var neg laneVec
	var mask laneMask
	changed := false
	for l := range rowLanes {
		d := b.sc[g][l]
		if nd, ok := scaleStep(d, num[l], lam*l2[l]+uu[l]); ok {
			neg[l], mask[l] = -(nd - d), ^uint32(0)
			b.sc[g][l] = nd
			changed = true
		}
	}
	if changed { // e + (−dd)·l is e − dd·l, bit for bit
		mulAddLanes(b.e[j0:j1], &neg, &mask, b.lv[j0:j1])
		mulAddLanes(b.r, &neg, &mask, b.u)
	}
	return changed
}

// mulAddLanes adds a[l]·x[t][l] to m[t][l] (the product rounded, then the
// add) in the lanes where mask is set, for t < len(x).
var mulAddLanes = mulAddLanesGo

func mulAddLanesGo(m []laneVec, a *laneVec, mask *laneMask, x []laneVec) {
	m = m[:len(x)]
	for t := range x {
		mt, xt := &m[t], &x[t]
		for l := range mt {
			if mask[l] != 0 {
				mt[l] += float32(a[l] * xt[l])
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
	var dot, coef laneVec
	var mask laneMask
	for k := range e {
		lk := &lv[k]
		any := false
		for l := range rowLanes {
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
		axpyLanes(u, &coef, &mask, x)
		dotLanes(x, r, &dot)
		for l := range rowLanes {
			if fl := lk[l]; fl != 0 {
				num[l] += fl * (lam*e[k][l] + dot[l])
				l2[l] += fl * fl
			}
		}
	}
}

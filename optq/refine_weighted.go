package optq

import (
	"github.com/stratactl/stratactl/kernels"
)

// The weighted refinement (refineWeightedWith) in lanes. Its rows cannot
// go rowLanes at a time as the low-rank refinement's do (the expert-output
// refinement refines one row at a time, each against the residual the rows
// before it left), so the lanes hold columns instead: rowLanes consecutive
// columns of one row, whose gradients are rowLanes dot products of the
// row's residual r with their own columns sx_j = s ⊙ x_j, each in
// kernels.DotF32's order (dotLanes: r broadcast, the columns in lanes).
// All of them hold while no code moves; a code step that moves (rare after
// the first pass) changes r, so the block's later lanes are computed again
// from the new r before they are decided. Every lane thus decides on the
// gradient descend computes row by row with weightedQuad, and the codes,
// scales, error and residual are descend's, bit for bit.

// fill lays out the row's columns sx_j = s ⊙ x_j (s the row's n weights, x
// the n×cols inputs and xt their transpose) in q's two layouts, and their
// squared norms ‖sx_j‖² in q.sq. x's own blocks (q.xB) are laid out on the
// first call: every call on one q passes the same inputs x, xt.
func (q *weightedQuad) fill(x, xt, s []float32) {
	n, cols := q.n, len(q.sq)
	if q.xsrc != &x[0] {
		blocks(x, n, cols, q.xB)
		q.xsrc = &x[0]
	}
	scaleLanes(q.xB, s, n, q.sxB)
	scaleCols(xt, s, n, q.np, q.sx)
	for k := 0; k < cols/rowLanes; k++ {
		blk := q.sxB[k*n : (k+1)*n]
		dotPairLanes(blk, blk, (*laneVec)(q.sq[k*rowLanes:(k+1)*rowLanes]))
	}
}

// descendLanes is descend(lv, sc, e, q, passes) on the row fill and reset
// have set up.
func (q *weightedQuad) descendLanes(lv []int8, sc, e []float32, passes int) {
	n, np := q.n, q.np
	lf := q.lf
	for j, l := range lv {
		lf[j] = float32(l)
	}
	for range passes {
		changed := false
		for b, d := range sc {
			if d == 0 {
				continue
			}
			j0, j1 := b*group, (b+1)*group
			if wcodeSteps(q.sxB[j0/rowLanes*n:j1/rowLanes*n], q.r, e[j0:j1], lf[j0:j1], q.sq[j0:j1], d, q.mu) {
				changed = true
			}
		}
		for b, d := range sc {
			j0, j1 := b*group, (b+1)*group
			// weightedQuad.group: u = Σ l_j sx_j over the codes not 0,
			// in column order, and num, l2 in the same order.
			var num, l2 float32
			k := wgroupSums(lf[j0:j1], e[j0:j1], q.mu, np, q.off[:group], q.coef[:group], &num, &l2)
			u := q.u[:np]
			wgroupU(q.sx[j0*np:], q.off[:k], q.coef[:k], u)
			num += kernels.DotF32(u[:n], q.r)
			den := kernels.DotF32(u[:n], u[:n]) + q.mu*l2
			if nd, ok := scaleStep(d, num, den); ok {
				dd := nd - d
				kernels.Axpy(e[j0:j1], -dd, lf[j0:j1]) // e + (−dd)·l is e − dd·l
				kernels.Axpy(q.r, -dd, u[:n])
				sc[b] = nd
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for j, l := range lf {
		lv[j] = int8(l)
	}
}

// wcodeSteps is descend's code step, with weightedQuad's gradient
// mu·e_j + sx_jᵀr and diagonal mu + sq_j, for the columns of one group of
// one row in order: blk holds them in blocks of rowLanes ([block][n]), r is
// the row's residual (n values), e, lv and sq the columns' errors, levels
// and ‖sx_j‖², d the group's scale (not 0). A moved code updates e, lv and
// r (kernels.Axpy's rounding); it reports whether any moved.
var wcodeSteps = wcodeStepsGo

// wcodeStepsGo is the portable definition of wcodeSteps.
func wcodeStepsGo(blk []laneVec, r, e, lv, sq []float32, d, mu float32) bool {
	n := len(r)
	moved := false
	var dot laneVec
	for k := 0; k*rowLanes < len(e); k++ {
		m := blk[k*n : (k+1)*n]
		dotLanes(r, m, &dot)
		for l := 0; l < rowLanes; l++ {
			j := k*rowLanes + l
			bestC, bestD, bestL := levelStep(d, lv[j], mu+sq[j], mu*e[j]+dot[l])
			if bestC < 0 {
				e[j] -= bestD
				lv[j] = bestL
				a := -bestD
				for t := range r {
					r[t] += float32(a * m[t][l])
				}
				moved = true
				// The later lanes' gradients, from the new residual.
				dotLanes(r, m, &dot)
			}
		}
	}
	return moved
}

// wgroupSums is weightedQuad.group's sums for the codes lv of one group
// (e their errors): in column order, over the codes not 0, l2 += l·l and
// num += l·mu·e_j, and the column's offset j·np and l appended to off and
// coef (room for every column); it returns how many were. *num and *l2
// start at +0.
var wgroupSums = wgroupSumsGo

// wgroupSumsGo is the portable definition of wgroupSums.
func wgroupSumsGo(lv, e []float32, mu float32, np int, off []int32, coef []float32, num, l2 *float32) int {
	k := 0
	for i, l := range lv {
		if l == 0 {
			continue
		}
		off[k], coef[k] = int32(i*np), l
		k++
		*l2 += l * l
		*num += l * mu * e[i]
	}
	return k
}

// wgroupU sets u[t] = Σ_i coef[i]·sx[off[i]+t] for t < len(u) (a multiple
// of 8), the terms added in order i to 0 (kernels.Axpy's rounding: the
// product rounded, then the add).
var wgroupU = wgroupUGo

// wgroupUGo is the portable definition of wgroupU.
func wgroupUGo(sx []float32, off []int32, coef []float32, u []float32) {
	clear(u)
	for i, o := range off {
		a, col := coef[i], sx[o:int(o)+len(u)]
		for t := range u {
			u[t] += float32(a * col[t])
		}
	}
}

// dotPairLanes sets out[l] = kernels.DotF32(column l of a, column l of b)
// for a and b of equal length, lane by lane in DotF32's order.
var dotPairLanes = dotPairLanesGo

// dotPairLanesGo is the portable definition of dotPairLanes: DotF32 of
// each lane's two columns.
func dotPairLanesGo(a, b []laneVec, out *laneVec) { dotPairLanesOf(a, b, out) }

func dotPairLanesOf[V lanes](a, b []V, out *V) {
	ca, cb := make([]float32, len(a)), make([]float32, len(a))
	var r V
	for l := 0; l < len(r); l++ {
		for t := range a {
			ca[t], cb[t] = a[t][l], b[t][l]
		}
		r[l] = kernels.DotF32(ca, cb)
	}
	*out = r
}

// blocks sets dst[k·n+t][l] = x[t·cols + rowLanes·k + l] for the n rows t
// of x (cols long, a multiple of rowLanes) and the blocks k.
func blocks(x []float32, n, cols int, dst []laneVec) {
	for t := 0; t < n; t++ {
		xr := x[t*cols : (t+1)*cols]
		for k := 0; k < cols/rowLanes; k++ {
			copy(dst[k*n+t][:], xr[k*rowLanes:])
		}
	}
}

// scaleLanes sets dst[k·n+t][l] = s[t]·m[k·n+t][l] for t < n and every
// block k of m.
var scaleLanes = scaleLanesGo

// scaleLanesGo is the portable definition of scaleLanes.
func scaleLanesGo(m []laneVec, s []float32, n int, dst []laneVec) {
	for i := range m {
		st, d := s[i%n], &dst[i]
		for l, v := range m[i] {
			d[l] = st * v
		}
	}
}

// scaleCols sets dst[j·np+t] = s[t]·xt[j·n+t] for t < n and 0 for
// n <= t < np, for every column j of xt (n values each).
var scaleCols = scaleColsGo

// scaleColsGo is the portable definition of scaleCols.
func scaleColsGo(xt, s []float32, n, np int, dst []float32) {
	for j := 0; j*n < len(xt); j++ {
		col, out := xt[j*n:(j+1)*n], dst[j*np:(j+1)*np]
		for t, v := range col {
			out[t] = s[t] * v
		}
		clear(out[n:])
	}
}

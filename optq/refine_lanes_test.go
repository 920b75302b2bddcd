package optq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/kernels"
)

func randLanes(rng *rand.Rand, n int) []laneVec { return randLanesOf[laneVec](rng, n) }

func randLanesOf[V lanes](rng *rand.Rand, n int) []V {
	m := make([]V, n)
	for t := range m {
		for l := 0; l < len(m[t]); l++ {
			m[t][l] = float32(rng.NormFloat64())
		}
	}
	return m
}

func sameBits[V lanes](a, b []V) bool {
	for t := range a {
		for l := 0; l < len(a[t]); l++ {
			if math.Float32bits(a[t][l]) != math.Float32bits(b[t][l]) {
				return false
			}
		}
	}
	return true
}

// guardedLanes is n lanes rows between two guard rows.
func guardedLanes(rng *rand.Rand, n int) (all, m []laneVec) { return guardedLanesOf[laneVec](rng, n) }

func guardedLanesOf[V lanes](rng *rand.Rand, n int) (all, m []V) {
	all = randLanesOf[V](rng, n+2)
	for l := 0; l < len(all[0]); l++ {
		all[0][l] = math.Float32frombits(0x7fc0dead)
		all[n+1][l] = math.Float32frombits(0x7fc0dead)
	}
	return all, all[1 : n+1]
}

func guardsIntact[V lanes](all []V) bool {
	n := len(all) - 2
	for l := 0; l < len(all[0]); l++ {
		if math.Float32bits(all[0][l]) != 0x7fc0dead || math.Float32bits(all[n+1][l]) != 0x7fc0dead {
			return false
		}
	}
	return true
}

var laneLengths = []int{1, 2, 7, 31, 32, 33, 40, 63, 64, 65, 96, 130}

// TestDotLanesIsDotF32: each lane of dotLanes (this CPU's path and the
// portable one) is kernels.DotF32 of x and that lane's column, bit for bit.
func TestDotLanesIsDotF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range laneLengths {
		x := randMatrix(rng, n, 1)
		all, m := guardedLanes(rng, n)
		var got, port laneVec
		dotLanes(x, m, &got)
		dotLanesGo(x, m, &port)
		col := make([]float32, n)
		for l := range got {
			for k := range col {
				col[k] = m[k][l]
			}
			want := kernels.DotF32(x, col)
			if math.Float32bits(got[l]) != math.Float32bits(want) || math.Float32bits(port[l]) != math.Float32bits(want) {
				t.Fatalf("n %d lane %d: %v (portable %v), DotF32 %v", n, l, got[l], port[l], want)
			}
		}
		if !guardsIntact(all) {
			t.Fatalf("n %d: guard overwritten", n)
		}
	}
}

// TestLaneKernelsPathsIdentical: axpyLanes, mulAddLanes, codeSteps and
// groupSums (this CPU's paths) give the portable path's bits and write
// nothing past their rows; so do the wide kernels (codeStepsWide,
// groupSumsWide, dotPairWide, mulAddWide) against their portable
// definitions.
func TestLaneKernelsPathsIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range laneLengths {
		x := randMatrix(rng, n, 1)
		a := randLanes(rng, 1)[0]
		mk := randMask[laneMask](rng)
		all1, m1 := guardedLanes(rng, n)
		all2 := append([]laneVec(nil), all1...)
		m2 := all2[1 : n+1]
		axpyLanes(m1, &a, &mk, x)
		axpyLanesGo(m2, &a, &mk, x)
		if !sameBits(all1, all2) || !guardsIntact(all1) {
			t.Fatalf("axpyLanes n %d: paths differ or guard overwritten", n)
		}
	}
	laneKernelsIdentical(t, "8 lanes", &laneKernels[laneVec, laneMask]{codeSteps, groupSums, dotPairLanes, mulAddLanes},
		&laneKernels[laneVec, laneMask]{codeStepsGo, groupSumsGo, dotPairLanesGo, mulAddLanesGo})
	laneKernelsIdentical(t, "16 lanes", &laneKernels[wideVec, wideMask]{codeStepsWide, groupSumsWide, dotPairWide, mulAddWide},
		&laneKernels[wideVec, wideMask]{
			func(xt []float32, n int, r, e, lv []wideVec, sq []float32, d *wideVec, lam float32) bool {
				return codeStepsOf(dotLanesOf[wideVec], axpyLanesOf[wideVec, wideMask], xt, n, r, e, lv, sq, d, lam)
			},
			func(xt []float32, n int, r, e, lv, u []wideVec, lam float32, num, l2 *wideVec) {
				groupSumsOf(dotLanesOf[wideVec], axpyLanesOf[wideVec, wideMask], xt, n, r, e, lv, u, lam, num, l2)
			},
			dotPairLanesOf[wideVec], mulAddLanesOf[wideVec, wideMask]})
}

func randMask[M masks](rng *rand.Rand) (m M) {
	for l := 0; l < len(m); l++ {
		if rng.IntN(2) == 0 {
			m[l] = ^uint32(0)
		}
	}
	return m
}

func laneKernelsIdentical[V lanes, M masks](t *testing.T, name string, vec, port *laneKernels[V, M]) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range laneLengths {
		a := randLanesOf[V](rng, 1)[0]
		mk := randMask[M](rng)
		all1, m1 := guardedLanesOf[V](rng, n)
		all2 := append([]V(nil), all1...)
		m2 := all2[1 : n+1]
		xl := randLanesOf[V](rng, n)
		vec.mulAdd(m1, &a, &mk, xl)
		port.mulAdd(m2, &a, &mk, xl)
		if !sameBits(all1, all2) || !guardsIntact(all1) {
			t.Fatalf("%s: mulAdd n %d: paths differ or guard overwritten", name, n)
		}
		var p1, p2 V
		vec.dotPair(m1, xl, &p1)
		port.dotPair(m1, xl, &p2)
		if !sameBits([]V{p1}, []V{p2}) {
			t.Fatalf("%s: dotPair n %d: paths differ", name, n)
		}

		// One group of columns: levels -1..2, a scale per lane (one 0).
		const k = group
		xt := randMatrix(rng, k*n, 1)
		sq := make([]float32, k)
		for j := range sq {
			sq[j] = kernels.DotF32(xt[j*n:(j+1)*n], xt[j*n:(j+1)*n])
		}
		lv := make([]V, k)
		for j := range lv {
			for l := 0; l < len(lv[j]); l++ {
				lv[j][l] = float32(rng.IntN(4) - 1)
			}
		}
		e := randLanesOf[V](rng, k)
		for j := range e {
			for l := 0; l < len(e[j]); l++ {
				e[j][l] *= 0.3
			}
		}
		var d V
		for l := 0; l < len(d); l++ {
			d[l] = roundFP16(float32(0.2 + 0.3*rng.Float64()))
		}
		d[3] = 0
		lam := float32(0.7)
		rAll, r := guardedLanesOf[V](rng, n)
		r2All := append([]V(nil), rAll...)
		r2 := r2All[1 : n+1]
		e2, lv2 := append([]V(nil), e...), append([]V(nil), lv...)
		m1v := vec.codeSteps(xt, n, r, e, lv, sq, &d, lam)
		m2v := port.codeSteps(xt, n, r2, e2, lv2, sq, &d, lam)
		if m1v != m2v || !sameBits(rAll, r2All) || !sameBits(e, e2) || !sameBits(lv, lv2) || !guardsIntact(rAll) {
			t.Fatalf("%s: codeSteps n %d: paths differ (moved %v, %v) or guard overwritten", name, n, m1v, m2v)
		}
		if !m1v {
			t.Fatalf("%s: codeSteps n %d: no code moved from random levels", name, n)
		}

		uAll, u := guardedLanesOf[V](rng, n)
		u2All := append([]V(nil), uAll...)
		u2 := u2All[1 : n+1]
		var num1, l21, num2, l22 V
		vec.groupSums(xt, n, r, e, lv, u, lam, &num1, &l21)
		port.groupSums(xt, n, r, e, lv, u2, lam, &num2, &l22)
		if !sameBits(uAll, u2All) || !sameBits([]V{num1, l21}, []V{num2, l22}) || !guardsIntact(uAll) {
			t.Fatalf("%s: groupSums n %d: paths differ or guard overwritten", name, n)
		}
	}
}

// TestRefineLowIsDescend: the lane refinement, at either width, leaves the
// codes and scales descend leaves row by row with lowQuad, for row counts
// that are not a multiple of the lanes.
func TestRefineLowIsDescend(t *testing.T) {
	saved := useWide
	defer func() { useWide = saved }()
	for _, wide := range []bool{false, true} {
		useWide = wide
		refineLowIsDescend(t)
	}
}

func refineLowIsDescend(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ n, cols, rows, passes int }{{24, 192, 13, 4}, {40, 128, 8, 2}, {5, 64, 3, 6}, {33, 128, 21, 3}} {
		x := lowCase(uint64(c.n), c.n, c.cols)
		f, reason := lowRankFactor(x, c.n, c.cols, 0.3, 0.7)
		if reason != "" {
			t.Fatal(reason)
		}
		w := randMatrix(rng, c.rows*c.cols, 1)
		opt := Defaults()
		q := f.quantize(w, c.rows, opt)
		ref := &quantized{rows: q.rows, cols: q.cols, levels: append([]int8(nil), q.levels...), scales: append([]float32(nil), q.scales...)}
		q.refineLow(w, f.lr, c.passes)
		groups := c.cols / group
		e := make([]float32, c.cols)
		hq := f.lr.quad()
		moved := false
		for r := 0; r < c.rows; r++ {
			lv := ref.levels[r*c.cols : (r+1)*c.cols]
			sc := ref.scales[r*groups : (r+1)*groups]
			for j := range e {
				e[j] = w[r*c.cols+j] - sc[j/group]*float32(lv[j])
			}
			hq.reset(e)
			before := append([]int8(nil), lv...)
			descend(lv, sc, e, hq, c.passes)
			for j := range lv {
				moved = moved || lv[j] != before[j]
			}
		}
		if !moved {
			t.Fatalf("%+v: the refinement moved no code", c)
		}
		sameQ(t, fmt.Sprintf("%+v", c), q, ref)
	}
}

// TestLowCarryIsRowByRow: the lane carry, at either width, leaves the
// weights a row-by-row carry leaves (z_r += e_j cp_j by kernels.Axpy, skipped for e_j = 0, then
// w_rk += kernels.DotF32(x_k, z_r)), bit for bit, for a row count that is
// not a multiple of the lanes.
func TestLowCarryIsRowByRow(t *testing.T) {
	saved := useWide
	defer func() { useWide = saved }()
	for _, wide := range []bool{false, true} {
		useWide = wide
		for _, c := range []struct{ n, rows int }{{37, 11}, {32, 21}, {70, 16}, {37, 45}, {32, 64}} {
			lowCarryIsRowByRow(t, c.n, c.rows)
		}
	}
}

func lowCarryIsRowByRow(t *testing.T, n, rows int) {
	const cols = 256
	f, reason := lowRankFactor(lowCase(5, n, cols), n, cols, 0.3, 0.7)
	if reason != "" {
		t.Fatal(reason)
	}
	lr := f.lr
	rng := rand.New(rand.NewPCG(2, 3))
	w := randMatrix(rng, rows*cols, 1)
	want := append([]float32(nil), w...)
	src := append([]float32(nil), w...)
	z := make([]float32, rows*n)
	c := lr.carrier(rows)
	// The path quantize takes: the errors set row by row (setErrs) or a
	// pass of scoreLanes rows at a time (setErrLanes), the next group's
	// weights written from the source rows (carryNext).
	byRow, byLanes := lr.carrier(rows).(nextCarrier), lr.carrier(rows).(nextCarrier)
	next := make([]float32, rows*group)
	var ne [group][scoreLanes]float32
	for g := 0; g+1 < cols/group; g++ {
		g0, g1 := g*group, (g+1)*group
		errs := randMatrix(rng, rows*group, 1)
		for i := 0; i < len(errs); i += 7 {
			errs[i] = 0
		}
		c.carry(w, errs, g0, g1)
		for r0 := 0; r0 < rows; r0 += scoreLanes {
			nr := min(scoreLanes, rows-r0)
			for i := range scoreLanes {
				for k := range group {
					ne[k][i] = float32(math.NaN()) // lanes of no row must not count
					if i < nr {
						ne[k][i] = -errs[(r0+i)*group+k]
					}
				}
			}
			for i := range nr {
				byRow.setErrs(r0+i, &ne, i)
			}
			byLanes.setErrLanes(r0, nr, &ne)
		}
		for r := 0; r < rows; r++ {
			zr := z[r*n : (r+1)*n]
			for jj, e := range errs[r*group : (r+1)*group] {
				if e != 0 {
					kernels.Axpy(zr, e, lr.cp[(g0+jj)*n:(g0+jj+1)*n])
				}
			}
			for k := g1; k < g1+group; k++ {
				want[r*cols+k] += kernels.DotF32(lr.xt[k*n:(k+1)*n], zr)
			}
		}
		for i := range w {
			if math.Float32bits(w[i]) != math.Float32bits(want[i]) {
				t.Fatalf("after group %d: weight %d is %v, row by row %v", g, i, w[i], want[i])
			}
		}
		for name, nc := range map[string]nextCarrier{"setErrs": byRow, "setErrLanes": byLanes} {
			nc.carryNext(next, src, g0, g1)
			for r := range rows {
				for k := range group {
					if got, w := next[r*group+k], want[r*cols+g1+k]; math.Float32bits(got) != math.Float32bits(w) {
						t.Fatalf("%s, after group %d: row %d next weight %d is %v, row by row %v", name, g, r, k, got, w)
					}
				}
			}
		}
	}
}

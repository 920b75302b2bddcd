package optq

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/kernels"
)

// refineWeightedRowByRow is refineWeightedWith as it ran before the lanes:
// each row's columns and their norms by kernels.DotF32, then descend with
// weightedQuad's rowQuad methods (the row-by-row definition).
func refineWeightedRowByRow(q *quantized, hq *weightedQuad, w, x, xt []float32, n int, sw, yw []float32, damp, floor float32, passes int) {
	cols, groups := q.cols, q.cols/group
	for row := 0; row < q.rows; row++ {
		s, y := sw[row*n:(row+1)*n], yw[row*n:(row+1)*n]
		lv := q.levels[row*cols : (row+1)*cols]
		sc := q.scales[row*groups : (row+1)*groups]
		for j := 0; j < cols; j++ {
			sj, xj := hq.col(j), xt[j*n:(j+1)*n]
			for t := range sj {
				sj[t] = s[t] * xj[t]
			}
			hq.sq[j] = kernels.DotF32(sj, sj)
		}
		if hq.start(w[row*cols:(row+1)*cols], x, s, y, lv, sc, damp, floor) {
			descend(lv, sc, hq.err, hq, passes)
		}
	}
}

// portableWeighted runs f with the weighted refinement's portable kernels.
func portableWeighted(f func()) {
	wc, wu, ws, dp, sl, scl, dl := wcodeSteps, wgroupU, wgroupSums, dotPairLanes, scaleLanes, scaleCols, dotLanes
	wcodeSteps, wgroupU, wgroupSums, dotPairLanes, scaleLanes, scaleCols, dotLanes = wcodeStepsGo, wgroupUGo, wgroupSumsGo, dotPairLanesGo, scaleLanesGo, scaleColsGo, dotLanesGo
	defer func() {
		wcodeSteps, wgroupU, wgroupSums, dotPairLanes, scaleLanes, scaleCols, dotLanes = wc, wu, ws, dp, sl, scl, dl
	}()
	f()
}

// weightedCase is a refineWeighted problem: rows of cols weights w, their
// plain-search codes, n inputs x and per-row weights s and targets y
// (y = s·(w·x) plus noise, so the descent has somewhere to go).
func weightedCase(rng *rand.Rand, rows, cols, n int) (q *quantized, w, x, xt, s, y []float32) {
	w = randMatrix(rng, rows*cols, 0.1)
	x = randMatrix(rng, n*cols, 1)
	xt = transpose(x, n, cols)
	s = make([]float32, rows*n)
	y = make([]float32, rows*n)
	for r := 0; r < rows; r++ {
		for t := 0; t < n; t++ {
			s[r*n+t] = float32(0.2 + rng.Float64())
			if t%5 == 3 {
				s[r*n+t] = 0 // a token the row does not reach
			}
			y[r*n+t] = s[r*n+t]*kernels.DotF32(w[r*cols:(r+1)*cols], x[t*cols:(t+1)*cols]) + float32(0.05*rng.NormFloat64())
		}
	}
	b := make([]byte, rows*cols/group*18)
	if err := plain(w, b, Defaults()); err != nil {
		panic(err)
	}
	q = unpack(b, rows, cols)
	if rows > 1 {
		q.scales[cols/group] = 0 // row 1's first group: scale 0
		for j := 0; j < group; j++ {
			q.levels[cols+j] = 0
		}
	}
	return q, w, x, xt, s, y
}

func cloneQ(q *quantized) *quantized {
	return &quantized{rows: q.rows, cols: q.cols, levels: append([]int8(nil), q.levels...), scales: append([]float32(nil), q.scales...)}
}

func sameQ(t *testing.T, what string, got, want *quantized) {
	t.Helper()
	for i := range want.levels {
		if got.levels[i] != want.levels[i] {
			t.Fatalf("%s: level %d is %d, row by row (descend) %d", what, i, got.levels[i], want.levels[i])
		}
	}
	for i := range want.scales {
		if math.Float32bits(got.scales[i]) != math.Float32bits(want.scales[i]) {
			t.Fatalf("%s: scale %d is %v, row by row (descend) %v", what, i, got.scales[i], want.scales[i])
		}
	}
}

// TestRefineWeightedIsDescend: the lane refinement (this CPU's kernels and
// the portable ones) leaves the codes and scales descend leaves row by row
// with weightedQuad, bit for bit, for token counts below, at and past the
// 32 of one DotF32 chunk and with tails, a scale-0 group and tokens with
// weight 0, and the floor of the ridge.
func TestRefineWeightedIsDescend(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		n, cols, rows, passes int
		floor                 float32
	}{{1, 64, 3, 4, 0}, {5, 128, 4, 4, 0}, {13, 192, 3, 3, 0.5}, {31, 128, 3, 4, 0}, {32, 256, 3, 4, 0},
		{33, 128, 2, 4, 0}, {47, 192, 3, 6, 0}, {64, 128, 2, 4, 2}, {65, 64, 3, 4, 0}, {100, 128, 2, 3, 0}} {
		q, w, x, xt, s, y := weightedCase(rng, c.rows, c.cols, c.n)
		want := cloneQ(q)
		refineWeightedRowByRow(want, newWeightedQuad(c.cols, c.n), w, x, xt, c.n, s, y, 0.7, c.floor, c.passes)
		moved := false
		for i := range want.levels {
			moved = moved || want.levels[i] != q.levels[i]
		}
		if !moved {
			t.Fatalf("%+v: the refinement moved no code", c)
		}
		got := cloneQ(q)
		got.refineWeightedWith(newWeightedQuad(c.cols, c.n), w, x, xt, c.n, s, y, 0.7, c.floor, c.passes)
		sameQ(t, "this CPU", got, want)
		port := cloneQ(q)
		portableWeighted(func() {
			port.refineWeightedWith(newWeightedQuad(c.cols, c.n), w, x, xt, c.n, s, y, 0.7, c.floor, c.passes)
		})
		sameQ(t, "portable", port, want)
	}
}

func sameFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

const guardBits = 0x7fc0dead

// guarded is n values between guard values of g each side.
func guarded(rng *rand.Rand, n, g int) (all, v []float32) {
	all = randMatrix(rng, n+2*g, 1)
	for i := 0; i < g; i++ {
		all[i] = math.Float32frombits(guardBits)
		all[n+g+i] = math.Float32frombits(guardBits)
	}
	return all, all[g : n+g]
}

func floatGuards(all []float32, g int) bool {
	for i := 0; i < g; i++ {
		if math.Float32bits(all[i]) != guardBits || math.Float32bits(all[len(all)-1-i]) != guardBits {
			return false
		}
	}
	return true
}

// TestWeightedKernelsPathsIdentical: each kernel of the weighted refinement
// gives its portable definition's bits (dotPairLanes: kernels.DotF32's of
// each lane's columns) and writes nothing outside its outputs.
func TestWeightedKernelsPathsIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range laneLengths {
		// dotPairLanes against DotF32 lane by lane.
		a, b := randLanes(rng, n), randLanes(rng, n)
		var got, port laneVec
		dotPairLanes(a, b, &got)
		dotPairLanesGo(a, b, &port)
		ca, cb := make([]float32, n), make([]float32, n)
		for l := range got {
			for k := range ca {
				ca[k], cb[k] = a[k][l], b[k][l]
			}
			want := kernels.DotF32(ca, cb)
			if math.Float32bits(got[l]) != math.Float32bits(want) || math.Float32bits(port[l]) != math.Float32bits(want) {
				t.Fatalf("dotPairLanes n %d lane %d: %v (portable %v), DotF32 %v", n, l, got[l], port[l], want)
			}
		}

		const cols = 2 * group
		np := (n + 7) &^ 7
		x := randMatrix(rng, n*cols, 1)
		xt := transpose(x, n, cols)
		s := randMatrix(rng, n, 1)
		xb := make([]laneVec, cols/rowLanes*n)
		blocks(x, n, cols, xb)
		for k := 0; k < cols/rowLanes; k++ {
			for l := 0; l < rowLanes; l++ {
				if xb[k*n+n-1][l] != xt[(k*rowLanes+l)*n+n-1] {
					t.Fatalf("blocks n %d: block %d lane %d is not column %d", n, k, l, k*rowLanes+l)
				}
			}
		}
		b1All, b1 := guardedLanes(rng, cols/rowLanes*n)
		b2All := append([]laneVec(nil), b1All...)
		b2 := b2All[1 : len(b2All)-1]
		scaleLanes(xb, s, n, b1)
		scaleLanesGo(xb, s, n, b2)
		if !sameBits(b1All, b2All) || !guardsIntact(b1All) {
			t.Fatalf("scaleLanes n %d: paths differ or guard overwritten", n)
		}
		c1All, c1 := guarded(rng, cols*np, 3)
		c2All := append([]float32(nil), c1All...)
		c2 := c2All[3 : len(c2All)-3]
		scaleCols(xt, s, n, np, c1)
		scaleColsGo(xt, s, n, np, c2)
		if !sameFloats(c1All, c2All) || !floatGuards(c1All, 3) {
			t.Fatalf("scaleCols n %d: paths differ or guard overwritten", n)
		}

		// wgroupU over the columns of a random level pattern.
		var off []int32
		var coef []float32
		for j := 0; j < cols; j++ {
			if l := rng.IntN(4) - 1; l != 0 {
				off, coef = append(off, int32(j*np)), append(coef, float32(l))
			}
		}
		u1All, u1 := guarded(rng, np, 3)
		u2All := append([]float32(nil), u1All...)
		u2 := u2All[3 : len(u2All)-3]
		wgroupU(c1, off, coef, u1)
		wgroupUGo(c1, off, coef, u2)
		if !sameFloats(u1All, u2All) || !floatGuards(u1All, 3) {
			t.Fatalf("wgroupU n %d: paths differ or guard overwritten", n)
		}

		// wcodeSteps on one group with random levels: some codes move.
		sq := make([]float32, group)
		for j := range sq {
			col := c1[j*np : j*np+n]
			sq[j] = kernels.DotF32(col, col)
		}
		lv := make([]float32, group)
		for j := range lv {
			lv[j] = float32(rng.IntN(4) - 1)
		}
		e := randMatrix(rng, group, 0.3)
		rAll, r := guarded(rng, n, 3)
		r2All := append([]float32(nil), rAll...)
		r2 := r2All[3 : len(r2All)-3]
		eAll := append(append([]float32{math.Float32frombits(guardBits)}, e...), math.Float32frombits(guardBits))
		e2All := append([]float32(nil), eAll...)
		lvAll := append(append([]float32{math.Float32frombits(guardBits)}, lv...), math.Float32frombits(guardBits))
		lv2All := append([]float32(nil), lvAll...)
		d := roundFP16(float32(0.2 + 0.3*rng.Float64()))
		mu := float32(0.7)
		m1 := wcodeSteps(b1[:group/rowLanes*n], r, eAll[1:group+1], lvAll[1:group+1], sq, d, mu)
		m2 := wcodeStepsGo(b1[:group/rowLanes*n], r2, e2All[1:group+1], lv2All[1:group+1], sq, d, mu)
		if m1 != m2 || !sameFloats(rAll, r2All) || !sameFloats(eAll, e2All) || !sameFloats(lvAll, lv2All) ||
			!floatGuards(rAll, 3) || !floatGuards(eAll, 1) || !floatGuards(lvAll, 1) {
			t.Fatalf("wcodeSteps n %d: paths differ (moved %v, %v) or guard overwritten", n, m1, m2)
		}
		if !m1 {
			t.Fatalf("wcodeSteps n %d: no code moved from random levels", n)
		}
	}
}

// BenchmarkRefineWeightedRow times the expert-output refinement's weighted
// descent on one field-width row (2560 columns, 32 tokens, 4 passes);
// RowByRow is the definition it replaced.
func BenchmarkRefineWeightedRow(b *testing.B) {
	for _, lanes := range []bool{true, false} {
		name := "Lanes"
		if !lanes {
			name = "RowByRow"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(15, 16))
			const rows, cols, n = 16, 2560, 32
			q, w, x, xt, s, y := weightedCase(rng, rows, cols, n)
			hq := newWeightedQuad(cols, n)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				r := i % rows
				row := &quantized{rows: 1, cols: cols, levels: append([]int8(nil), q.levels[r*cols:(r+1)*cols]...),
					scales: append([]float32(nil), q.scales[r*cols/group:(r+1)*cols/group]...)}
				if lanes {
					row.refineWeightedWith(hq, w[r*cols:(r+1)*cols], x, xt, n, s[r*n:(r+1)*n], y[r*n:(r+1)*n], 1, 0, 4)
				} else {
					refineWeightedRowByRow(row, hq, w[r*cols:(r+1)*cols], x, xt, n, s[r*n:(r+1)*n], y[r*n:(r+1)*n], 1, 0, 4)
				}
			}
		})
	}
}

// TestWGroupSumsPathsIdentical: wgroupSums gives its portable definition's
// sums and lists, levels 0 skipped even where the error is not finite.
func TestWGroupSumsPathsIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for trial := 0; trial < 20; trial++ {
		lv := make([]float32, group)
		for j := range lv {
			lv[j] = float32(rng.IntN(4) - 1)
		}
		if trial == 1 {
			clear(lv)
		}
		e := randMatrix(rng, group, 1)
		for j := range e {
			if lv[j] == 0 && j%3 == 0 {
				e[j] = float32(math.Inf(1))
			}
		}
		mu := float32(0.1 + rng.Float64())
		off1, off2 := make([]int32, group+1), make([]int32, group+1)
		c1, c2 := make([]float32, group+1), make([]float32, group+1)
		off1[group], off2[group] = guardBits, guardBits
		var n1, l1, n2, l2 float32
		k1 := wgroupSums(lv, e, mu, 40, off1[:group], c1[:group], &n1, &l1)
		k2 := wgroupSumsGo(lv, e, mu, 40, off2[:group], c2[:group], &n2, &l2)
		if k1 != k2 || math.Float32bits(n1) != math.Float32bits(n2) || math.Float32bits(l1) != math.Float32bits(l2) ||
			!sameFloats(c1[:k1], c2[:k2]) || off1[group] != guardBits {
			t.Fatalf("trial %d: %d columns, num %v, l2 %v; portable %d, %v, %v", trial, k1, n1, l1, k2, n2, l2)
		}
		for i := 0; i < k1; i++ {
			if off1[i] != off2[i] {
				t.Fatalf("trial %d: offset %d is %d, portable %d", trial, i, off1[i], off2[i])
			}
		}
	}
}

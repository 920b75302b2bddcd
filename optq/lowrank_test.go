package optq

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// lowCase is n inputs of cols columns with a few strong directions.
func lowCase(seed uint64, n, cols int) []float32 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	x := correlated(rng, n, cols, 4)
	for i := range x {
		x[i] += float32(0.3 * rng.NormFloat64())
	}
	return x
}

func closeTo(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestLowRankFactorsMatchDense: for n < cols inputs, 1/U_jj, U's in-group
// entries, the carried compensation of the OPTQ pass and the refinement's
// gradient H e of the low-rank form are the dense factorization's, up to
// float rounding.
func TestLowRankFactorsMatchDense(t *testing.T) {
	const n, cols, rows = 24, 192, 5
	x := lowCase(11, n, cols)
	dense, reason := factor(gram(x, n, cols), cols, 0.3, 0.7)
	if reason != "" {
		t.Fatal(reason)
	}
	low, reason := lowRankFactor(x, n, cols, 0.3, 0.7)
	if reason != "" || low.lr == nil {
		t.Fatalf("low-rank factor: %q", reason)
	}
	for j := 0; j < cols; j++ {
		if a, b := float64(low.invDiag[j]), float64(dense.invDiag[j]); !closeTo(a, b, 1e-4*b) {
			t.Fatalf("1/U_%d%d: low-rank %v, dense %v", j, j, a, b)
		}
	}
	var bmax float64
	for _, v := range dense.band {
		bmax = max(bmax, math.Abs(float64(v)))
	}
	for i := range dense.band {
		if a, b := float64(low.band[i]), float64(dense.band[i]); !closeTo(a, b, 1e-4*bmax) {
			t.Fatalf("band entry %d (U_%d,%d): low-rank %v, dense %v", i, i/group, i/group/group*group+i%group, a, b)
		}
	}
	// Two groups carried: the third group's columns agree.
	rng := rand.New(rand.NewPCG(1, 1))
	w := randMatrix(rng, rows*cols, 1)
	wd, wl := append([]float32(nil), w...), append([]float32(nil), w...)
	cd, cl := dense.carrier(rows), low.carrier(rows)
	for g := 0; g < 2; g++ {
		errs := randMatrix(rng, rows*group, 1)
		cd.carry(wd, errs, g*group, (g+1)*group)
		cl.carry(wl, errs, g*group, (g+1)*group)
	}
	for r := 0; r < rows; r++ {
		for k := 2 * group; k < cols; k++ {
			a, b := float64(wl[r*cols+k]), float64(wd[r*cols+k])
			if !closeTo(a, b, 1e-4*(1+math.Abs(b))) {
				t.Fatalf("row %d column %d after two carried groups: low-rank %v, dense %v", r, k, a, b)
			}
		}
	}
	// The refinement's quadratic: gradient, diagonal, group terms, moves.
	e := randMatrix(rng, cols, 1)
	ed, el := append([]float32(nil), e...), append([]float32(nil), e...)
	qd, ql := dense.quad(), low.quad()
	qd.reset(ed)
	ql.reset(el)
	lv := make([]int8, group)
	for i := range lv {
		lv[i] = int8(rng.IntN(4) - 1)
	}
	check := func(when string) {
		t.Helper()
		var gmax float64
		for j := 0; j < cols; j++ {
			gmax = max(gmax, math.Abs(float64(qd.grad(j))))
		}
		for j := 0; j < cols; j++ {
			if a, b := float64(ql.grad(j)), float64(qd.grad(j)); !closeTo(a, b, 1e-4*gmax) {
				t.Fatalf("%s: (H e)_%d low-rank %v, dense %v", when, j, a, b)
			}
			if a, b := float64(ql.diag(j)), float64(qd.diag(j)); !closeTo(a, b, 1e-5*b) {
				t.Fatalf("H_%d%d: low-rank %v, dense %v", j, j, a, b)
			}
		}
	}
	check("start")
	for _, j := range []int{3, 70, 191} {
		ed[j] -= 0.5
		el[j] -= 0.5
		qd.moved(j, 0.5)
		ql.moved(j, 0.5)
	}
	check("after three moves")
	nd, dd := qd.group(1, lv)
	nl, dl := ql.group(1, lv)
	if !closeTo(float64(nl), float64(nd), 1e-4*math.Abs(float64(nd))+1e-3) || !closeTo(float64(dl), float64(dd), 1e-4*float64(dd)) {
		t.Fatalf("group terms: low-rank %v, %v; dense %v, %v", nl, dl, nd, dd)
	}
	for i, l := range lv {
		ed[group+i] -= 0.25 * float32(l)
		el[group+i] -= 0.25 * float32(l)
	}
	qd.groupMoved(0.25)
	ql.groupMoved(0.25)
	check("after a group move")
}

// TestLowRankClosedForm: one token x gives G_j = λ + Σ_{k>j} x_k², so
// 1/U_jj = sqrt(λ (1 + x_j²/G_j)) and U_jk = −x_k x_j U_jj / G_j; inputs
// on distinct coordinate axes give a diagonal H: no compensation at all.
func TestLowRankClosedForm(t *testing.T) {
	const cols = 128
	x := lowCase(3, 1, cols)
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	lambda := 0.3 * sum / cols
	f, reason := lowRankFactor(x, 1, cols, 0.3, 0)
	if reason != "" {
		t.Fatal(reason)
	}
	for j := 0; j < cols; j++ {
		g := lambda
		for k := j + 1; k < cols; k++ {
			g += float64(x[k]) * float64(x[k])
		}
		xj := float64(x[j])
		id := math.Sqrt(lambda * (1 + xj*xj/g))
		if !closeTo(float64(f.invDiag[j]), id, 1e-5*id) {
			t.Fatalf("1/U_%d%d = %v, closed form %v", j, j, f.invDiag[j], id)
		}
		g0 := j / group * group
		for k := j + 1; k < g0+group; k++ {
			want := -float64(x[k]) * xj / g / id
			if got := float64(f.band[j*group+k-g0]); !closeTo(got, want, 1e-5*(math.Abs(want)+1e-3)) {
				t.Fatalf("U_%d,%d = %v, closed form %v", j, k, got, want)
			}
		}
	}
	// Token t on axis 3t with value t+1.
	const n = 20
	ax := make([]float32, n*cols)
	sum = 0
	for i := 0; i < n; i++ {
		ax[i*cols+3*i] = float32(i + 1)
		sum += float64((i + 1) * (i + 1))
	}
	lambda = 0.5 * sum / cols
	f, reason = lowRankFactor(ax, n, cols, 0.5, 0)
	if reason != "" {
		t.Fatal(reason)
	}
	for j := 0; j < cols; j++ {
		h := lambda
		if j%3 == 0 && j/3 < n {
			h += float64((j/3 + 1) * (j/3 + 1))
		}
		if !closeTo(float64(f.invDiag[j]), math.Sqrt(h), 1e-5*math.Sqrt(h)) {
			t.Fatalf("diagonal H: 1/U_%d%d = %v, want sqrt(%v)", j, j, f.invDiag[j], h)
		}
	}
	for i, v := range f.band {
		if math.Abs(float64(v)) > 1e-6 {
			t.Fatalf("diagonal H: in-group entry %d is %v, want 0", i, v)
		}
	}
	// Undamped, n < cols inputs are a singular H.
	if _, reason := lowRankFactor(x, 1, cols, 0, 0); reason != FallbackSingular {
		t.Fatalf("undamped rank-1 H: reason %q, want %q", reason, FallbackSingular)
	}
	if _, reason := lowRankFactor(make([]float32, cols), 1, cols, 0.3, 0); reason != FallbackNoTokens {
		t.Fatalf("zero inputs: reason %q, want %q", reason, FallbackNoTokens)
	}
}

// TestDownTargetMatchesDense: the Woodbury form of the down projection's
// corrected target is W (AᵀÂ + λI)(ÂᵀÂ + λI)⁻¹ computed densely in float64.
func TestDownTargetMatchesDense(t *testing.T) {
	const n, F, D = 20, 64, 48
	rng := rand.New(rand.NewPCG(21, 22))
	ah := lowCase(5, n, F)
	a := append([]float32(nil), ah...)
	for i := range a {
		a[i] += float32(0.2 * rng.NormFloat64())
	}
	w := randMatrix(rng, D*F, 1)
	f, reason := lowRankFactor(ah, n, F, 0.3, 0)
	if reason != "" {
		t.Fatal(reason)
	}
	got := f.lr.downTarget(w, a, D)
	lambda := f.lr.lambda
	// Dense: rows of W M solved against Ĥ + λI.
	hh := make([]float64, F*F)
	m := make([]float64, F*F)
	for i := 0; i < F; i++ {
		for j := 0; j < F; j++ {
			var sh, sm float64
			for t := 0; t < n; t++ {
				sh += float64(ah[t*F+i]) * float64(ah[t*F+j])
				sm += float64(a[t*F+i]) * float64(ah[t*F+j])
			}
			hh[i*F+j], m[i*F+j] = sh, sm
		}
		hh[i*F+i] += lambda
		m[i*F+i] += lambda
	}
	if !cholesky(hh, F) {
		t.Fatal("dense factor failed")
	}
	wm := make([]float64, D*F)
	for r := 0; r < D; r++ {
		for j := 0; j < F; j++ {
			var s float64
			for i := 0; i < F; i++ {
				s += float64(w[r*F+i]) * m[i*F+j]
			}
			wm[r*F+j] = s
		}
	}
	solveCholesky(hh, F, wm, D)
	var emax, vmax float64
	for i, v := range wm {
		emax = max(emax, math.Abs(float64(got[i])-v))
		vmax = max(vmax, math.Abs(v))
	}
	if emax > 1e-4*vmax {
		t.Fatalf("target differs from the dense solve by %.3g (largest entry %.3g)", emax, vmax)
	}
}

// TestLowRankExpertMatchesDense: an expert with fewer tokens than both of
// its widths quantizes by the low-rank path to the dense path's result: the
// same bytes but for float rounding at a few ties, and the same errors.
// It runs 4 refinement passes: the defaults' 2 stop before the descent
// settles, where a tie broken the other way by float rounding leaves a
// different (as good) code and the bytes of the two paths part.
func TestLowRankExpertMatchesDense(t *testing.T) {
	const D, F, n, nh = 256, 128, 40, 16
	rng := rand.New(rand.NewPCG(31, 32))
	x := lowCase(7, n+nh, D)
	ex := &Expert{D: D, F: F, Gate: randMatrix(rng, F*D, 0.1), Up: randMatrix(rng, F*D, 0.1), Down: randMatrix(rng, D*F, 0.1)}
	in := &Inputs{X: x[:n*D], N: n, Held: x[n*D:], NH: nh}
	opt := Defaults()
	opt.Refine, opt.ExpertTokens, opt.GridTokens = 4, 0, 0 // the expert-output refinement and the grid too, at n < D
	low, err := QuantizeExpert(ex, in, opt)
	if err != nil || low.Fallback != "" {
		t.Fatalf("low-rank: fallback %q, err %v", low.Fallback, err)
	}
	defer func(f func(int, int) bool) { useLowRank = f }(useLowRank)
	useLowRank = func(int, int) bool { return false }
	dense, err := QuantizeExpert(ex, in, opt)
	if err != nil || dense.Fallback != "" {
		t.Fatalf("dense: fallback %q, err %v", dense.Fallback, err)
	}
	for i, m := range [][2][]byte{{low.Gate, dense.Gate}, {low.Up, dense.Up}, {low.Down, dense.Down}} {
		nb := len(m[0]) / quant.Q2BlockBytes
		diff := 0
		for b := 0; b < nb; b++ {
			if !bytes.Equal(m[0][b*quant.Q2BlockBytes:(b+1)*quant.Q2BlockBytes], m[1][b*quant.Q2BlockBytes:(b+1)*quant.Q2BlockBytes]) {
				diff++
			}
		}
		lo, de := low.Errors[i].RelOutput(), dense.Errors[i].RelOutput()
		t.Logf("matrix %d: %d of %d blocks differ; held-out output error %.5f low-rank, %.5f dense", i, diff, nb, lo, de)
		if diff > nb/50 || !closeTo(lo, de, 0.01*de) {
			t.Fatalf("matrix %d: %d of %d blocks differ, output error %.5f vs %.5f", i, diff, nb, lo, de)
		}
	}
}

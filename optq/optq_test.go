package optq

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

func randMatrix(rng *rand.Rand, n int, scale float64) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * scale)
	}
	return w
}

// objective is sum over rows of (w-ŵ) H (w-ŵ)ᵀ in float64.
func objective(t *testing.T, w []float32, b []byte, rows, cols int, h []float64) float64 {
	t.Helper()
	y := make([]float32, rows*cols)
	if err := quant.Dequantize(quant.Q2_0, b, y); err != nil {
		t.Fatal(err)
	}
	var s float64
	e := make([]float64, cols)
	for r := 0; r < rows; r++ {
		for j := range e {
			e[j] = float64(w[r*cols+j]) - float64(y[r*cols+j])
		}
		for i := 0; i < cols; i++ {
			var v float64
			for j := 0; j < cols; j++ {
				v += h[i*cols+j] * e[j]
			}
			s += e[i] * v
		}
	}
	return s
}

func plainBytes(t *testing.T, w []float32) []byte {
	t.Helper()
	b := make([]byte, len(w)/group*quant.Q2BlockBytes)
	if err := plain(w, b, Options{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func blockErr(w []float32, b []byte) float64 {
	y := make([]float32, group)
	quant.Dequantize(quant.Q2_0, b, y)
	var s float64
	for i, v := range w {
		d := float64(v) - float64(y[i])
		s += d * d
	}
	return s
}

// TestIdentityIsPlainSearch: with H = I there is nothing to compensate
// (U = I) and every group's loss is its squared error, so with no extra
// candidates and no refinement the result is exactly the plain search's.
// With the defaults, the extra grid and the refinement only move a block
// to a strictly lower squared error.
func TestIdentityIsPlainSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	rows, cols := 48, 256
	w := randMatrix(rng, rows*cols, 1)
	h := make([]float64, cols*cols)
	for j := 0; j < cols; j++ {
		h[j*cols+j] = 1
	}
	want := plainBytes(t, w)
	got := make([]byte, len(want))
	opt := Options{}
	if reason, err := QuantizeMatrix(w, rows, cols, h, opt, got); err != nil || reason != "" {
		t.Fatalf("reason %q, err %v", reason, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("H = I without extra candidates or refinement differs from the plain search")
	}
	opt = Defaults()
	opt.Damp, opt.RefineDamp = 0, 0
	if reason, err := QuantizeMatrix(w, rows, cols, h, opt, got); err != nil || reason != "" {
		t.Fatalf("reason %q, err %v", reason, err)
	}
	same, nb := 0, rows*cols/group
	for b := 0; b < nb; b++ {
		gb, wb := got[b*18:(b+1)*18], want[b*18:(b+1)*18]
		if bytes.Equal(gb, wb) {
			same++
			continue
		}
		x := w[b*group : (b+1)*group]
		if ge, we := blockErr(x, gb), blockErr(x, wb); !(ge < we) {
			t.Fatalf("block %d differs from the plain search's without a lower error (%.6g vs %.6g)", b, ge, we)
		}
	}
	t.Logf("defaults: %d of %d blocks are the plain search's, the rest have less error", same, nb)
}

// correlated returns n inputs of cols columns with a strong common
// direction and column scales that differ, like real hidden states.
func correlated(rng *rand.Rand, n, cols, rank int) []float32 {
	dirs := make([][]float64, rank)
	for k := range dirs {
		dirs[k] = make([]float64, cols)
		for j := range dirs[k] {
			dirs[k][j] = rng.NormFloat64() * (1 + float64(j%5))
		}
	}
	x := make([]float32, n*cols)
	for t := 0; t < n; t++ {
		for k := range dirs {
			c := rng.NormFloat64()
			for j := 0; j < cols; j++ {
				x[t*cols+j] += float32(c * dirs[k][j])
			}
		}
	}
	return x
}

// TestLowersHessianObjective: against a real (correlated) H the quantizer
// leaves less H-weighted error than the plain search, and the refinement
// lowers it further.
func TestLowersHessianObjective(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols, n := 32, 256, 512
	x := correlated(rng, n, cols, cols)
	h := gram(x, n, cols)
	w := randMatrix(rng, rows*cols, 1)
	base := objective(t, w, plainBytes(t, w), rows, cols, h)
	b := make([]byte, rows*cols/group*quant.Q2BlockBytes)
	var prev float64
	for i, refine := range []int{0, 4} {
		opt := Defaults()
		opt.Damp, opt.Refine, opt.RefineDamp = 0.01, refine, 0
		if reason, err := QuantizeMatrix(w, rows, cols, h, opt, b); err != nil || reason != "" {
			t.Fatalf("reason %q, err %v", reason, err)
		}
		got := objective(t, w, b, rows, cols, h)
		t.Logf("refine %d: objective %.4g, plain search %.4g", refine, got, base)
		if !(got < 0.9*base) {
			t.Fatalf("refine %d: objective %.4g not clearly below the plain search's %.4g", refine, got, base)
		}
		if i > 0 && !(got < prev) {
			t.Fatalf("refinement did not lower the objective: %.4g after, %.4g before", got, prev)
		}
		prev = got
	}
}

// TestRankDeficient: an H of rank 16 < 256 columns cannot be factored
// undamped (fallback to the plain search, said so); damped it quantizes and
// beats the plain search on that H.
func TestRankDeficient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows, cols, n := 16, 256, 16
	x := correlated(rng, n, cols, 16)
	h := gram(x, n, cols)
	w := randMatrix(rng, rows*cols, 0.02)
	want := plainBytes(t, w)
	got := make([]byte, len(want))
	opt := Defaults()
	opt.Damp, opt.RefineDamp = 0, 0
	reason, err := QuantizeMatrix(w, rows, cols, h, opt, got)
	if err != nil {
		t.Fatal(err)
	}
	if reason != FallbackSingular || !bytes.Equal(got, want) {
		t.Fatalf("undamped rank-16 H: reason %q, plain bytes %v; want the plain search with %q", reason, bytes.Equal(got, want), FallbackSingular)
	}
	opt = Defaults()
	if reason, err = QuantizeMatrix(w, rows, cols, h, opt, got); err != nil || reason != "" {
		t.Fatalf("damped: reason %q, err %v", reason, err)
	}
	if g, p := objective(t, w, got, rows, cols, h), objective(t, w, want, rows, cols, h); !(g < p) {
		t.Fatalf("damped rank-deficient H: objective %.4g, plain search %.4g", g, p)
	}
	// No tokens at all: H = 0.
	if reason, err = QuantizeMatrix(w, rows, cols, make([]float64, cols*cols), opt, got); err != nil || reason != FallbackNoTokens || !bytes.Equal(got, want) {
		t.Fatalf("H = 0: reason %q, err %v, plain bytes %v", reason, err, bytes.Equal(got, want))
	}
}

// TestExpertNoTokens: an expert no token reached is the plain search's,
// with the reason given.
func TestExpertNoTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	D, F := 128, 64
	ex := &Expert{Gate: randMatrix(rng, F*D, 1), Up: randMatrix(rng, F*D, 1), Down: randMatrix(rng, D*F, 1), D: D, F: F}
	res, err := QuantizeExpert(ex, &Inputs{}, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if res.Fallback != FallbackNoTokens || !bytes.Equal(res.Gate, plainBytes(t, ex.Gate)) || !bytes.Equal(res.Up, plainBytes(t, ex.Up)) || !bytes.Equal(res.Down, plainBytes(t, ex.Down)) {
		t.Fatalf("fallback %q; want the plain search's bytes and %q", res.Fallback, FallbackNoTokens)
	}
	if !math.IsNaN(res.Errors[0].RelOutput()) {
		t.Fatalf("output error %v with no held-back tokens, want NaN", res.Errors[0].RelOutput())
	}
}

// TestExpertOutputError: with calibration inputs the expert's output error
// on held-back inputs is below the plain search's, and the down projection's
// corrected target makes the whole expert better than quantizing down
// against its own H alone.
func TestExpertOutputError(t *testing.T) {
	D, F, n, nh := 128, 128, 768, 128
	ex, in := expertFixture(rand.New(rand.NewPCG(9, 10)), D, F, n, nh)
	res, err := QuantizeExpert(ex, in, Defaults())
	if err != nil || res.Fallback != "" {
		t.Fatalf("fallback %q, err %v", res.Fallback, err)
	}
	pl, err := QuantizeExpert(ex, &Inputs{Held: in.Held, NH: nh}, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	got, base := expertOutErr(ex, res, in), expertOutErr(ex, pl, in)
	t.Logf("held-out expert output error %.4f, plain search %.4f", got, base)
	if !(got < 0.9*base) {
		t.Fatalf("held-out expert output error %.4f not clearly below the plain search's %.4f", got, base)
	}
	for i, e := range res.Errors[:2] {
		if pe := pl.Errors[i]; !(e.RelOutput() < pe.RelOutput()) {
			t.Fatalf("matrix %d: output error %.4f, plain %.4f", i, e.RelOutput(), pe.RelOutput())
		}
	}
}

func expertOutErr(ex *Expert, r *ExpertResult, in *Inputs) float64 {
	D, F := ex.D, ex.F
	deq := func(b []byte, n int) []float32 {
		y := make([]float32, n)
		quant.Dequantize(quant.Q2_0, b, y)
		return y
	}
	g, u, dn := deq(r.Gate, F*D), deq(r.Up, F*D), deq(r.Down, D*F)
	a := swiglu(ex.Gate, ex.Up, in.Held, in.NH, D, F)
	aq := swiglu(g, u, in.Held, in.NH, D, F)
	var num, den float64
	for t := 0; t < in.NH; t++ {
		for i := 0; i < D; i++ {
			y := float64(dot32(ex.Down[i*F:(i+1)*F], a[t*F:(t+1)*F]))
			yq := float64(dot32(dn[i*F:(i+1)*F], aq[t*F:(t+1)*F]))
			num += (y - yq) * (y - yq)
			den += y * y
		}
	}
	return math.Sqrt(num / den)
}

// TestCholesky checks the factor, the inverse and the solves on a known
// symmetric positive definite matrix.
func TestCholesky(t *testing.T) {
	// a = L Lᵀ with L = [[2,0,0],[1,3,0],[-1,2,1]].
	a := []float64{4, 2, -2, 2, 10, 5, -2, 5, 6}
	l := append([]float64(nil), a...)
	if !cholesky(l, 3) {
		t.Fatal("factor failed")
	}
	want := []float64{2, 0, 0, 1, 3, 0, -1, 2, 1}
	for i := range want {
		if math.Abs(l[i]-want[i]) > 1e-12 {
			t.Fatalf("L = %v, want %v", l, want)
		}
	}
	inv := invFromCholesky(l, 3)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			var s float64
			for k := 0; k < 3; k++ {
				s += a[i*3+k] * inv[k*3+j]
			}
			if e := map[bool]float64{true: 1, false: 0}[i == j]; math.Abs(s-e) > 1e-12 {
				t.Fatalf("a * inv [%d][%d] = %v", i, j, s)
			}
		}
	}
	b := []float64{1, 2, 3}
	solveCholesky(l, 3, b, 1)
	for i := 0; i < 3; i++ {
		s := a[i*3]*b[0] + a[i*3+1]*b[1] + a[i*3+2]*b[2]
		if math.Abs(s-float64(i+1)) > 1e-12 {
			t.Fatalf("solve: a x = %v at %d", s, i)
		}
	}
	singular := []float64{1, 2, 2, 4}
	if cholesky(singular, 2) {
		t.Fatal("a singular matrix factored")
	}
}

// TestSwiGLURefinement: refining gate and up against their SwiGLU product
// lowers that product's error on the quantizer's inputs (what it
// minimises, less its ridge) and on held-back ones, and without passes
// the result is the H-only quantizer's exactly.
func TestSwiGLURefinement(t *testing.T) {
	D, F, n, nh := 128, 64, 768, 256
	ex, in := expertFixture(rand.New(rand.NewPCG(11, 12)), D, F, n, nh)
	prodErr := func(r *ExpertResult, x []float32, n int) float64 {
		g, u := make([]float32, F*D), make([]float32, F*D)
		quant.Dequantize(quant.Q2_0, r.Gate, g)
		quant.Dequantize(quant.Q2_0, r.Up, u)
		a, aq := swiglu(ex.Gate, ex.Up, x, n, D, F), swiglu(g, u, x, n, D, F)
		var num, den float64
		for i, v := range a {
			num += float64(v-aq[i]) * float64(v-aq[i])
			den += float64(v) * float64(v)
		}
		return math.Sqrt(num / den)
	}
	off := Defaults()
	off.SwiGLU, off.Expert = 0, 0
	base, err := QuantizeExpert(ex, in, off)
	if err != nil || base.Fallback != "" {
		t.Fatalf("fallback %q, err %v", base.Fallback, err)
	}
	zero := Defaults()
	zero.SwiGLU, zero.SwiGLUDamp, zero.Expert = 0, 5, 0
	if same, err := QuantizeExpert(ex, in, zero); err != nil || !bytes.Equal(same.Gate, base.Gate) || !bytes.Equal(same.Up, base.Up) || !bytes.Equal(same.Down, base.Down) {
		t.Fatalf("no SwiGLU passes but different bytes (err %v)", err)
	}
	on := Defaults()
	on.SwiGLU, on.SwiGLUDamp, on.Expert = 4, 0.1, 0
	res, err := QuantizeExpert(ex, in, on)
	if err != nil || res.Fallback != "" {
		t.Fatalf("fallback %q, err %v", res.Fallback, err)
	}
	for _, c := range []struct {
		name string
		x    []float32
		n    int
	}{{"quantizer's", in.X, n}, {"held-back", in.Held, nh}} {
		got, want := prodErr(res, c.x, c.n), prodErr(base, c.x, c.n)
		t.Logf("%s inputs: SwiGLU product error %.4f, H only %.4f", c.name, got, want)
		if !(got < want) {
			t.Fatalf("%s inputs: SwiGLU product error %.4f with the refinement, %.4f without", c.name, got, want)
		}
	}
}

// TestExpertRefinement: the expert-output refinement lowers the error of
// the expert's whole output on the inputs it was refined on, on the dense
// path and on the low-rank one (fewer tokens than columns), and unpack
// inverts pack.
func TestExpertRefinement(t *testing.T) {
	for _, c := range []struct{ D, F, n int }{{128, 64, 768}, {128, 64, 96}} {
		ex, in := expertFixture(rand.New(rand.NewPCG(13, 14)), c.D, c.F, c.n, 64)
		off := Defaults()
		off.Expert = 0
		base, err := QuantizeExpert(ex, in, off)
		if err != nil || base.Fallback != "" {
			t.Fatalf("fallback %q, err %v", base.Fallback, err)
		}
		on := Defaults()
		on.Expert, on.ExpertTokens = 1, 0 // at n < D too
		res, err := QuantizeExpert(ex, in, on)
		if err != nil || res.Fallback != "" {
			t.Fatalf("fallback %q, err %v", res.Fallback, err)
		}
		if bytes.Equal(res.Gate, base.Gate) && bytes.Equal(res.Up, base.Up) {
			t.Fatalf("n %d: the refinement changed no gate or up byte", c.n)
		}
		train := &Inputs{Held: in.X, NH: in.N}
		got, want := expertOutErr(ex, res, train), expertOutErr(ex, base, train)
		t.Logf("n %d: expert output error on the quantizer's inputs %.4f, without the refinement %.4f", c.n, got, want)
		if !(got < want) {
			t.Fatalf("n %d: expert output error %.4f with the refinement, %.4f without", c.n, got, want)
		}
		for _, b := range [][]byte{res.Gate, res.Up} {
			out := make([]byte, len(b))
			unpack(b, c.F, c.D).pack(out)
			if !bytes.Equal(out, b) {
				t.Fatal("unpack then pack changed the bytes")
			}
		}
	}
}

// expertFixture is a random expert with n correlated inputs for the
// quantizer and nh held back.
func expertFixture(rng *rand.Rand, D, F, n, nh int) (*Expert, *Inputs) {
	x := correlated(rng, n+nh, D, D/2)
	for i := range x {
		x[i] *= 0.2
	}
	ex := &Expert{Gate: randMatrix(rng, F*D, 0.1), Up: randMatrix(rng, F*D, 0.1), Down: randMatrix(rng, D*F, 0.1), D: D, F: F}
	return ex, &Inputs{X: x[:n*D], N: n, Held: x[n*D:], NH: nh}
}

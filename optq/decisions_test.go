package optq

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestBatchedScoringIsRowByRow: scoring up to 4 rows of a group in one
// pass (8 lanes each, as few candidates per row allow) gives the bytes
// of scoring them one row per pass, on the dense path and the low-rank one,
// for candidate counts that fill 1, 2 and 4 rows per pass.
func TestBatchedScoringIsRowByRow(t *testing.T) {
	for _, c := range []struct{ D, F, n int }{{192, 64, 400}, {192, 64, 40}} {
		ex, in := expertFixture(rand.New(rand.NewPCG(21, uint64(c.n))), c.D, c.F, c.n, 0)
		for _, cand := range []int{3, 7, 12} {
			opt := Defaults()
			opt.Candidates, opt.GridTokens = cand, 0 // the grid at n < D too
			batched, err := QuantizeExpert(ex, in, opt)
			if err != nil {
				t.Fatal(err)
			}
			saved := scoreBatchMax
			scoreBatchMax = 1
			single, err := QuantizeExpert(ex, in, opt)
			scoreBatchMax = saved
			if err != nil {
				t.Fatal(err)
			}
			if batched.Fallback != "" || !bytes.Equal(batched.Gate, single.Gate) || !bytes.Equal(batched.Up, single.Up) || !bytes.Equal(batched.Down, single.Down) {
				t.Fatalf("n %d, %d candidates: batched scoring differs from row by row (fallback %q)", c.n, cand, batched.Fallback)
			}
		}
	}
}

// TestExpertRefinementParts: without ExpertGate the refinement leaves
// gate's bytes as the quantizer gave them and changes up's; with WarmDown
// and no refinement passes, down's second quantization starts from and so
// keeps its first bytes; and 0 passes over gate and up change neither.
func TestExpertRefinementParts(t *testing.T) {
	for _, n := range []int{400, 40} {
		ex, in := expertFixture(rand.New(rand.NewPCG(23, uint64(n))), 192, 64, n, 0)
		off := Defaults()
		off.Expert = 0
		base, err := QuantizeExpert(ex, in, off)
		if err != nil {
			t.Fatal(err)
		}
		upOnly := Defaults()
		upOnly.Expert, upOnly.ExpertGate, upOnly.ExpertTokens = 1, false, 0
		res, err := QuantizeExpert(ex, in, upOnly)
		if err != nil || res.Fallback != "" {
			t.Fatalf("fallback %q, err %v", res.Fallback, err)
		}
		if !bytes.Equal(res.Gate, base.Gate) || bytes.Equal(res.Up, base.Up) {
			t.Fatalf("n %d: without ExpertGate gate changed (%v) or up did not (%v)", n, !bytes.Equal(res.Gate, base.Gate), bytes.Equal(res.Up, base.Up))
		}
		noRef, noRefOff := Defaults(), Defaults()
		noRef.Refine, noRefOff.Refine = 0, 0
		noRef.Expert, noRef.WarmDown, noRef.ExpertPasses, noRef.ExpertTokens = 1, true, 0, 0
		noRefOff.Expert = 0
		a, err := QuantizeExpert(ex, in, noRef)
		if err != nil {
			t.Fatal(err)
		}
		b, err := QuantizeExpert(ex, in, noRefOff)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Gate, b.Gate) || !bytes.Equal(a.Up, b.Up) || !bytes.Equal(a.Down, b.Down) {
			t.Fatalf("n %d: 0 expert passes and a warm down without refinement changed the bytes", n)
		}
	}
}

// TestExpertTokens: an expert with fewer quantizer tokens than
// ExpertTokens per gate/up column skips the expert-output refinement (the
// bytes of Expert 0, ExpertRounds 0); with ExpertTokens 0 the same expert
// runs it, and an expert with enough tokens runs it at the default.
func TestExpertTokens(t *testing.T) {
	const D, F = 128, 64
	for _, c := range []struct {
		n      int
		tokens float64
		runs   bool
	}{{96, DefaultExpertTokens, false}, {96, 0, true}, {96, 0.5, true}, {160, DefaultExpertTokens, true}, {160, 2, false}} {
		ex, in := expertFixture(rand.New(rand.NewPCG(41, uint64(c.n))), D, F, c.n, 0)
		off := Defaults()
		off.Expert = 0
		base, err := QuantizeExpert(ex, in, off)
		if err != nil || base.Fallback != "" || base.ExpertRounds != 0 {
			t.Fatalf("n %d: fallback %q, rounds %d, err %v", c.n, base.Fallback, base.ExpertRounds, err)
		}
		opt := Defaults()
		opt.ExpertTokens = c.tokens
		res, err := QuantizeExpert(ex, in, opt)
		if err != nil || res.Fallback != "" {
			t.Fatalf("n %d: fallback %q, err %v", c.n, res.Fallback, err)
		}
		same := bytes.Equal(res.Gate, base.Gate) && bytes.Equal(res.Up, base.Up) && bytes.Equal(res.Down, base.Down)
		if want := 0; c.runs {
			want = opt.Expert
			if res.ExpertRounds != want || same {
				t.Fatalf("n %d, %g tokens per column: %d rounds (want %d), bytes of no refinement %v", c.n, c.tokens, res.ExpertRounds, want, same)
			}
		} else if res.ExpertRounds != 0 || !same {
			t.Fatalf("n %d, %g tokens per column: %d rounds, bytes of no refinement %v", c.n, c.tokens, res.ExpertRounds, same)
		}
	}
	bad := Defaults()
	bad.ExpertTokens = -1
	if bad.Check() == nil {
		t.Fatal("negative ExpertTokens accepted")
	}
}

// TestGridTokens: a matrix with fewer quantizer tokens than GridTokens per
// column gets the bytes of Candidates 0 (the plain search's pick alone),
// which differ from the grid's; with enough tokens the default scores the
// grid (the bytes of GridTokens 0).
func TestGridTokens(t *testing.T) {
	const D, F = 128, 64
	for _, n := range []int{48, 200} {
		ex, in := expertFixture(rand.New(rand.NewPCG(43, uint64(n))), D, F, n, 0)
		run := func(cand int, grid float64) *ExpertResult {
			opt := Defaults()
			opt.Expert, opt.Candidates, opt.GridTokens = 0, cand, grid
			res, err := QuantizeExpert(ex, in, opt)
			if err != nil || res.Fallback != "" {
				t.Fatalf("n %d: fallback %q, err %v", n, res.Fallback, err)
			}
			return res
		}
		same := func(a, b *ExpertResult) bool {
			return bytes.Equal(a.Gate, b.Gate) && bytes.Equal(a.Up, b.Up) && bytes.Equal(a.Down, b.Down)
		}
		def, always, pick := run(DefaultCandidates, DefaultGridTokens), run(DefaultCandidates, 0), run(0, 0)
		if same(always, pick) {
			t.Fatalf("n %d: the grid changed no byte", n)
		}
		if n < F { // low-rank in every matrix: the pick alone
			if !same(def, pick) {
				t.Fatalf("n %d: the default scored the grid below %g tokens per column", n, DefaultGridTokens)
			}
		} else if n >= D && !same(def, always) {
			t.Fatalf("n %d: the default skipped the grid with enough tokens", n)
		}
	}
	bad := Defaults()
	bad.GridTokens = math.Inf(1)
	if bad.Check() == nil {
		t.Fatal("infinite GridTokens accepted")
	}
}

// TestPlainTokens: an expert with fewer quantizer tokens than PlainTokens
// per column gets the plain search's bytes for its three matrices and says
// so (FallbackFewTokens); with enough, or PlainTokens 0, the calibrated
// quantizer's; and an expert without tokens falls back as before.
func TestPlainTokens(t *testing.T) {
	const D, F, n = 128, 64, 24
	ex, in := expertFixture(rand.New(rand.NewPCG(45, 46)), D, F, n, 8)
	plainOf := func(w []float32) []byte {
		b := make([]byte, len(w)/group*quant.Q2BlockBytes)
		if err := plain(w, b, Defaults()); err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		tokens float64
		plain  bool
	}{{0, false}, {0.125, false}, {0.25, true}, {1, true}} {
		opt := Defaults()
		opt.PlainTokens = c.tokens
		res, err := QuantizeExpert(ex, in, opt)
		if err != nil {
			t.Fatal(err)
		}
		isPlain := bytes.Equal(res.Gate, plainOf(ex.Gate)) && bytes.Equal(res.Up, plainOf(ex.Up)) && bytes.Equal(res.Down, plainOf(ex.Down))
		if want := map[bool]string{true: FallbackFewTokens, false: ""}[c.plain]; res.Fallback != want || isPlain != c.plain {
			t.Fatalf("%g tokens per column, n %d of %d columns: fallback %q (want %q), plain bytes %v", c.tokens, n, D, res.Fallback, want, isPlain)
		}
		if res.Errors[2].HeldTokens != 8 {
			t.Fatalf("%g tokens per column: down measured on %d held tokens, want 8", c.tokens, res.Errors[2].HeldTokens)
		}
	}
	opt := Defaults()
	opt.PlainTokens = 1
	res, err := QuantizeExpert(ex, &Inputs{Held: in.Held, NH: in.NH}, opt)
	if err != nil || res.Fallback != FallbackNoTokens {
		t.Fatalf("no tokens: fallback %q, err %v", res.Fallback, err)
	}
	bad := Defaults()
	bad.PlainTokens = math.NaN()
	if bad.Check() == nil {
		t.Fatal("NaN PlainTokens accepted")
	}
}

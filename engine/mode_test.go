package engine_test

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/kernels"
)

func openMode(t *testing.T, path string, mode engine.Mode, threads int) *engine.Model {
	t.Helper()
	m, err := engine.Open(path, engine.Options{Mode: mode, Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestFastModeKLD: fast mode's distributions stay within a measured KL
// bound of exact mode's on held-out windows, with the same argmax on most
// positions, and are not exact mode's bits (the quantized path ran). The
// suite scores 4 windows of 256; STRATACTL_LONG=1 scores all 64.
func TestFastModeKLD(t *testing.T) {
	for _, fm := range engine.FastFixtures {
		t.Run(fm.Model+"/"+fm.File, func(t *testing.T) {
			path := testutil.Path(t, "models", fm.Model, fm.File)
			exact := openMode(t, path, engine.Exact, 0)
			fast := openMode(t, path, engine.Fast, 0)
			ids, err := evalq.ReadIDs(testutil.Path(t, "models", fm.Model, "refs", "ppl_tokens.i32.bin"))
			if err != nil {
				t.Fatal(err)
			}
			n := 4
			if os.Getenv("STRATACTL_LONG") != "" {
				n = 64
			}
			windows, err := evalq.Windows(ids, 256, n)
			if err != nil {
				t.Fatal(err)
			}
			res, _, err := evalq.Run(context.Background(), exact, fast, windows, evalq.ScoreAll, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s fast vs exact: %d windows, %d positions: KLD mean %.3g ± %.2g, median %.3g, top-1 agreement %.4f, PPL %.4f vs %.4f",
				fm.Model, fm.File, res.Windows, res.Tokens, res.KLDMean, res.KLDMeanErr, res.KLDMedian, res.Top1Agreement, res.PPL, res.PPLRef)
			if res.KLDMean <= 0 {
				t.Errorf("KLD %g: fast mode gave exact mode's distributions, so the quantized path did not run", res.KLDMean)
			}
			if res.KLDMean > fm.MaxKLD {
				t.Errorf("KLD mean %g exceeds the bound %g", res.KLDMean, fm.MaxKLD)
			}
			if res.Top1Agreement < fm.MinTop1 {
				t.Errorf("top-1 agreement %g below %g", res.Top1Agreement, fm.MinTop1)
			}
		})
	}
}

// TestFastModeUsesQ8: the fixtures' expert matrices are of types with a
// quantized dot product (Q8_0 or BF16 activations), so fast mode is not
// vacuous on them.
func TestFastModeUsesQ8(t *testing.T) {
	for _, fm := range engine.FastFixtures {
		m := openMode(t, testutil.Path(t, "models", fm.Model, fm.File), engine.Fast, 1)
		ex, err := m.Experts.Get(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, mat := range []*kernels.Matrix{&ex.Gate, &ex.Up, &ex.Down} {
			if !mat.CanDotQ8() && !mat.CanDotBF16() {
				t.Errorf("%s %s: expert matrix of %s has no quantized path", fm.Model, fm.File, mat.Type)
			}
		}
		m.Experts.Release(0, 0)
	}
}

// TestFastModeLlamaCpp (STRATACTL_LONG=1): llama.cpp's CPU kernels quantize
// the activations to Q8_0 before each IQ4_NL or Q8_0 product, as fast mode
// does, so fast mode's IQ4_NL tiny-qwen35moe against exact BF16 over
// llama-perplexity's positions (64 windows x 256, second half) is compared
// with llama.cpp's published figures (refs-iq4nl/quality.json) beside exact
// mode's.
func TestFastModeLlamaCpp(t *testing.T) {
	if os.Getenv("STRATACTL_LONG") == "" {
		t.Skip("STRATACTL_LONG=1 runs it (about 80 s)")
	}
	dir := testutil.Path(t, "models", "tiny-qwen35moe")
	ref := openMode(t, dir+"/model-bf16.gguf", engine.Exact, 0)
	ids, err := evalq.ReadIDs(dir + "/refs/ppl_tokens.i32.bin")
	if err != nil {
		t.Fatal(err)
	}
	windows, err := evalq.Windows(ids, 256, 64)
	if err != nil {
		t.Fatal(err)
	}
	const llamaKLD, llamaTop1, llamaPPL = 0.014321, 0.92594, 43.451678
	var got [2]evalq.Result
	for i, mode := range []engine.Mode{engine.Exact, engine.Fast} {
		cand := openMode(t, dir+"/model-iq4nl.gguf", mode, 0)
		res, _, err := evalq.Run(context.Background(), ref, cand, windows, evalq.ScoreSecondHalf, nil)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = res
		t.Logf("IQ4_NL %s vs BF16 exact, %d positions: PPL %.6f, KLD mean %.6f ± %.6f, median %.6f, top-1 %.5f (llama.cpp: PPL %.6f, KLD %.6f, top-1 %.5f)",
			mode, res.Tokens, res.PPL, res.KLDMean, res.KLDMeanErr, res.KLDMedian, res.Top1Agreement, llamaPPL, llamaKLD, llamaTop1)
	}
	if e, f := math.Abs(got[0].KLDMean-llamaKLD), math.Abs(got[1].KLDMean-llamaKLD); f >= e {
		t.Errorf("fast mode's KLD %g is no closer to llama.cpp's %g than exact mode's %g", got[1].KLDMean, llamaKLD, got[0].KLDMean)
	}
}

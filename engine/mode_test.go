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

// fastModels are the quantized fixtures fast mode is checked on, with the
// bound on its mean KL divergence from exact mode (nats per position, over
// the windows scored) and the least top-1 agreement. The bounds sit about
// 3x above the divergences measured over all 64 windows (docs/QUALITY.md),
// and far below the divergence of the quantization itself from bf16.
var fastModels = []struct {
	model, file string
	maxKLD      float64
	minTop1     float64
}{
	{"tiny-qwen3moe", "model-iq3s.gguf", 0.02, 0.95},
	{"tiny-qwen3moe", "model-iq4nl.gguf", 0.02, 0.95},
	{"tiny-qwen35moe", "model-iq4nl.gguf", 0.02, 0.95},
}

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
	for _, fm := range fastModels {
		t.Run(fm.model+"/"+fm.file, func(t *testing.T) {
			path := testutil.Path(t, "models", fm.model, fm.file)
			exact := openMode(t, path, engine.Exact, 0)
			fast := openMode(t, path, engine.Fast, 0)
			ids, err := evalq.ReadIDs(testutil.Path(t, "models", fm.model, "refs", "ppl_tokens.i32.bin"))
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
				fm.model, fm.file, res.Windows, res.Tokens, res.KLDMean, res.KLDMeanErr, res.KLDMedian, res.Top1Agreement, res.PPL, res.PPLRef)
			if res.KLDMean <= 0 {
				t.Errorf("KLD %g: fast mode gave exact mode's distributions, so the quantized path did not run", res.KLDMean)
			}
			if res.KLDMean > fm.maxKLD {
				t.Errorf("KLD mean %g exceeds the bound %g", res.KLDMean, fm.maxKLD)
			}
			if res.Top1Agreement < fm.minTop1 {
				t.Errorf("top-1 agreement %g below %g", res.Top1Agreement, fm.minTop1)
			}
		})
	}
}

// TestFastModeDeterministic: in fast mode the logits have the same bits at
// 1 and 3 threads, and batched prefill gives token-by-token decode's bits.
func TestFastModeDeterministic(t *testing.T) {
	for _, fm := range fastModels {
		t.Run(fm.model+"/"+fm.file, func(t *testing.T) {
			path := testutil.Path(t, "models", fm.model, fm.file)
			ids, err := evalq.ReadIDs(testutil.Path(t, "models", fm.model, "refs", "eval_tokens.i32.bin"))
			if err != nil {
				t.Fatal(err)
			}
			ids = ids[:24]
			one := openMode(t, path, engine.Fast, 1)
			three := openMode(t, path, engine.Fast, 3)
			want, err := one.NewSession().Forward(ids, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := three.NewSession().Forward(ids, true)
			if err != nil {
				t.Fatal(err)
			}
			sameBits(t, "3 threads vs 1", got, want)
			s := three.NewSession()
			var step []float32
			for i := range ids {
				l, err := s.Forward(ids[i:i+1], false)
				if err != nil {
					t.Fatal(err)
				}
				step = append(step, l...)
			}
			sameBits(t, "token by token vs batched", step, want)
		})
	}
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: logit %d is %g, want %g", what, i, got[i], want[i])
		}
	}
}

// TestFastModeUsesQ8: the fixtures' expert matrices are of types with a
// quantized dot product, so fast mode is not vacuous on them.
func TestFastModeUsesQ8(t *testing.T) {
	for _, fm := range fastModels {
		m := openMode(t, testutil.Path(t, "models", fm.model, fm.file), engine.Fast, 1)
		ex, err := m.Experts.Get(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, mat := range []*kernels.Matrix{&ex.Gate, &ex.Up, &ex.Down} {
			if !mat.CanDotQ8() {
				t.Errorf("%s %s: expert matrix of %s has no Q8 path", fm.model, fm.file, mat.Type)
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

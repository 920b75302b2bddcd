package evalq

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/testutil"
)

// The qwen35moe fixture: refs/ppl_nll.f32.bin holds transformers' float32
// per-token NLL of the held-out windows, and manifest.json the numpy check of
// the IQ4_NL variant on the positions llama-perplexity scores.
func qwen35File(t *testing.T, elem ...string) string {
	t.Helper()
	return testutil.Path(t, append([]string{"models", "tiny-qwen35moe"}, elem...)...)
}

// openQwen35 opens a model of the qwen35moe fixture.
func openQwen35(t *testing.T, file string) *engine.Model {
	t.Helper()
	m, err := engine.Open(qwen35File(t, file), engine.Options{Mode: engine.Exact})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func qwen35Windows(t *testing.T, n int) [][]int32 {
	t.Helper()
	ids, err := ReadIDs(qwen35File(t, "refs", "ppl_tokens.i32.bin"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := Windows(ids, 256, n)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// secondHalfNLL is the mean of refs/ppl_nll over the positions
// ScoreSecondHalf scores in the first n windows: row w, j = 128..254
// (-log p(token j+1 | tokens 0..j)).
func secondHalfNLL(t *testing.T, n int) (float64, int) {
	nll := testutil.ReadF32(t, qwen35File(t, "refs", "ppl_nll.f32.bin"))
	if len(nll) != 64*255 {
		t.Fatalf("ppl_nll holds %d values, want 64 x 255", len(nll))
	}
	var sum float64
	count := 0
	for w := range n {
		for j := ScoreSecondHalf.First(256); j < 255; j++ {
			sum += float64(nll[w*255+j])
			count++
		}
	}
	return sum / float64(count), count
}

// TestSecondHalfPPLQwen35: the BF16 model's perplexity over the second
// halves of the first 2 held-out windows equals transformers' (from
// refs/ppl_nll) to 1e-4 relative.
func TestSecondHalfPPLQwen35(t *testing.T) {
	m := openQwen35(t, "model-bf16.gguf")
	const n = 2
	r, _, err := Run(context.Background(), m, m, qwen35Windows(t, n), ScoreSecondHalf, nil)
	if err != nil {
		t.Fatal(err)
	}
	nll, count := secondHalfNLL(t, n)
	if r.Tokens != count {
		t.Fatalf("%d positions scored, want %d", r.Tokens, count)
	}
	want := math.Exp(nll)
	if rel := math.Abs(r.PPLRef-want) / want; rel > 1e-4 {
		t.Errorf("second-half PPL %.6f, transformers %.6f (relative %.2g)", r.PPLRef, want, rel)
	}
	t.Logf("second-half PPL over %d windows: %.6f (transformers %.6f)", n, r.PPLRef, want)
}

// TestPublishedQualityQwen35 reproduces the fixture's float32 check of the
// IQ4_NL variant (manifest quantized_variants.iq4nl.numpy_check: mean KLD,
// top-1 agreement and both perplexities over the 8128 positions
// llama-perplexity scores in the 64 held-out windows) to 1e-3 relative. Both
// models over 64 x 256 tokens: it runs only with STRATACTL_FULL_EVAL=1.
func TestPublishedQualityQwen35(t *testing.T) {
	if os.Getenv("STRATACTL_FULL_EVAL") == "" {
		t.Log("set STRATACTL_FULL_EVAL=1 to run the full 64-window IQ4_NL comparison on tiny-qwen35moe")
		return
	}
	b, err := os.ReadFile(qwen35File(t, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Quantized struct {
			IQ4NL struct {
				Check struct {
					NTokens  int     `json:"n_tokens"`
					PPLBF16  float64 `json:"ppl_bf16"`
					PPLIQ4NL float64 `json:"ppl_iq4nl"`
					MeanKLD  float64 `json:"mean_kld"`
					Median   float64 `json:"median_kld"`
					Top1     float64 `json:"top1_agreement_percent"`
				} `json:"numpy_check"`
			} `json:"iq4nl"`
		} `json:"quantized_variants"`
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	q := man.Quantized.IQ4NL.Check
	if q.NTokens != 64*127 {
		t.Fatalf("manifest numpy_check covers %d positions, want %d", q.NTokens, 64*127)
	}
	ref, cand := openQwen35(t, "model-bf16.gguf"), openQwen35(t, "model-iq4nl.gguf")
	r, _, err := Run(context.Background(), ref, cand, qwen35Windows(t, 64), ScoreSecondHalf, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("iq4nl second half: ppl %.6f (%.6f) ppl_ref %.6f (%.6f) kld %.6f (%.6f) median %.6f (%.6f) top1 %.4f%% (%.4f%%)",
		r.PPL, q.PPLIQ4NL, r.PPLRef, q.PPLBF16, r.KLDMean, q.MeanKLD, r.KLDMedian, q.Median, 100*r.Top1Agreement, q.Top1)
	rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }
	if r.Tokens != q.NTokens {
		t.Errorf("%d positions, reference %d", r.Tokens, q.NTokens)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"mean KLD", r.KLDMean, q.MeanKLD},
		{"top-1 agreement %", 100 * r.Top1Agreement, q.Top1},
		{"PPL", r.PPL, q.PPLIQ4NL},
		{"BF16 PPL", r.PPLRef, q.PPLBF16},
	} {
		if rel(c.got, c.want) > 1e-3 {
			t.Errorf("%s %v, reference %v (relative %.2g)", c.name, c.got, c.want, rel(c.got, c.want))
		}
	}
}

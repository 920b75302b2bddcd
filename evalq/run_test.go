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

func openModel(t *testing.T, file string) *engine.Model {
	t.Helper()
	m, err := engine.Open(testutil.TinyModel(t, file), engine.Options{Mode: engine.Exact})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func ppTokens(t *testing.T, n int) [][]int32 {
	t.Helper()
	ids, err := ReadIDs(testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := Windows(ids, 256, n)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSelfEvalIsExact: a model against itself gives KLD 0, Δp 0 and top-1
// agreement 1 exactly, and the same perplexity on both sides.
func TestSelfEvalIsExact(t *testing.T) {
	a, b := openModel(t, "model-iq3s.gguf"), openModel(t, "model-iq3s.gguf")
	r, pos, err := Run(context.Background(), a, b, ppTokens(t, 2), ScoreAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tokens != 2*255 || len(pos) != r.Tokens || r.Windows != 2 {
		t.Fatalf("%d positions over %d windows", r.Tokens, r.Windows)
	}
	if r.KLDMean != 0 || r.KLDMedian != 0 || r.Top1Agreement != 1 || r.DeltaPRMS != 0 || r.PPL != r.PPLRef {
		t.Errorf("self evaluation: %+v", r)
	}
}

// TestSecondHalfScoring: ScoreSecondHalf scores exactly llama-perplexity's
// positions, 128..254 of a 256-token window (127 per window), with the same
// per-position figures as scoring every position, and summarizes only those.
func TestSecondHalfScoring(t *testing.T) {
	ref, cand := openModel(t, "model-bf16.gguf"), openModel(t, "model-iq3s.gguf")
	windows := ppTokens(t, 2)
	_, all, err := Run(context.Background(), ref, cand, windows, ScoreAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, half, err := Run(context.Background(), ref, cand, windows, ScoreSecondHalf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tokens != 2*127 || len(half) != r.Tokens || r.Windows != 2 || len(all) != 2*255 {
		t.Fatalf("second half: %d positions over %d windows (all: %d)", r.Tokens, r.Windows, len(all))
	}
	var want []Position
	for w := range 2 {
		want = append(want, all[w*255+128:(w+1)*255]...)
	}
	for i := range want {
		if half[i] != want[i] {
			t.Fatalf("scored position %d: %+v, scoring every position gives %+v there", i, half[i], want[i])
		}
	}
	if s := Summarize(want, 2); s.KLDMean != r.KLDMean || s.PPL != r.PPL || s.Top1Agreement != r.Top1Agreement {
		t.Errorf("summary %+v, want %+v", r, s)
	}
	// A window too short to leave a position to score is refused.
	if _, _, err := Run(context.Background(), ref, cand, [][]int32{windows[0][:2]}, ScoreSecondHalf, nil); err == nil {
		t.Error("a 2-token window under second-half scoring was accepted")
	}
}

// TestAgainstStoredLogits compares the engine on the eval sequences with the
// fixture's float32 BF16 logits (refs/eval_logits.f32.bin): the BF16 model
// must agree everywhere with divergence near 0, and the IQ3_S model's top-1
// agreement over all 4×64 positions must be refs-iq3s/quality.json's
// eval_top1_agreement_vs_bf16_refs.
func TestAgainstStoredLogits(t *testing.T) {
	ids, err := ReadIDs(testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := Windows(ids, 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := testutil.ReadF32(t, testutil.TinyModel(t, "refs", "eval_logits.f32.bin"))
	var q struct {
		Top1 float64 `json:"eval_top1_agreement_vs_bf16_refs"`
	}
	b, err := os.ReadFile(testutil.TinyModel(t, "refs-iq3s", "quality.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file   string
		top1   float64
		maxKLD float64
		minKLD float64
	}{
		{"model-bf16.gguf", 1, 1e-8, 0},
		{"model-iq3s.gguf", q.Top1, math.Inf(1), 1e-3},
	} {
		m := openModel(t, c.file)
		v := m.Config.Vocab
		s := m.NewSession()
		var pos []Position
		for i, w := range seqs {
			s.Reset()
			logits, err := s.Forward(w, true)
			if err != nil {
				t.Fatal(err)
			}
			for p := range w {
				o := (i*64 + p) * v
				// The next token does not matter for KLD and top-1; the
				// sequence's last position has none.
				x, err := Compare(stored[o:o+v], logits[p*v:(p+1)*v], w[0])
				if err != nil {
					t.Fatal(err)
				}
				pos = append(pos, x)
			}
		}
		r := Summarize(pos, len(seqs))
		if r.Top1Agreement != c.top1 {
			t.Errorf("%s: top-1 agreement with the stored BF16 logits %v, want %v", c.file, r.Top1Agreement, c.top1)
		}
		if r.KLDMean > c.maxKLD || r.KLDMean < c.minKLD {
			t.Errorf("%s: mean KLD %v outside [%v, %v]", c.file, r.KLDMean, c.minKLD, c.maxKLD)
		}
		t.Logf("%s vs stored BF16 logits: top-1 %v, mean KLD %.3g", c.file, r.Top1Agreement, r.KLDMean)
	}
}

// qualityRef is refs-<variant>/quality.json.
type qualityRef struct {
	PPL       float64 `json:"ppl"`
	MeanKLD   float64 `json:"mean_kld"`
	MedianKLD float64 `json:"median_kld"`
	Top1      float64 `json:"top1_agreement"`
	NTokens   int     `json:"n_tokens"`
	BF16PPL   float64 `json:"bf16_ppl"`
}

// TestPublishedQuality reproduces the published figures of the quantized
// variants (README "Quantized variants", refs-*/quality.json) over all 64
// held-out windows: 2 × 16k tokens through the engine per variant, so it
// runs only with STRATACTL_FULL_EVAL=1.
func TestPublishedQuality(t *testing.T) {
	if os.Getenv("STRATACTL_FULL_EVAL") == "" {
		t.Log("set STRATACTL_FULL_EVAL=1 to run the full 64-window comparison (about a minute per variant)")
		return
	}
	ref := openModel(t, "model-bf16.gguf")
	windows := ppTokens(t, 0)
	for _, v := range []string{"iq3s", "iq4nl", "mixed"} {
		t.Run(v, func(t *testing.T) {
			b, err := os.ReadFile(testutil.TinyModel(t, "refs-"+v, "quality.json"))
			if err != nil {
				t.Fatal(err)
			}
			var q qualityRef
			if err := json.Unmarshal(b, &q); err != nil {
				t.Fatal(err)
			}
			r, _, err := Run(context.Background(), ref, openModel(t, "model-"+v+".gguf"), windows, ScoreAll, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: ppl %.6f (ref %.6f) ppl_ref %.6f (ref %.6f) kld %.6f (%.6f) median %.6f (%.6f) top1 %.6f (%.6f)",
				v, r.PPL, q.PPL, r.PPLRef, q.BF16PPL, r.KLDMean, q.MeanKLD, r.KLDMedian, q.MedianKLD, r.Top1Agreement, q.Top1)
			rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }
			if r.Tokens != q.NTokens {
				t.Errorf("%d positions, reference %d", r.Tokens, q.NTokens)
			}
			if rel(r.PPL, q.PPL) > 1e-4 || rel(r.PPLRef, q.BF16PPL) > 1e-4 {
				t.Errorf("ppl %v / %v, reference %v / %v", r.PPL, r.PPLRef, q.PPL, q.BF16PPL)
			}
			if rel(r.KLDMean, q.MeanKLD) > 1e-3 || rel(r.KLDMedian, q.MedianKLD) > 1e-3 {
				t.Errorf("kld mean %v median %v, reference %v %v", r.KLDMean, r.KLDMedian, q.MeanKLD, q.MedianKLD)
			}
			// A handful of near-ties may flip between float32 engines.
			if math.Abs(r.Top1Agreement-q.Top1) > 5.0/float64(q.NTokens) {
				t.Errorf("top-1 agreement %v, reference %v", r.Top1Agreement, q.Top1)
			}
		})
	}
}

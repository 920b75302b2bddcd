package engine

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

// TestQualityJSON recomputes refs-*/quality.json (perplexity on the 64
// held-out windows, KL divergence from the BF16 model, top-1 agreement) for
// the three quantized variants. It runs 4 x 16384 tokens, minutes on two
// cores, so only with STRATACTL_LONG=1 (go test ./engine -run QualityJSON).
func TestQualityJSON(t *testing.T) {
	if os.Getenv("STRATACTL_LONG") == "" {
		t.Skip("long: set STRATACTL_LONG=1")
	}
	windows := readI32(t, testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin"))
	const W, N = 64, 256
	bf := openModel(t, "model-bf16.gguf")
	V := bf.Config.Vocab
	refLogits := make([][]float32, W)
	var bfNLL float64
	for w := 0; w < W; w++ {
		ids := windows[w*N : (w+1)*N]
		l, err := bf.NewSession().Forward(ids, true)
		if err != nil {
			t.Fatal(err)
		}
		refLogits[w] = l
		for p := 0; p < N-1; p++ {
			bfNLL -= logSoftmax(l[p*V : (p+1)*V])[ids[p+1]]
		}
	}
	// The BF16 baseline of the README: 70.8367 (numpy float32 forward).
	bfPPL := math.Exp(bfNLL / float64(W*(N-1)))
	t.Logf("model-bf16.gguf: PPL %.4f (README 70.8367)", bfPPL)
	if math.Abs(bfPPL/70.8367-1) > 1e-4 {
		t.Errorf("BF16 perplexity %.4f, the README says 70.8367", bfPPL)
	}
	for _, v := range []struct{ file, refs string }{
		{"model-iq4nl.gguf", "refs-iq4nl"}, {"model-iq3s.gguf", "refs-iq3s"}, {"model-mixed.gguf", "refs-mixed"},
	} {
		var q struct {
			PPL     float64 `json:"ppl"`
			MeanKLD float64 `json:"mean_kld"`
			Top1    float64 `json:"top1_agreement"`
		}
		b, err := os.ReadFile(testutil.TinyModel(t, v.refs, "quality.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &q); err != nil {
			t.Fatal(err)
		}
		m := openModel(t, v.file)
		var nll, kld float64
		var agree, n int
		for w := 0; w < W; w++ {
			ids := windows[w*N : (w+1)*N]
			l, err := m.NewSession().Forward(ids, true)
			if err != nil {
				t.Fatal(err)
			}
			for p := 0; p < N-1; p++ {
				lq, lp := logSoftmax(l[p*V:(p+1)*V]), logSoftmax(refLogits[w][p*V:(p+1)*V])
				nll -= lq[ids[p+1]]
				for i := range lp {
					kld += math.Exp(lp[i]) * (lp[i] - lq[i])
				}
				if Argmax(l[p*V:(p+1)*V]) == Argmax(refLogits[w][p*V:(p+1)*V]) {
					agree++
				}
				n++
			}
		}
		ppl, mk, top1 := math.Exp(nll/float64(n)), kld/float64(n), float64(agree)/float64(n)
		t.Logf("%s: PPL %.4f (ref %.4f), mean KLD %.5f (ref %.5f), top-1 %.4f (ref %.4f)", v.file, ppl, q.PPL, mk, q.MeanKLD, top1, q.Top1)
		if math.Abs(ppl/q.PPL-1) > 1e-3 || math.Abs(mk-q.MeanKLD) > 1e-3 || math.Abs(top1-q.Top1) > 2e-3 {
			t.Errorf("%s: quality differs from %s/quality.json", v.file, v.refs)
		}
	}
}

// logSoftmax in float64 of float32 logits.
func logSoftmax(x []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	ls := mx + math.Log(s)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - ls
	}
	return out
}

package evalq

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func TestCompareClosedForm(t *testing.T) {
	// p = (1/2, 1/2), q = (3/4, 1/4): KL(p||q) = (1/2) ln(4/3).
	ref := []float32{0, 0}
	cand := []float32{float32(math.Log(3)), 0}
	p, err := Compare(ref, cand, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.5 * math.Log(4.0/3)
	if math.Abs(p.KLD-want) > 1e-7 {
		t.Errorf("KLD = %v, want %v", p.KLD, want)
	}
	if math.Abs(p.NLL-math.Log(4)) > 1e-7 || math.Abs(p.NLLRef-math.Log(2)) > 1e-12 {
		t.Errorf("NLL = %v / %v, want ln 4 / ln 2", p.NLL, p.NLLRef)
	}
	if math.Abs(p.DeltaP-(0.25-0.5)) > 1e-7 {
		t.Errorf("Δp = %v, want -0.25", p.DeltaP)
	}
	// Ties go to the first index, as numpy's argmax: ref's top is 0, cand's 0.
	if !p.SameTop {
		t.Error("top tokens should agree (both 0)")
	}
}

func TestCompareSelfIsExactlyZero(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	l := make([]float32, 4096)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 8)
	}
	p, err := Compare(l, l, 17)
	if err != nil {
		t.Fatal(err)
	}
	if p.KLD != 0 || p.DeltaP != 0 || !p.SameTop || p.NLL != p.NLLRef {
		t.Fatalf("self comparison gave %+v", p)
	}
}

// TestCompareAgainstDirectSum checks the log-space form against the textbook
// sum p log(p/q) with explicitly normalised probabilities.
func TestCompareAgainstDirectSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const v = 512
	ref := make([]float32, v)
	cand := make([]float32, v)
	for i := range ref {
		ref[i] = float32(r.NormFloat64() * 3)
		cand[i] = ref[i] + float32(r.NormFloat64()*0.5)
	}
	p, err := Compare(ref, cand, 5)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(l []float32) []float64 {
		out := make([]float64, len(l))
		var s float64
		for i, x := range l {
			out[i] = math.Exp(float64(x))
			s += out[i]
		}
		for i := range out {
			out[i] /= s
		}
		return out
	}
	P, Q := norm(ref), norm(cand)
	var kl float64
	for i := range P {
		kl += P[i] * math.Log(P[i]/Q[i])
	}
	if math.Abs(p.KLD-kl) > 1e-12*math.Max(1, kl) {
		t.Errorf("KLD %v, direct %v", p.KLD, kl)
	}
	if math.Abs(p.DeltaP-(Q[5]-P[5])) > 1e-12 {
		t.Errorf("Δp %v, direct %v", p.DeltaP, Q[5]-P[5])
	}
}

func TestCompareRejectsBadInput(t *testing.T) {
	if _, err := Compare([]float32{0, 1}, []float32{0}, 0); err == nil {
		t.Error("length mismatch accepted")
	}
	if _, err := Compare([]float32{0, 1}, []float32{0, 1}, 2); err == nil {
		t.Error("token outside vocabulary accepted")
	}
	if _, err := Compare([]float32{0, float32(math.NaN())}, []float32{0, 1}, 0); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := Compare([]float32{0, 1}, []float32{float32(math.Inf(1)), 1}, 0); err == nil {
		t.Error("Inf accepted")
	}
}

func TestPercentileRule(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	cases := []struct{ f, want float64 }{
		{0, 1}, {1, 10}, {0.5, 5.5}, {0.9, 9.1}, {0.1, 1.9}, {0.999, 9.991},
	}
	for _, c := range cases {
		if got := percentile(v, c.f); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("percentile(%v) = %v, want %v", c.f, got, c.want)
		}
	}
	if got := percentile([]float64{1, 2, 7}, 0.5); got != 2 {
		t.Errorf("odd median = %v, want 2", got)
	}
}

func TestSummarize(t *testing.T) {
	pos := []Position{
		{NLL: 1, NLLRef: 0.5, KLD: 0.1, DeltaP: -0.1, SameTop: true},
		{NLL: 3, NLLRef: 1.5, KLD: 0.3, DeltaP: 0.2, SameTop: false},
		{NLL: 2, NLLRef: 1.0, KLD: 0.2, DeltaP: 0.0, SameTop: true},
		{NLL: 2, NLLRef: 1.0, KLD: 0.6, DeltaP: -0.3, SameTop: true},
	}
	r := Summarize(pos, 1)
	if r.Tokens != 4 || math.Abs(r.PPL-math.Exp(2)) > 1e-12 || math.Abs(r.PPLRef-math.Exp(1)) > 1e-12 {
		t.Errorf("ppl %v / %v", r.PPL, r.PPLRef)
	}
	if math.Abs(r.KLDMean-0.3) > 1e-12 || math.Abs(r.KLDMedian-0.25) > 1e-12 {
		t.Errorf("kld mean %v median %v", r.KLDMean, r.KLDMedian)
	}
	if r.Top1Agreement != 0.75 {
		t.Errorf("top1 %v", r.Top1Agreement)
	}
	if want := math.Sqrt((0.01 + 0.04 + 0 + 0.09) / 4); math.Abs(r.DeltaPRMS-want) > 1e-12 {
		t.Errorf("rms Δp %v, want %v", r.DeltaPRMS, want)
	}
	if r.KLDPercentiles[0].Label != "max" || r.KLDPercentiles[0].Value != 0.6 || r.KLDPercentiles[len(r.KLDPercentiles)-1].Value != 0.1 {
		t.Errorf("kld percentiles %+v", r.KLDPercentiles)
	}
	if len(r.DeltaPPercentiles) != 13 || r.DeltaPPercentiles[0].Value != 0.2 || r.DeltaPPercentiles[12].Value != -0.3 {
		t.Errorf("Δp percentiles %+v", r.DeltaPPercentiles)
	}
}

func TestWindowsAndIDs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ids.bin")
	if err := os.WriteFile(path, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err := ReadIDs(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 5 || ids[3] != -1 {
		t.Fatalf("ids %v", ids)
	}
	w, err := Windows(ids, 2, 0)
	if err != nil || len(w) != 2 || w[1][0] != 3 {
		t.Fatalf("windows %v %v", w, err)
	}
	if w, _ := Windows(ids, 2, 1); len(w) != 1 {
		t.Errorf("max 1 gave %d windows", len(w))
	}
	if _, err := Windows(ids, 8, 0); err == nil {
		t.Error("too few tokens accepted")
	}
	if err := CheckVocab(path, ids, 10); err == nil {
		t.Error("negative id accepted")
	}
	os.WriteFile(path, []byte{1, 0, 0}, 0o644)
	if _, err := ReadIDs(path); err == nil {
		t.Error("partial id accepted")
	}
}

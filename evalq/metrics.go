// Package evalq measures how far a candidate model's next-token
// distributions are from a reference model's: perplexity of both, the
// Kullback-Leibler divergence KL(P_ref || P_cand), top-1 agreement, and the
// statistics llama.cpp's `llama-perplexity --kl-divergence` prints, so that
// figures made here compare with the field's.
//
// It is its own package rather than part of profile because it answers a
// different question (how good is a model, not which experts does it use)
// and its metric core is pure arithmetic on logits that other tools (quantize
// searches, benchmarks) can call without pulling in profiling.
package evalq

import (
	"fmt"
	"math"
	"sort"
)

// Position is what one scored position contributes: the negative
// log-likelihood of the actual next token under each model, the divergence,
// the change in probability of the actual next token (as llama.cpp's Δp) and
// whether the argmaxes agree.
type Position struct {
	NLL, NLLRef float64
	KLD         float64
	DeltaP      float64
	SameTop     bool
}

// logSumExp is log(sum(exp(l))) in float64, stable for large logits.
func logSumExp(l []float32) (lse float64, argmax int) {
	maxv := float64(l[0])
	for i, v := range l {
		if float64(v) > maxv {
			maxv = float64(v)
			argmax = i
		}
	}
	var s float64
	for _, v := range l {
		s += math.Exp(float64(v) - maxv)
	}
	return maxv + math.Log(s), argmax
}

// checkFinite rejects logits that would make every figure meaningless.
func checkFinite(l []float32) error {
	for i, v := range l {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("logit %d is %v", i, v)
		}
	}
	return nil
}

// Compare scores one position: ref and cand are the two models' logits there
// (same vocabulary) and next is the token that follows.
func Compare(ref, cand []float32, next int32) (Position, error) {
	if len(ref) == 0 || len(ref) != len(cand) {
		return Position{}, fmt.Errorf("logit vectors of %d and %d entries", len(ref), len(cand))
	}
	if next < 0 || int(next) >= len(ref) {
		return Position{}, fmt.Errorf("next token %d outside the vocabulary of %d", next, len(ref))
	}
	if err := checkFinite(ref); err != nil {
		return Position{}, fmt.Errorf("reference: %w", err)
	}
	if err := checkFinite(cand); err != nil {
		return Position{}, fmt.Errorf("candidate: %w", err)
	}
	lseR, topR := logSumExp(ref)
	lseC, topC := logSumExp(cand)
	var kld float64
	for i := range ref {
		lpR := float64(ref[i]) - lseR
		lpC := float64(cand[i]) - lseC
		kld += math.Exp(lpR) * (lpR - lpC)
	}
	nll := lseC - float64(cand[next])
	nllRef := lseR - float64(ref[next])
	return Position{
		NLL:     nll,
		NLLRef:  nllRef,
		KLD:     kld,
		DeltaP:  math.Exp(-nll) - math.Exp(-nllRef),
		SameTop: topR == topC,
	}, nil
}

// Percentile is one order statistic, labelled as llama.cpp prints it.
type Percentile struct {
	Label    string  `json:"label"`
	Fraction float64 `json:"fraction"`
	Value    float64 `json:"value"`
}

// Result is the summary of a comparison.
type Result struct {
	Tokens  int `json:"tokens"` // scored positions
	Windows int `json:"windows"`

	PPL         float64 `json:"ppl"`
	PPLErr      float64 `json:"ppl_err"`
	PPLRef      float64 `json:"ppl_ref"`
	PPLRefErr   float64 `json:"ppl_ref_err"`
	NLL         float64 `json:"nll"`
	NLLRef      float64 `json:"nll_ref"`
	PPLRatio    float64 `json:"ppl_ratio"`
	LogPPLRatio float64 `json:"ln_ppl_ratio"`

	KLDMean        float64      `json:"kld_mean"`
	KLDMeanErr     float64      `json:"kld_mean_err"`
	KLDMedian      float64      `json:"kld_median"`
	KLDPercentiles []Percentile `json:"kld_percentiles"`

	Top1Agreement    float64 `json:"top1_agreement"`
	Top1AgreementErr float64 `json:"top1_agreement_err"`

	DeltaPMean        float64      `json:"delta_p_mean"`
	DeltaPMeanErr     float64      `json:"delta_p_mean_err"`
	DeltaPRMS         float64      `json:"delta_p_rms"`
	DeltaPPercentiles []Percentile `json:"delta_p_percentiles"`
}

// The order statistics llama.cpp prints, in its order.
var (
	kldLevels = []struct {
		label string
		frac  float64
	}{
		{"max", 1}, {"99.9%", 0.999}, {"99%", 0.99}, {"95%", 0.95}, {"90%", 0.90},
		{"median", 0.5}, {"10%", 0.10}, {"5%", 0.05}, {"1%", 0.01}, {"0.1%", 0.001}, {"min", 0},
	}
	deltaPLevels = []struct {
		label string
		frac  float64
	}{
		{"max", 1}, {"99.9%", 0.999}, {"99%", 0.99}, {"95%", 0.95}, {"90%", 0.90}, {"75%", 0.75},
		{"median", 0.5}, {"25%", 0.25}, {"10%", 0.10}, {"5%", 0.05}, {"1%", 0.01}, {"0.1%", 0.001}, {"min", 0},
	}
)

// percentile interpolates linearly between the order statistics around
// fraction*(n-1), as llama.cpp does; the median of an even count is the mean
// of the two middle values (also llama.cpp's and numpy's rule). sorted must be
// ascending and non-empty.
func percentile(sorted []float64, fraction float64) float64 {
	n := len(sorted)
	switch {
	case fraction <= 0:
		return sorted[0]
	case fraction >= 1:
		return sorted[n-1]
	case fraction == 0.5:
		if n%2 == 0 {
			return 0.5 * (sorted[n/2-1] + sorted[n/2])
		}
		return sorted[n/2]
	}
	p := fraction * float64(n-1)
	i := int(p)
	p -= float64(i)
	j := min(i+1, n-1)
	return (1-p)*sorted[i] + p*sorted[j]
}

// meanErr is the mean of values whose sum and sum of squares are given, and
// the standard error of that mean (llama.cpp's mean_and_uncertainty).
func meanErr(sum, sum2 float64, n int) (float64, float64) {
	if n == 0 {
		return 0, 0
	}
	f := sum / float64(n)
	v := sum2/float64(n) - f*f
	if v <= 0 || n <= 10 {
		return f, 0
	}
	return f, math.Sqrt(v / float64(n-1))
}

// Summarize reduces positions, in the order given, to a Result. The order
// fixes the floating-point sums, so the same positions give the same bytes.
func Summarize(pos []Position, windows int) Result {
	r := Result{Tokens: len(pos), Windows: windows}
	n := len(pos)
	if n == 0 {
		return r
	}
	var sNLL, sNLL2, sRef, sRef2, sKLD, sKLD2, sDP, sDP2, sDP4 float64
	same := 0
	kld := make([]float64, n)
	dp := make([]float64, n)
	for i, p := range pos {
		sNLL += p.NLL
		sNLL2 += p.NLL * p.NLL
		sRef += p.NLLRef
		sRef2 += p.NLLRef * p.NLLRef
		sKLD += p.KLD
		sKLD2 += p.KLD * p.KLD
		sDP += p.DeltaP
		d2 := p.DeltaP * p.DeltaP
		sDP2 += d2
		sDP4 += d2 * d2
		if p.SameTop {
			same++
		}
		kld[i] = p.KLD
		dp[i] = p.DeltaP
	}
	var nllErr, refErr float64
	r.NLL, nllErr = meanErr(sNLL, sNLL2, n)
	r.NLLRef, refErr = meanErr(sRef, sRef2, n)
	r.PPL = math.Exp(r.NLL)
	r.PPLErr = r.PPL * nllErr
	r.PPLRef = math.Exp(r.NLLRef)
	r.PPLRefErr = r.PPLRef * refErr
	r.LogPPLRatio = r.NLL - r.NLLRef
	r.PPLRatio = math.Exp(r.LogPPLRatio)
	r.KLDMean, r.KLDMeanErr = meanErr(sKLD, sKLD2, n)
	r.DeltaPMean, r.DeltaPMeanErr = meanErr(sDP, sDP2, n)
	mse, _ := meanErr(sDP2, sDP4, n)
	r.DeltaPRMS = math.Sqrt(mse)
	r.Top1Agreement = float64(same) / float64(n)
	if n > 1 {
		p := r.Top1Agreement
		r.Top1AgreementErr = math.Sqrt(p * (1 - p) / float64(n-1))
	}
	sort.Float64s(kld)
	sort.Float64s(dp)
	r.KLDMedian = percentile(kld, 0.5)
	for _, l := range kldLevels {
		r.KLDPercentiles = append(r.KLDPercentiles, Percentile{l.label, l.frac, percentile(kld, l.frac)})
	}
	for _, l := range deltaPLevels {
		r.DeltaPPercentiles = append(r.DeltaPPercentiles, Percentile{l.label, l.frac, percentile(dp, l.frac)})
	}
	return r
}

package kernels

import "github.com/stratactl/stratactl/quant"

// Q2ErrorSums are a squared error and the energy it is relative to (both
// sums over the weights, optionally importance-weighted).
type Q2ErrorSums struct {
	Err    float64 `json:"err"`
	Energy float64 `json:"energy"`
}

// Add accumulates o.
func (s *Q2ErrorSums) Add(o Q2ErrorSums) { s.Err += o.Err; s.Energy += o.Energy }

// Rel is Err/Energy, the relative MSE.
func (s Q2ErrorSums) Rel() float64 {
	if s.Energy == 0 {
		return 0
	}
	return s.Err / s.Energy
}

// Q2RuleErrors compares Q2_0's scale rules on the same weights.
type Q2RuleErrors struct {
	Weights int64       `json:"weights"`
	GGML    Q2ErrorSums `json:"ggml"`
	Field   Q2ErrorSums `json:"field"`
	Search  Q2ErrorSums `json:"search"`
	// With importance: the importance-weighted error of the unweighted
	// search and of the search weighted by that importance.
	WeightedSearch        Q2ErrorSums `json:"weighted_search"`
	WeightedSearchImatrix Q2ErrorSums `json:"weighted_search_imatrix"`
}

// Add accumulates o.
func (e *Q2RuleErrors) Add(o Q2RuleErrors) {
	e.Weights += o.Weights
	e.GGML.Add(o.GGML)
	e.Field.Add(o.Field)
	e.Search.Add(o.Search)
	e.WeightedSearch.Add(o.WeightedSearch)
	e.WeightedSearchImatrix.Add(o.WeightedSearchImatrix)
}

// EvalQ2Rules quantizes x (rows of rowLen) with each rule and measures the
// errors; imp (one value per column, or nil) adds the importance-weighted
// comparison. candidates is Q2Search's per-sign count (0: the default).
func EvalQ2Rules(x []float32, rowLen int, imp []float32, candidates int) (Q2RuleErrors, error) {
	r := Q2RuleErrors{Weights: int64(len(x))}
	n, err := quant.RowBytes(quant.Q2_0, int64(len(x)))
	if err != nil {
		return r, err
	}
	q := make([]byte, n)
	measure := func(opt *quant.QuantizeOptions, w []float32, into *Q2ErrorSums) error {
		if err := QuantizeQ2_0(x, q, opt); err != nil {
			return err
		}
		e, s, err := quant.Q2Error(x, q, w, rowLen)
		*into = Q2ErrorSums{e, s}
		return err
	}
	if err := measure(&quant.QuantizeOptions{Q2Mode: quant.Q2GGML}, nil, &r.GGML); err != nil {
		return r, err
	}
	if err := measure(&quant.QuantizeOptions{Q2Mode: quant.Q2Field}, nil, &r.Field); err != nil {
		return r, err
	}
	search := &quant.QuantizeOptions{Q2Candidates: candidates}
	if err := measure(search, nil, &r.Search); err != nil {
		return r, err
	}
	if imp != nil {
		e, s, err := quant.Q2Error(x, q, imp, rowLen)
		if err != nil {
			return r, err
		}
		r.WeightedSearch = Q2ErrorSums{e, s}
		withImp := &quant.QuantizeOptions{Q2Candidates: candidates, Importance: imp, RowLen: rowLen}
		if err := measure(withImp, imp, &r.WeightedSearchImatrix); err != nil {
			return r, err
		}
	}
	return r, nil
}

package bench

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/imatrix"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

type Q2RulesRow struct {
	Data  string   `json:"data"`
	Files []string `json:"files,omitempty"`
	kernels.Q2RuleErrors
	RelGGML   float64 `json:"rel_mse_ggml"`
	RelField  float64 `json:"rel_mse_field"`
	RelSearch float64 `json:"rel_mse_search"`
	// importance-weighted relative error, with --imatrix (expert rows only)
	WRelSearch        *float64 `json:"weighted_rel_search,omitempty"`
	WRelSearchImatrix *float64 `json:"weighted_rel_search_imatrix,omitempty"`
}

type Q2SpeedRow struct {
	Rule           string  `json:"rule"`
	Path           string  `json:"path"`
	Weights        int     `json:"weights"`
	CPUSeconds     float64 `json:"cpu_seconds"`
	WallSeconds    float64 `json:"wall_seconds"`
	MWeightsPerCPU float64 `json:"mweights_per_cpu_second"`
}

type Q2RulesReport struct {
	Candidates int          `json:"candidates_per_sign"`
	Kernels    string       `json:"kernels"`
	Imatrix    string       `json:"imatrix,omitempty"`
	Rows       []Q2RulesRow `json:"rows"`
	Speed      []Q2SpeedRow `json:"speed,omitempty"`
	SpeedClock string       `json:"speed_clock,omitempty"`
}

// Q2RulesConfig is what bench q2rules compares on.
type Q2RulesConfig struct {
	Fixtures       string // folder of ggml fixture GGUFs
	Model          string // BF16/F32/F16 GGUF whose *_exps tensors are compared
	Imatrix        string // optional importance matrix
	GaussianBlocks int
	Candidates     int // Q2Search candidate scales per sign (0: the default)
	NoSpeed        bool
	Progress       ProgressFunc
}

// Q2Rules compares Q2_0's scale rules (ggml, field, search) by relative MSE
// on the fixtures' x tensors, gaussian blocks and the model's experts, and
// times the quantizer. Every input is opened and checked before any
// measurement, so a bad model or imatrix costs nothing first.
func Q2Rules(ctx context.Context, cfg Q2RulesConfig) (*Q2RulesReport, error) {
	candidates := cfg.Candidates
	rep := &Q2RulesReport{Candidates: candidates, Kernels: kernels.Describe(), Imatrix: cfg.Imatrix}
	if rep.Candidates == 0 {
		rep.Candidates = quant.DefaultQ2Candidates
	}
	var m *imatrix.Matrix
	if cfg.Imatrix != "" {
		var err error
		if m, err = imatrix.Open(cfg.Imatrix); err != nil {
			return nil, err
		}
	}
	f, experts, err := openQ2Experts(cfg.Model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if m != nil {
		for _, ti := range experts {
			// The last expert's vector exists only if the entry fits the weight.
			if _, err := m.Importance(ti.Name, int(ti.Dims[2])-1, int(ti.Dims[0])); err != nil {
				return nil, err
			}
		}
	}
	rows, err := q2FixtureRows(cfg.Fixtures, candidates)
	if err != nil {
		return nil, err
	}
	rep.Rows = append(rep.Rows, rows...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, err := kernels.EvalQ2Rules(gaussianWeights(cfg.GaussianBlocks*64, 1), 64, nil, candidates)
	if err != nil {
		return nil, err
	}
	rep.Rows = append(rep.Rows, q2Row(fmt.Sprintf("gaussian (%d blocks, seed 1)", cfg.GaussianBlocks), nil, g))
	rows, err = q2ExpertRows(ctx, cfg.Progress, f, experts, m, candidates)
	if err != nil {
		return nil, err
	}
	rep.Rows = append(rep.Rows, rows...)
	if !cfg.NoSpeed {
		if rep.Speed, rep.SpeedClock, err = Q2Speed(candidates, Q2SpeedWeights); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func q2Row(name string, files []string, e kernels.Q2RuleErrors) Q2RulesRow {
	r := Q2RulesRow{Data: name, Files: files, Q2RuleErrors: e,
		RelGGML: e.GGML.Rel(), RelField: e.Field.Rel(), RelSearch: e.Search.Rel()}
	if e.WeightedSearch.Energy > 0 {
		a, b := e.WeightedSearch.Rel(), e.WeightedSearchImatrix.Rel()
		r.WRelSearch, r.WRelSearchImatrix = &a, &b
	}
	return r
}

// q2FixtureRows compares the rules on the x tensor of every fixture file,
// one row per distinct x (the per-type files share theirs).
func q2FixtureRows(dir string, candidates int) ([]Q2RulesRow, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no fixture .gguf files", dir)
	}
	type group struct {
		x     []float32
		files []string
	}
	var order []string
	groups := map[string]*group{}
	for _, p := range paths {
		f, err := gguf.Open(p)
		if err != nil {
			return nil, err
		}
		ti, ok := f.Tensor("x")
		if !ok || ti.Type != quant.F32 || ti.Elements()%64 != 0 {
			f.Close()
			return nil, fmt.Errorf("%s: no F32 tensor x of whole 64-blocks", p)
		}
		b, err := f.ReadTensor(ti)
		f.Close()
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		key := string(sum[:])
		g := groups[key]
		if g == nil {
			x := make([]float32, len(b)/4)
			for i := range x {
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			g = &group{x: x}
			groups[key] = g
			order = append(order, key)
		}
		g.files = append(g.files, filepath.Base(p))
	}
	var rows []Q2RulesRow
	for _, k := range order {
		g := groups[k]
		e, err := kernels.EvalQ2Rules(g.x, 64, nil, candidates)
		if err != nil {
			return nil, err
		}
		name := "fixture x: " + g.files[0]
		if len(g.files) > 1 {
			name = fmt.Sprintf("fixture x: %d files (same x)", len(g.files))
		}
		rows = append(rows, q2Row(name, g.files, e))
	}
	return rows, nil
}

// q2ExpertRows compares the rules on every *_exps tensor of a model,
// one expert at a time, totalled per tensor kind (gate, up, down).
// openQ2Experts opens the model whose experts q2rules compares and checks
// that it has unquantized expert tensors of whole Q2_0 blocks.
func openQ2Experts(path string) (*gguf.File, []*gguf.TensorInfo, error) {
	f, err := gguf.OpenModel(path, false)
	if err != nil {
		return nil, nil, err
	}
	var experts []*gguf.TensorInfo
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if !strings.Contains(ti.Name, "_exps.") {
			continue
		}
		if len(ti.Dims) != 3 || ti.Dims[0]%64 != 0 {
			f.Close()
			return nil, nil, fmt.Errorf("%s: tensor %q: shape %v is not [ne0 (multiple of 64), ne1, experts]", path, ti.Name, ti.Dims)
		}
		if ti.Type != quant.BF16 && ti.Type != quant.F16 && ti.Type != quant.F32 {
			f.Close()
			return nil, nil, fmt.Errorf("%s: tensor %q: type %s, want an unquantized (F32/F16/BF16) model", path, ti.Name, ti.Type)
		}
		experts = append(experts, ti)
	}
	if len(experts) == 0 {
		f.Close()
		return nil, nil, fmt.Errorf("%s: no expert (*_exps) tensors", path)
	}
	return f, experts, nil
}

func q2ExpertRows(ctx context.Context, progress ProgressFunc, f *gguf.File, experts []*gguf.TensorInfo, m *imatrix.Matrix, candidates int) ([]Q2RulesRow, error) {
	path := f.Path
	kinds := map[string]*kernels.Q2RuleErrors{}
	var names []string
	var total int64
	for _, ti := range experts {
		total += ti.Elements()
	}
	prog := progress(total, "q2rules experts")
	defer prog.Done()
	for _, ti := range experts {
		ne0, per := int(ti.Dims[0]), ti.Dims[0]*ti.Dims[1]
		rowBytes, _ := quant.RowBytes(ti.Type, per)
		raw := make([]byte, rowBytes)
		x := make([]float32, per)
		kind := ti.Name[strings.LastIndex(ti.Name[:strings.Index(ti.Name, "_exps.")], ".")+1:]
		kind = strings.TrimSuffix(kind, ".weight")
		if kinds[kind] == nil {
			kinds[kind] = &kernels.Q2RuleErrors{}
			names = append(names, kind)
		}
		for e := int64(0); e < ti.Dims[2]; e++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := f.ReadTensorAt(ti, raw, e*rowBytes); err != nil {
				return nil, err
			}
			if ti.Type == quant.F32 {
				for j := range x {
					x[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
				}
			} else if err := quant.Dequantize(ti.Type, raw, x); err != nil {
				return nil, fmt.Errorf("%s: tensor %q expert %d: %w", path, ti.Name, e, err)
			}
			for j, v := range x {
				if v != v || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("%s: tensor %q expert %d: element %d is %g", path, ti.Name, e, j, v)
				}
			}
			var imp []float32
			if m != nil {
				var err error
				if imp, err = m.Importance(ti.Name, int(e), ne0); err != nil {
					return nil, err
				}
			}
			r, err := kernels.EvalQ2Rules(x, ne0, imp, candidates)
			if err != nil {
				return nil, err
			}
			kinds[kind].Add(r)
			prog.Add(per)
		}
	}
	sort.Strings(names)
	var rows []Q2RulesRow
	for _, k := range names {
		rows = append(rows, q2Row(fmt.Sprintf("experts %s: %s", k, filepath.Base(path)), nil, *kinds[k]))
	}
	return rows, nil
}

func gaussianWeights(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// The speed measurement: Q2SpeedWeights gaussian weights of deviation
// Q2SpeedSigma, the best of Q2SpeedRuns runs of each rule.
const (
	Q2SpeedWeights = 1 << 22
	Q2SpeedSigma   = 0.02
	Q2SpeedRuns    = 5
)

// Q2Speed times each rule on one goroutine locked to its thread, by the
// thread's CPU time where the system has that clock (a busy shared machine
// then does not distort it), else by the wall clock; clock says which.
func Q2Speed(candidates, weights int) (rows []Q2SpeedRow, clock string, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := gaussianWeights(weights, 2)
	for i := range x {
		x[i] *= Q2SpeedSigma
	}
	q := make([]byte, len(x)/64*18)
	type rule struct {
		name, path string
		run        func() error
	}
	rules := []rule{
		{"ggml", "quant (portable)", func() error {
			return quant.Quantize(quant.Q2_0, x, q, &quant.QuantizeOptions{Q2Mode: quant.Q2GGML})
		}},
		{"field", "quant (portable)", func() error {
			return quant.Quantize(quant.Q2_0, x, q, &quant.QuantizeOptions{Q2Mode: quant.Q2Field})
		}},
		{"search", "quant (portable reference)", func() error {
			return quant.Quantize(quant.Q2_0, x, q, &quant.QuantizeOptions{Q2Candidates: candidates})
		}},
		{"search", "kernels: " + kernels.Describe(), func() error {
			return kernels.QuantizeQ2_0(x, q, &quant.QuantizeOptions{Q2Candidates: candidates})
		}},
	}
	clock = "thread CPU time"
	for _, r := range rules {
		best := Q2SpeedRow{Rule: r.name, Path: r.path, Weights: len(x), CPUSeconds: math.Inf(1)}
		for range Q2SpeedRuns {
			c0, cok := ThreadCPU()
			w0 := time.Now()
			if err := r.run(); err != nil {
				return nil, "", fmt.Errorf("q2 speed, rule %s (%s): %w", r.name, r.path, err)
			}
			w := time.Since(w0).Seconds()
			c := w
			if c1, ok := ThreadCPU(); ok && cok {
				c = (c1 - c0).Seconds()
			} else {
				clock = "wall clock (no thread CPU clock here)"
			}
			if c > 0 && c < best.CPUSeconds {
				best.CPUSeconds, best.WallSeconds = c, w
			}
		}
		if math.IsInf(best.CPUSeconds, 1) {
			return nil, "", fmt.Errorf("q2 speed, rule %s (%s): no run took measurable time", r.name, r.path)
		}
		best.MWeightsPerCPU = float64(len(x)) / best.CPUSeconds / 1e6
		rows = append(rows, best)
	}
	return rows, clock, nil
}

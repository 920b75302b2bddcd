package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/calib"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/optq"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// imatrixUsage is --imatrix's help in quantize and pack.
const imatrixUsage = "importance matrix (llama.cpp GGUF imatrix) weighting the Q2_0 search: of the model, or of the original model a GGUF made by stratactl prune was pruned from (its experts weighed by their original rows); not recommended: it raises KLD slightly on tiny-qwen3moe (docs/QUALITY.md), calibrate with --ids instead"

// calibFlags are the calibrated quantizer's flags, shared by quantize and
// pack.
type calibFlags struct {
	tokens      tokenFlags
	ctx         int
	self        int
	seed        uint64
	damp        float64
	selfDamp    float64
	refine      int
	refineDamp  float64
	refSelf     float64
	swiglu      int
	swigluDamp  float64
	swSelf      float64
	swPassSelf  int
	expert      int
	expertSelf  int
	holdEvery   int
	candidates  int
	refPasses   int // --refine-self
	candSelf    int // --calib-candidates-self
	exPasses    int
	exGate      bool
	warmDown    bool
	exTokens    float64 // --refine-expert-tokens
	gridTokens  float64 // --calib-grid-tokens
	plainTokens float64 // --calib-plain-tokens
}

func (c *calibFlags) add(f *pflag.FlagSet) {
	c.tokens.add(f, "calibration (Q2_0: quantize the experts against the inputs they see on it):")
	ctxFlag(f, &c.ctx)
	cli.IntVar(f, &c.self, "calib-self", 0, 0, 1<<20, "add this many windows of --ctx tokens the model samples itself (temperature 1)")
	f.Uint64Var(&c.seed, "seed", 1, "seed of --calib-self's sampling (window i uses seed+i)")
	cli.Float64Var(f, &c.damp, "damp", optq.DefaultDamp, 0, 1e6, "Hessian damping, as a fraction of its mean diagonal")
	cli.Float64Var(f, &c.selfDamp, "damp-self", optq.DefaultSelfDamp, 0, 1e6, "damping when --calib-self windows are used and --damp is not given")
	cli.IntVar(f, &c.refine, "refine", optq.Defaults().Refine, 0, 1000, "refinement passes over codes and scales against the full Hessian")
	cli.Float64Var(f, &c.refineDamp, "refine-damp", optq.Defaults().RefineDamp, 0, 1e6, "Hessian damping of the refinement, as a fraction of its mean diagonal")
	cli.Float64Var(f, &c.refSelf, "refine-damp-self", optq.DefaultSelfRefineDamp, 0, 1e6, "refinement damping when --calib-self windows are used and --refine-damp is not given")
	cli.IntVar(f, &c.swiglu, "refine-swiglu", optq.Defaults().SwiGLU, 0, 1000, "refinement passes of gate and up against the error of their SwiGLU product")
	cli.Float64Var(f, &c.swigluDamp, "refine-swiglu-damp", optq.Defaults().SwiGLUDamp, 0, 1e6, "ridge of the SwiGLU refinement towards the source weights, as a fraction of each row's mean diagonal")
	cli.IntVar(f, &c.swPassSelf, "refine-swiglu-self", optq.DefaultSelfSwiGLU, 0, 1000, "SwiGLU refinement passes when --calib-self windows are used and --refine-swiglu is not given")
	cli.Float64Var(f, &c.swSelf, "refine-swiglu-damp-self", optq.DefaultSelfSwiGLUDamp, 0, 1e6, "SwiGLU refinement damping when --calib-self windows are used and --refine-swiglu-damp is not given")
	cli.IntVar(f, &c.expert, "refine-expert", optq.DefaultExpert, 0, 1000, "rounds refining gate and up against the error of the expert's whole output (with its quantized down), each followed by down quantized again")
	cli.IntVar(f, &c.exPasses, "refine-expert-passes", optq.Defaults().ExpertPasses, 0, 1000, "coordinate passes over each gate and up row in a round of the expert-output refinement")
	f.BoolVar(&c.exGate, "refine-expert-gate", optq.Defaults().ExpertGate, "refine gate's rows too (after up's) in the expert-output refinement")
	cli.Float64Var(f, &c.exTokens, "refine-expert-tokens", optq.DefaultExpertTokens, 0, 1e6, "quantizer tokens per n_embd column an expert needs for the expert-output refinement (fewer: it is skipped; 0: every expert)")
	f.BoolVar(&c.warmDown, "refine-expert-warm-down", optq.Defaults().WarmDown, "after the expert-output refinement, quantize down again from its codes so far by the refinement alone (false: a new OPTQ pass with its scale search)")
	cli.IntVar(f, &c.expertSelf, "refine-expert-self", optq.DefaultSelfExpert, 0, 1000, "expert-output refinement rounds when --calib-self windows are used and --refine-expert is not given")
	cli.IntVar(f, &c.holdEvery, "calib-hold", calib.DefaultHoldEvery, 0, 1<<20, "hold back every Nth calibration window to measure the output error (0: none)")
	cli.IntVar(f, &c.candidates, "calib-candidates", optq.Defaults().Candidates, 0, 1000, "grid scales per sign scored by the Hessian-weighted error")
	cli.Float64Var(f, &c.plainTokens, "calib-plain-tokens", optq.DefaultPlainTokens, 0, 1e6, "quantizer tokens per n_embd column an expert needs for the calibrated quantizer (fewer: the plain search, reported as a fallback; 0: every expert with tokens)")
	cli.Float64Var(f, &c.gridTokens, "calib-grid-tokens", optq.DefaultGridTokens, 0, 1e6, "quantizer tokens per column a matrix needs for the --calib-candidates grid scales (fewer: the plain search's pick alone; 0: always)")
	cli.IntVar(f, &c.refPasses, "refine-self", optq.DefaultSelfRefine, 0, 1000, "refinement passes when --calib-self windows are used and --refine is not given")
	cli.IntVar(f, &c.candSelf, "calib-candidates-self", optq.DefaultSelfCandidates, 0, 1000, "grid scales per sign when --calib-self windows are used and --calib-candidates is not given")
}

func (c *calibFlags) active() bool { return c.tokens.text != "" || c.tokens.ids != "" || c.self > 0 }

// calibrated is a prepared calibrated quantizer and what to record of it.
type calibrated struct {
	m    *engine.Model
	set  *calib.Set
	q    *calib.Quantizer
	info *convert.CalibInfo
}

func (c *calibrated) Close() {
	if c.q != nil {
		c.q.Close()
	}
	if c.set != nil {
		c.set.Close()
	}
	if c.m != nil {
		c.m.Close()
	}
}

// prepare runs the source model over the calibration windows and returns
// the quantizer for its experts; nil when no calibration was asked for.
func (c *calibFlags) prepare(ctx context.Context, env *cli.Env, fs *pflag.FlagSet, model string, t quant.Type, imatrix string, jobs int) (*calibrated, error) {
	if !c.active() {
		return nil, nil
	}
	if t != quant.Q2_0 {
		return nil, fmt.Errorf("--text, --ids and --calib-self need --type q2_0 (the calibrated quantizer is for Q2_0), not %s", t)
	}
	if imatrix != "" {
		return nil, fmt.Errorf("--imatrix does not apply to experts quantized against calibration inputs: give one of --imatrix and the calibration")
	}
	if c.tokens.text != "" && c.tokens.ids != "" {
		return nil, fmt.Errorf("give one of --text and --ids")
	}
	opt := optq.Defaults()
	opt.Damp, opt.Refine, opt.Candidates, opt.RefineDamp = c.damp, c.refine, c.candidates, c.refineDamp
	opt.SwiGLU, opt.SwiGLUDamp = c.swiglu, c.swigluDamp
	opt.Expert = c.expert
	opt.ExpertPasses, opt.ExpertGate, opt.WarmDown = c.exPasses, c.exGate, c.warmDown
	opt.ExpertTokens, opt.GridTokens, opt.PlainTokens = c.exTokens, c.gridTokens, c.plainTokens
	if c.self > 0 && !fs.Changed("damp") {
		opt.Damp = c.selfDamp
	}
	if c.self > 0 && !fs.Changed("refine") {
		opt.Refine = c.refPasses
	}
	if c.self > 0 && !fs.Changed("calib-candidates") {
		opt.Candidates = c.candSelf
	}
	if c.self > 0 && !fs.Changed("refine-damp") {
		opt.RefineDamp = c.refSelf
	}
	if c.self > 0 && !fs.Changed("refine-swiglu") {
		opt.SwiGLU = c.swPassSelf
	}
	if c.self > 0 && !fs.Changed("refine-swiglu-damp") {
		opt.SwiGLUDamp = c.swSelf
	}
	if c.self > 0 && !fs.Changed("refine-expert") {
		opt.Expert = c.expertSelf
	}
	if err := opt.Check(); err != nil {
		return nil, err
	}
	start := time.Now()
	m, err := engine.Open(model, engine.Options{Threads: jobs, Mode: engine.Exact})
	if err != nil {
		return nil, err
	}
	out := &calibrated{m: m}
	ok := false
	defer func() {
		if !ok {
			out.Close()
		}
	}()
	info := &convert.CalibInfo{Source: "self", Ctx: c.ctx}
	var windows [][]int32
	if c.tokens.text != "" || c.tokens.ids != "" {
		var src string
		if windows, src, err = loadWindows(m, c.tokens, c.ctx, 0); err != nil {
			return nil, err
		}
		info.Source = src
		if _, info.SHA256, err = strata.HashFile(ctx, src); err != nil {
			return nil, err
		}
	}
	if c.self > 0 {
		prog := env.NewProgress(int64(c.self*c.ctx), "calib-self", cli.Tokens)
		gen, err := calib.Generate(ctx, m, c.self, c.ctx, c.seed, func(n int) { prog.Add(int64(n)) })
		prog.Done()
		if err != nil {
			return nil, err
		}
		windows = append(windows, gen...)
		info.SelfWindows, info.SelfSeed, info.SelfSHA256 = c.self, c.seed, calib.IDsSHA256(gen)
	}
	prog := env.NewProgress(int64(len(windows)*c.ctx), "calibrate", cli.Tokens)
	hold := c.holdEvery
	if hold == 0 {
		hold = 1 // calib.Options: 1 holds nothing back
	}
	set, q, err := calib.Prepare(ctx, m, windows, calib.Options{HoldEvery: hold, Progress: func(n int) { prog.Add(int64(n)) }}, opt)
	prog.Done()
	if err != nil {
		return nil, err
	}
	out.set, out.q = set, q
	info.Windows, info.Tokens, info.HeldTokens = set.Windows, set.Tokens, set.HeldTokens
	calib.RecordOptions(info, opt)
	info.Seconds = time.Since(start).Seconds()
	out.info = info
	ok = true
	return out, nil
}

// finish records the quantizer's fallbacks in the calibration info.
func (c *calibrated) finish() {
	if c == nil {
		return
	}
	calib.RecordResults(c.info, c.q)
}

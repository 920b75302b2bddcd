package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/kernels"
)

// PrefillConfig is what bench prefill measures: a synthetic pack of Spec
// (written as bench decode writes it, every expert resident), a prompt of
// Prompt random tokens run through it in one batch Repeats times in Mode,
// and in the same run the in-cache rate of the matrix kernel that mode
// runs on each weight type of the pack.
type PrefillConfig struct {
	Spec      engine.SynthSpec
	Dir       string
	KeepFiles bool
	Mode      engine.Mode
	Prompt    int
	Repeats   int
	Threads   int // 0: GOMAXPROCS
	Seconds   float64
	Log       func(format string, args ...any)
}

// PrefillRate is a matrix kernel's in-cache rate on one weight type: a
// matrix of InCacheRows x Cols against InCacheTokens activation rows, all
// of it in L2, in floating-point operations (2 per multiply-add) per second
// of one thread's CPU time and per second of wall time on every thread,
// each from its best call.
type PrefillRate struct {
	Type         string  `json:"type"`
	Cols         int     `json:"cols"`
	MACsPerToken int64   `json:"macs_per_token"`
	GFlopsCPU    float64 `json:"gflops_per_cpu_s"`
	GFlopsWall   float64 `json:"gflops_wall"`
}

// PrefillReport is bench prefill's --json document.
type PrefillReport struct {
	Kernels      string           `json:"kernels"`
	Mode         string           `json:"mode"`
	Threads      int              `json:"threads"`
	CPUs         int              `json:"cpus"`
	Load         string           `json:"load_average"`
	Spec         engine.SynthSpec `json:"spec"`
	Dir          string           `json:"dir"`
	WriteSeconds float64          `json:"write_seconds"`
	Prompt       int              `json:"prompt_tokens"`
	// FlopsPerToken is 2 x the multiply-adds of the weight products one
	// prompt token needs: every layer's dense matrices and ExpertsUsed
	// routed experts (attention scores, norms and the one output row of
	// the prompt's last token are left out).
	FlopsPerToken float64       `json:"flops_per_token"`
	Rates         []PrefillRate `json:"kernel_rates"`
	// The compute bounds: a token's products at the in-cache rates, per
	// second of wall time on every thread and per CPU-second.
	BoundWall float64 `json:"bound_tokens_per_s"`
	BoundCPU  float64 `json:"bound_tokens_per_cpu_s"`
	// The prefill: the best of Repeats runs, in wall time and in process
	// CPU-seconds (as the kernel rates are their best calls). On a machine
	// shared with other work the CPU figures are the steadier: wall time
	// counts time descheduled.
	Seconds       []float64 `json:"run_seconds"`
	TokensPerS    float64   `json:"prefill_tokens_per_s"`
	TokensPerCPUS float64   `json:"prefill_tokens_per_cpu_s"`
	FractionWall  float64   `json:"fraction_of_bound"`
	FractionCPU   float64   `json:"fraction_of_cpu_bound"`
}

// In-cache shape of the kernel-rate measurement: InCacheRows weight rows
// per thread against InCacheTokens activation rows (at n_embd 2560, 64 Q2_0
// rows are 46 KB and 64 quantized activation rows 174 KB).
const (
	InCacheRows   = 64
	InCacheTokens = 64
)

// Prefill writes the synthetic pack, measures the kernel's in-cache rate on
// each weight type the products use, and times the prompt's prefill.
func Prefill(ctx context.Context, cfg PrefillConfig) (*PrefillReport, error) {
	if cfg.Prompt < 1 || cfg.Repeats < 1 {
		return nil, fmt.Errorf("bench prefill: %d prompt tokens, %d repeats", cfg.Prompt, cfg.Repeats)
	}
	pack, err := writeSynthPack(cfg.Spec, cfg.Dir, cfg.KeepFiles, "prefill", cfg.Log)
	if err != nil {
		return nil, err
	}
	defer pack.remove()
	sp := pack.spec
	m, err := engine.Open(pack.dir, engine.Options{Threads: cfg.Threads, Mode: cfg.Mode})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if cfg.Prompt > m.Config.Context {
		return nil, fmt.Errorf("--prompt %d exceeds the model's context of %d", cfg.Prompt, m.Config.Context)
	}
	rep := &PrefillReport{Kernels: kernels.Describe(), Mode: m.Mode.String(), Threads: m.Pool.Threads, CPUs: runtime.NumCPU(),
		Spec: sp, Dir: pack.dir, WriteSeconds: pack.seconds, Prompt: cfg.Prompt}

	// The products one token needs, by weight type and width.
	macs := m.DenseMACsPerToken()
	c := &m.Config
	// Per routed expert: gate and up read n_embd inputs, down n_ff.
	expertMACs := int64(sp.Layers) * int64(c.ExpertsUsed) * int64(c.Embd) * int64(c.ExpertFF)
	macs = append(macs, engine.Product{Type: sp.ExpertType, Cols: c.Embd, MACs: 2 * expertMACs},
		engine.Product{Type: sp.ExpertType, Cols: c.ExpertFF, MACs: expertMACs})
	var total float64
	for _, p := range macs {
		total += 2 * float64(p.MACs)
	}
	rep.FlopsPerToken = total

	// The bound: each product shape (weight type and input width) at the
	// kernel's in-cache rate on that shape.
	var secWall, secCPU float64
	for _, p := range mergeProducts(macs) {
		r, err := kernelRate(ctx, m, p, cfg.Seconds)
		if err != nil {
			return nil, err
		}
		rep.Rates = append(rep.Rates, r)
		secWall += 2 * float64(p.MACs) / (r.GFlopsWall * 1e9)
		secCPU += 2 * float64(p.MACs) / (r.GFlopsCPU * 1e9)
	}
	rep.BoundWall, rep.BoundCPU = 1/secWall, 1/secCPU

	rng := rand.New(rand.NewPCG(sp.Seed, 3))
	prompt := make([]int32, cfg.Prompt)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(sp.Vocab))
	}
	s := m.NewSession()
	s.MaxBatch = cfg.Prompt
	var cpus []time.Duration
	rep.Load = LoadAverage()
	for i := 0; i < cfg.Repeats; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.Reset()
		c0, cok := ProcessCPU()
		t0 := time.Now()
		if _, err := s.Forward(prompt, false); err != nil {
			return nil, err
		}
		wall := time.Since(t0)
		if c1, ok := ProcessCPU(); ok && cok && c1 > c0 {
			cpus = append(cpus, c1-c0)
		}
		rep.Seconds = append(rep.Seconds, wall.Seconds())
	}
	rep.TokensPerS = float64(cfg.Prompt) / slices.Min(rep.Seconds)
	rep.FractionWall = rep.TokensPerS / rep.BoundWall
	if len(cpus) == cfg.Repeats {
		// The least CPU time of a run, as the kernel rates' least of a call.
		rep.TokensPerCPUS = float64(cfg.Prompt) / slices.Min(cpus).Seconds()
		rep.FractionCPU = rep.TokensPerCPUS / rep.BoundCPU
	}
	return rep, nil
}

// mergeProducts sums the products of each weight type and input width.
func mergeProducts(ps []engine.Product) []engine.Product {
	var out []engine.Product
	for _, p := range ps {
		i := slices.IndexFunc(out, func(q engine.Product) bool { return q.Type == p.Type && q.Cols == p.Cols })
		if i < 0 {
			out = append(out, p)
			continue
		}
		out[i].MACs += p.MACs
	}
	return out
}

// kernelRate measures the model's matrix kernel (its mode's MatMul on type
// p.Type) on an in-cache matrix of p.Cols columns: one thread's CPU rate on
// a locked thread, and the wall rate of the model's pool on a matrix of
// InCacheRows rows per thread (best call).
func kernelRate(ctx context.Context, m *engine.Model, p engine.Product, seconds float64) (PrefillRate, error) {
	r := PrefillRate{Type: p.Type.String(), Cols: p.Cols, MACsPerToken: p.MACs}
	measure := func(pool *kernels.Pool, rows int, thread bool) (Calls, error) {
		mul, err := engine.InCacheProduct(m.Mode, p.Type, p.Cols, rows, InCacheTokens, uint64(rows))
		if err != nil {
			return Calls{}, err
		}
		var ct Calls
		var least time.Duration // the least thread CPU time of a call
		run := func() (err error) {
			ct, err = TimeCalls(ctx, seconds, func() error {
				c0, ok0 := ThreadCPU()
				mul(pool)
				if c1, ok := ThreadCPU(); ok && ok0 && c1 > c0 && (least == 0 || c1-c0 < least) {
					least = c1 - c0
				}
				return nil
			})
			return err
		}
		if thread {
			err = OnLockedThread(run)
		} else {
			err = run()
		}
		ct.CPU = least
		return ct, err
	}
	one, err := measure(kernels.NewPool(1), InCacheRows, true)
	if err != nil {
		return r, err
	}
	flops := func(rows int) float64 { return 2 * float64(rows) * float64(p.Cols) * InCacheTokens }
	r.GFlopsCPU = flops(InCacheRows) / one.PerCore().Seconds() / 1e9
	all, err := measure(m.Pool, InCacheRows*m.Pool.Threads, false)
	if err != nil {
		return r, err
	}
	r.GFlopsWall = flops(InCacheRows*m.Pool.Threads) / all.Best.Seconds() / 1e9
	return r, nil
}

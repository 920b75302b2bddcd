package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/kernels"
)

// LlamaConfig is what bench llamacpp measures: each model, on Threads
// threads (0: GOMAXPROCS), through our engine and through llama.cpp's llama-bench, in Pairs
// interleaved pairs (the order alternating pair by pair), each pair a
// prefill of Prompt random tokens in one batch and Gen decode steps of
// random tokens from an empty context (llama-bench's pp and tg tests).
type LlamaConfig struct {
	LlamaBench string // path of llama-bench
	Models     []string
	Threads    int
	Prompt     int
	Gen        int
	Pairs      int
	Mode       engine.Mode
	Log        func(format string, args ...any)
}

// LlamaRow is one model at one thread count: every pair's rates (tokens/s)
// and the medians of each side and of the per-pair ratios (ours over
// llama.cpp's: above 1, stratactl is faster).
type LlamaRow struct {
	Model         string    `json:"model"` // the file, with its folder's name
	Threads       int       `json:"threads"`
	OursPrefill   []float64 `json:"ours_prefill_tokens_per_s"`
	LlamaPrefill  []float64 `json:"llama_prefill_tokens_per_s"`
	OursDecode    []float64 `json:"ours_decode_tokens_per_s"`
	LlamaDecode   []float64 `json:"llama_decode_tokens_per_s"`
	MedOursPP     float64   `json:"ours_prefill_median"`
	MedLlamaPP    float64   `json:"llama_prefill_median"`
	MedOursTG     float64   `json:"ours_decode_median"`
	MedLlamaTG    float64   `json:"llama_decode_median"`
	RatioPrefill  float64   `json:"prefill_ratio_median"`
	RatioDecode   float64   `json:"decode_ratio_median"`
	LlamaBuild    string    `json:"llama_build_commit"`
	LlamaModelTyp string    `json:"llama_model_type"`
}

// LlamaReport is bench llamacpp's --json document.
type LlamaReport struct {
	Kernels    string     `json:"kernels"`
	Mode       string     `json:"mode"`
	CPUs       int        `json:"cpus"`
	LoadBefore string     `json:"load_average_before"`
	LoadAfter  string     `json:"load_average_after"`
	LlamaBench string     `json:"llama_bench"`
	Prompt     int        `json:"prompt_tokens"`
	Gen        int        `json:"decode_tokens"`
	Pairs      int        `json:"pairs"`
	Rows       []LlamaRow `json:"rows"`
}

// llamaBenchResult is the part of one llama-bench JSON record read here.
type llamaBenchResult struct {
	BuildCommit string  `json:"build_commit"`
	ModelType   string  `json:"model_type"`
	NPrompt     int     `json:"n_prompt"`
	NGen        int     `json:"n_gen"`
	AvgTS       float64 `json:"avg_ts"`
}

// Llama runs the comparison.
func Llama(ctx context.Context, cfg LlamaConfig) (*LlamaReport, error) {
	if cfg.Prompt < 1 || cfg.Gen < 1 || cfg.Pairs < 1 || len(cfg.Models) == 0 {
		return nil, fmt.Errorf("bench llamacpp: %d prompt tokens, %d decode tokens, %d pairs, %d models",
			cfg.Prompt, cfg.Gen, cfg.Pairs, len(cfg.Models))
	}
	exe, err := exec.LookPath(cfg.LlamaBench)
	if err != nil {
		return nil, fmt.Errorf("--llama-bench: %w", err)
	}
	rep := &LlamaReport{Kernels: kernels.Describe(), Mode: cfg.Mode.String(), CPUs: runtime.NumCPU(),
		LoadBefore: LoadAverage(), LlamaBench: exe, Prompt: cfg.Prompt, Gen: cfg.Gen, Pairs: cfg.Pairs}
	threads := cfg.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	for _, path := range cfg.Models {
		row, err := llamaRow(ctx, cfg, exe, path, threads)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, *row)
	}
	rep.LoadAfter = LoadAverage()
	return rep, nil
}

func llamaRow(ctx context.Context, cfg LlamaConfig, exe, path string, threads int) (*LlamaRow, error) {
	m, err := engine.Open(path, engine.Options{Threads: threads, Mode: cfg.Mode})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if cfg.Prompt > m.Config.Context || cfg.Gen > m.Config.Context {
		return nil, fmt.Errorf("%s: %d prompt or %d decode tokens exceed the context of %d", path, cfg.Prompt, cfg.Gen, m.Config.Context)
	}
	row := &LlamaRow{Model: filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path)), Threads: threads}
	s := m.NewSession()
	s.Reserve(max(cfg.Prompt, cfg.Gen))
	// One untimed run first, as llama-bench warms up each test.
	if _, _, err := oursPair(ctx, s, cfg, 0); err != nil {
		return nil, err
	}
	for p := 0; p < cfg.Pairs; p++ {
		ours := func() error {
			pp, tg, err := oursPair(ctx, s, cfg, uint64(p+1))
			row.OursPrefill, row.OursDecode = append(row.OursPrefill, pp), append(row.OursDecode, tg)
			return err
		}
		theirs := func() error {
			res, err := runLlamaBench(ctx, exe, path, threads, cfg.Prompt, cfg.Gen)
			if err != nil {
				return err
			}
			for _, r := range res {
				switch {
				case r.NPrompt == cfg.Prompt && r.NGen == 0:
					row.LlamaPrefill = append(row.LlamaPrefill, r.AvgTS)
				case r.NGen == cfg.Gen && r.NPrompt == 0:
					row.LlamaDecode = append(row.LlamaDecode, r.AvgTS)
				}
				row.LlamaBuild, row.LlamaModelTyp = r.BuildCommit, r.ModelType
			}
			if len(row.LlamaPrefill) != p+1 || len(row.LlamaDecode) != p+1 {
				return fmt.Errorf("llama-bench on %s: expected one pp%d and one tg%d result, got %+v", path, cfg.Prompt, cfg.Gen, res)
			}
			return nil
		}
		first, second := ours, theirs
		if p%2 == 1 {
			first, second = theirs, ours
		}
		if err := first(); err != nil {
			return nil, err
		}
		if err := second(); err != nil {
			return nil, err
		}
		if cfg.Log != nil {
			cfg.Log("%s -j%d pair %d: prefill %.1f vs %.1f, decode %.1f vs %.1f tokens/s", row.Model, threads, p+1,
				row.OursPrefill[p], row.LlamaPrefill[p], row.OursDecode[p], row.LlamaDecode[p])
		}
	}
	row.MedOursPP, row.MedLlamaPP = median(row.OursPrefill), median(row.LlamaPrefill)
	row.MedOursTG, row.MedLlamaTG = median(row.OursDecode), median(row.LlamaDecode)
	row.RatioPrefill = median(ratios(row.OursPrefill, row.LlamaPrefill))
	row.RatioDecode = median(ratios(row.OursDecode, row.LlamaDecode))
	return row, nil
}

// oursPair is llama-bench's two tests through our engine: a prompt of
// random tokens as one batch (the last position's logits), then from an
// empty context Gen single-token steps, each fed a random token (no
// sampling). As llama-bench keeps one context and clears it before each
// test, s is one session, reset before each, so its working memory is
// made once.
func oursPair(ctx context.Context, s *engine.Session, cfg LlamaConfig, seed uint64) (pp, tg float64, err error) {
	rng := rand.New(rand.NewPCG(seed, 0x11a3a))
	vocab := s.Model().Config.Vocab
	prompt := make([]int32, cfg.Prompt)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(vocab))
	}
	s.Reset()
	t0 := time.Now()
	if _, err := s.Forward(prompt, false); err != nil {
		return 0, 0, err
	}
	pp = float64(cfg.Prompt) / time.Since(t0).Seconds()
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	s.Reset()
	ids := make([]int32, cfg.Gen)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	t1 := time.Now()
	for _, id := range ids {
		if _, err := s.Step(id); err != nil {
			return 0, 0, err
		}
	}
	tg = float64(cfg.Gen) / time.Since(t1).Seconds()
	return pp, tg, ctx.Err()
}

// runLlamaBench runs one repetition of llama-bench's pp and tg tests (each
// after its own warm-up run) and reads its JSON records.
func runLlamaBench(ctx context.Context, exe, model string, threads, prompt, gen int) ([]llamaBenchResult, error) {
	cmd := exec.CommandContext(ctx, exe, "-m", model, "-p", fmt.Sprint(prompt), "-n", fmt.Sprint(gen),
		"-t", fmt.Sprint(threads), "-r", "1", "-o", "json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tail := errb.Bytes()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return nil, fmt.Errorf("llama-bench on %s: %w: %s", model, err, tail)
	}
	var res []llamaBenchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("llama-bench on %s: its JSON output: %w", model, err)
	}
	return res, nil
}

func ratios(a, b []float64) []float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	return r
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

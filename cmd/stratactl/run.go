package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/kernels"
)

func init() { register(newRunCmd) }

// The bounds of run's streaming flags: an arena of 16 TiB and 256 reader
// goroutines are past any machine.
const (
	maxArenaMB = 1 << 24
	maxReaders = 256
)

type runFlags struct {
	prompt  string
	idsFile string
	n       int
	temp    float64
	topP    float64
	seed    uint64
	logits  string
	threads int
	exact   bool

	arenaMB     float64
	readers     int
	noReadAhead bool
	buffered    bool
	cache       cacheFlags
	trace       string
}

func newRunCmd(env *cli.Env) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run MODEL",
		Short: "Generate text from a GGUF model or a pack, streaming it, then report prompt and decode speed",
		Long: `run loads MODEL (a GGUF whose architecture is one of ` + strings.Join(engine.SupportedArchitectures(), ", ") + `;
or a pack folder whose experts are streamed from disk through an arena of
--arena-mb) and generates -n tokens after the prompt.
The prompt is --prompt TEXT (tokenized with the model's tokenizer) or --ids FILE
(little-endian int32 token ids). --temp 0 (the default) is greedy; otherwise
temperature and top-p sampling from --seed. --logits OUT writes the logits of
every prompt position and of every decode step as little-endian float32 rows
of the vocabulary size.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModel(cmd, env, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.prompt, "prompt", "", "prompt text")
	idsFlag(fl, &f.idsFile, "prompt as a file of little-endian int32 token ids")
	cli.IntVarP(fl, &f.n, "tokens", "n", 32, 1, maxCtx, "tokens to generate")
	cli.Float64Var(fl, &f.temp, "temp", 0, 0, 100, "sampling temperature; 0 is greedy")
	cli.Float64VarOpen(fl, &f.topP, "top-p", 1, 0, 1, "nucleus sampling: keep the smallest set of tokens with this much probability")
	fl.Uint64Var(&f.seed, "seed", 1, "sampling seed")
	fl.StringVar(&f.logits, "logits", "", "write every prompt position's and decode step's logits (float32 LE rows) to this file")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS); results do not depend on it")
	exactFlag(fl, &f.exact, "the model")
	cli.Float64Var(fl, &f.arenaMB, "arena-mb", 0, 0, maxArenaMB, "pack: memory for resident experts in MiB (0: every expert, up to half the machine's RAM)")
	cli.IntVar(fl, &f.readers, "readers", engine.DefaultReaders, 1, maxReaders, "pack: goroutines reading expert slots")
	fl.BoolVar(&f.noReadAhead, "no-readahead", false, "pack: do not guess and read the next layer's experts early")
	fl.BoolVar(&f.buffered, "buffered", false, "pack: read through the page cache instead of O_DIRECT")
	f.cache.add(fl)
	fl.StringVar(&f.trace, "trace", "", "pack: write the decode phase's expert demands to this file (STRC, docs/FORMATS.md; stratactl replay reads it)")
	return cmd
}

func runModel(cmd *cobra.Command, env *cli.Env, path string, f *runFlags) error {
	if (f.prompt == "") == (f.idsFile == "") {
		return fmt.Errorf("give exactly one of --prompt and --ids")
	}
	routing := f.cache.routing()
	cacheAware := f.cache.on()
	if err := checkFiles([]string{path, f.idsFile}, []string{f.logits, f.trace}); err != nil {
		return err
	}
	m, err := engine.Open(path, engine.Options{Threads: f.threads, Mode: modeOf(f.exact), Stream: engine.StreamOptions{
		ArenaMB: f.arenaMB, Readers: f.readers, NoReadAhead: f.noReadAhead, Buffered: f.buffered,
	}})
	if err != nil {
		return err
	}
	defer m.Close()
	ps := m.Stream()
	if cacheAware && ps == nil {
		return fmt.Errorf("--cache-bonus needs a pack (MODEL is a GGUF: every expert is resident)")
	}
	if f.trace != "" && ps == nil {
		return fmt.Errorf("--trace needs a pack (MODEL is a GGUF: no expert store)")
	}
	tok, err := m.Tokenizer()
	if err != nil {
		return err
	}
	var prompt []int32
	if f.idsFile != "" {
		if prompt, err = evalq.ReadModelIDs(f.idsFile, m); err != nil {
			return err
		}
	} else {
		prompt = tok.Encode(f.prompt, true, true)
		if len(prompt) == 0 {
			return fmt.Errorf("the prompt tokenizes to no tokens")
		}
	}
	if len(prompt)+f.n-1 > m.Config.Context {
		return fmt.Errorf("prompt of %d tokens + %d generated exceed the context length %d", len(prompt), f.n, m.Config.Context)
	}

	var logitsOut *gguf.AtomicFile
	var logitsBuf *bufio.Writer
	rows := 0
	opt := engine.GenerateOptions{
		MaxTokens: f.n,
		Sampler:   engine.NewSampler(f.temp, f.topP, f.seed),
		Stop:      tok.IsEOG,
	}
	if f.logits != "" {
		if logitsOut, err = gguf.CreateAtomic(f.logits); err != nil {
			return err
		}
		defer logitsOut.Abort()
		logitsBuf = bufio.NewWriterSize(logitsOut, 1<<20)
		row := make([]byte, 4*m.Config.Vocab)
		opt.OnLogits = func(l []float32) error {
			for i, v := range l {
				binary.LittleEndian.PutUint32(row[4*i:], math.Float32bits(v))
			}
			rows++
			_, err := logitsBuf.Write(row)
			return err
		}
	}
	out := bufio.NewWriter(env.Out)
	text := tok.NewTextStream()
	if !env.JSON {
		opt.OnToken = func(id int32) error {
			out.WriteString(text.Push(id))
			return out.Flush()
		}
	}
	s := m.NewSession()
	s.Routing = routing
	var before engine.StreamCounters
	if ps != nil {
		opt.AfterPrefill = func() { before = ps.Counters(); ps.StartTrace() }
	}
	res, err := s.Generate(cmd.Context(), prompt, opt)
	if err != nil {
		return err
	}
	if logitsOut != nil {
		if err := logitsBuf.Flush(); err != nil {
			return fmt.Errorf("%s: %w", f.logits, err)
		}
		if err := logitsOut.Commit(); err != nil {
			return err
		}
	}
	rep := engine.RunReport{
		Model:             path,
		Kernels:           kernels.Describe(),
		Threads:           m.Pool.Threads,
		Mode:              m.Mode.String(),
		PromptIDs:         res.PromptIDs,
		GeneratedIDs:      res.GeneratedIDs,
		Text:              tok.Decode(res.GeneratedIDs),
		StopReason:        res.StopReason,
		PromptTokens:      len(res.PromptIDs),
		DecodeSteps:       res.DecodeSteps,
		PrefillSeconds:    res.PrefillSeconds,
		DecodeSeconds:     res.DecodeSeconds,
		PrefillTokensPerS: res.PrefillTokensPerSecond(),
		DecodeTokensPerS:  res.DecodeTokensPerSecond(),
		Temp:              f.temp,
		TopP:              f.topP,
		Seed:              f.seed,
		Vocab:             m.Config.Vocab,
	}
	if ps != nil {
		// Figures of the decode phase: the tokens that went through the
		// layers one at a time.
		var tr *cachesim.Trace
		if rep.Stream, tr, err = ps.EndTrace(before, res.DecodeSteps); err != nil {
			return err
		}
		if f.trace != "" {
			if err := cachesim.WriteFile(f.trace, tr); err != nil {
				return err
			}
		}
	}
	if cacheAware {
		rep.CacheBonus = &f.cache.bonus
	}
	if f.logits != "" {
		rep.LogitsFile, rep.LogitsRows = f.logits, rows
	}
	if env.JSON {
		return env.PrintJSON(rep)
	}
	out.WriteString(text.Flush())
	out.WriteString("\n")
	if err := out.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Err, "prompt: %d tokens in %.3f s (%.1f tokens/s)\n", rep.PromptTokens, rep.PrefillSeconds, rep.PrefillTokensPerS)
	fmt.Fprintf(env.Err, "decode: %d steps in %.3f s (%.1f tokens/s), stop: %s\n", rep.DecodeSteps, rep.DecodeSeconds, rep.DecodeTokensPerS, rep.StopReason)
	fmt.Fprintf(env.Err, "threads: %d (of %d CPUs), kernels: %s, %s mode\n", rep.Threads, runtime.NumCPU(), rep.Kernels, rep.Mode)
	if st := rep.Stream; st != nil {
		io := "O_DIRECT, native AIO"
		switch {
		case !st.DirectIO:
			io = "buffered: " + st.DirectIONote
		case !st.NativeAIO && st.DirectIONote != "":
			io = "O_DIRECT, reader goroutines: " + st.DirectIONote
		case !st.NativeAIO && st.NativeAIONote != "":
			io = "O_DIRECT, reader goroutines: " + st.NativeAIONote
		case !st.NativeAIO:
			io = "O_DIRECT, reader goroutines"
		}
		fmt.Fprintf(env.Err, "experts (decode, per token): hit rate %.3f (Belady's MIN %.3f), misses %.2f, read %.3f MB, read-ahead hits %.2f (of %.2f reads), waiting %.3f ms\n",
			st.HitRate, *st.BeladyHitRate, st.MissesPerToken, st.ReadMBPerToken, st.ReadAheadHitsPerToken, st.GuessesPerToken, st.WaitMsPerToken)
		fmt.Fprintf(env.Err, "arena: %d of %d slots (%.1f MiB, %d bytes each), filled %d in %.3f s, reads: %s\n",
			st.ArenaSlots, st.TotalSlots, st.ArenaMB, st.SlotBytes, st.FillSlots, st.FillSeconds, io)
		if st.ArenaCapMB > 0 {
			fmt.Fprintf(env.Err, "arena capped at %.0f MiB (half the machine's RAM; --arena-mb sets it): %d of %d experts resident, the rest streamed\n", st.ArenaCapMB, st.ArenaSlots, st.TotalSlots)
		}
	}
	if rep.LogitsFile != "" {
		fmt.Fprintf(env.Err, "logits: %d rows of %d to %s\n", rep.LogitsRows, rep.Vocab, rep.LogitsFile)
	}
	return nil
}

// exactFlag adds --exact, the engine's reference mode for what (run, eval
// and profile spell it the same); without it they run in fast mode.
func exactFlag(fl *pflag.FlagSet, exact *bool, what string) {
	fl.BoolVar(exact, "exact", false, "run "+what+" in exact mode: float32 activations against every weight decoded to float32, the reference mode (default fast: quantized dot products against activations quantized once per row where the weight type has one: Q8_0, bfloat16 for BF16 weights)")
}

// modeOf is the engine mode --exact selects.
func modeOf(exact bool) engine.Mode {
	if exact {
		return engine.Exact
	}
	return engine.Fast
}

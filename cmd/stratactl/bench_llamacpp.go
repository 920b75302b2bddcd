package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { registerBench(newBenchLlamaCmd) }

type benchLlamaFlags struct {
	llamaBench string
	threads    int
	prompt     int
	gen        int
	pairs      int
	exact      bool
}

func newBenchLlamaCmd(env *cli.Env) *cobra.Command {
	var f benchLlamaFlags
	cmd := &cobra.Command{
		Use:   "llamacpp MODEL.gguf...",
		Short: "Prefill and decode speed side by side with llama.cpp's llama-bench on the same GGUFs, interleaved",
		Long: `bench llamacpp runs each model at -j threads through our engine and
through llama.cpp's llama-bench (--llama-bench, a CPU build), in --pairs
interleaved pairs whose order alternates: each pair is llama-bench's pp test
(a prompt of --prompt random tokens in one batch) and tg test (--gen single
tokens from an empty context, random tokens, no sampling), one repetition of
each after its warm-up run, and the same two tests through our engine (one
untimed warm-up pair first). It prints the median tokens/s of each side and the
median of the per-pair ratios, ours over llama.cpp's (above 1: stratactl is
faster). Our engine runs in fast mode unless --exact.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchLlama(cmd.Context(), env, args, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.llamaBench, "llama-bench", "llama-bench", "llama.cpp's llama-bench executable")
	cli.Threads(fl, &f.threads, "threads of both engines (0: GOMAXPROCS)")
	cli.IntVar(fl, &f.prompt, "prompt", 64, 1, maxCtx, "prompt tokens of the prefill test")
	cli.IntVar(fl, &f.gen, "gen", 64, 1, maxCtx, "decode steps of the decode test")
	cli.IntVar(fl, &f.pairs, "pairs", 15, 1, 10000, "interleaved pairs per model")
	exactFlag(fl, &f.exact, "our engine")
	return cmd
}

func benchLlama(ctx context.Context, env *cli.Env, models []string, f *benchLlamaFlags) error {
	rep, err := bench.Llama(ctx, bench.LlamaConfig{LlamaBench: f.llamaBench, Models: models, Threads: f.threads,
		Prompt: f.prompt, Gen: f.gen, Pairs: f.pairs, Mode: modeOf(f.exact), Log: env.Logf})
	if err != nil {
		return err
	}
	if env.JSON {
		return env.PrintJSON(rep)
	}
	w := env.Out
	fmt.Fprintf(w, "machine: %s, %d CPUs, load average %s before, %s after; our engine in %s mode; %s\n",
		rep.Kernels, rep.CPUs, rep.LoadBefore, rep.LoadAfter, rep.Mode, rep.LlamaBench)
	fmt.Fprintf(w, "medians of %d interleaved pairs, tokens/s; ratio: the median of the pairs' ours / llama.cpp (above 1: stratactl is faster)\n\n", rep.Pairs)
	fmt.Fprintf(w, "%-36s %3s  %10s %10s %6s  %10s %10s %6s\n", "model", "-j",
		fmt.Sprintf("pp%d ours", rep.Prompt), "llama.cpp", "ratio", fmt.Sprintf("tg%d ours", rep.Gen), "llama.cpp", "ratio")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "%-36s %3d  %10.1f %10.1f %6.2f  %10.1f %10.1f %6.2f\n", r.Model, r.Threads,
			r.MedOursPP, r.MedLlamaPP, r.RatioPrefill, r.MedOursTG, r.MedLlamaTG, r.RatioDecode)
	}
	if len(rep.Rows) > 0 {
		fmt.Fprintf(w, "\nllama.cpp build %s\n", rep.Rows[0].LlamaBuild)
	}
	return nil
}

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { registerBench(newBenchPrefillCmd) }

type benchPrefillFlags struct {
	shape   synthShapeFlags
	dir     string
	keep    bool
	exact   bool
	prompt  int
	repeats int
	threads int
	seconds float64
}

func newBenchPrefillCmd(env *cli.Env) *cobra.Command {
	var f benchPrefillFlags
	cmd := &cobra.Command{
		Use:   "prefill",
		Short: "Prefill speed of a synthetic pack against the compute bound of the kernel's in-cache rate, measured in the same run",
		Long: `bench prefill writes a synthetic pack (the shapes and types of bench decode's,
every expert resident), measures the in-cache rate of the matrix kernel the mode
runs on each weight type of the pack (a small matrix against 64 activation rows,
on one thread in CPU time and on every thread in wall time), and runs a prompt of
--prompt random tokens through the model in one batch --repeats times. The compute
bound is a token's weight products (2 flops per multiply-add: every layer's dense
matrices and --used routed experts) at those rates; it prints the prefill's
tokens/s and tokens per CPU-second (best run each; the rates are best calls)
beside each bound (on a shared machine the CPU figure is the steadier: wall
time counts time descheduled).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchPrefill(cmd.Context(), env, cmd.Flags().Changed, &f)
		},
	}
	fl := cmd.Flags()
	f.shape.add(fl, 4)
	fl.StringVar(&f.dir, "dir", "", "where to make the synthetic pack's own new folder (default: the temp dir); it is removed after unless --keep-files")
	fl.BoolVar(&f.keep, "keep-files", false, "keep the synthetic pack")
	exactFlag(fl, &f.exact, "the prefill and the kernel rates")
	cli.IntVar(fl, &f.prompt, "prompt", 512, 1, maxCtx, "prompt tokens (random ids), run as one batch")
	cli.IntVar(fl, &f.repeats, "repeats", 3, 1, 1000, "prefill runs (the best is reported)")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS)")
	cli.Float64VarOpen(fl, &f.seconds, "seconds", 1, 0, 600, "time spent on each kernel rate")
	return cmd
}

func benchPrefill(ctx context.Context, env *cli.Env, changed func(string) bool, f *benchPrefillFlags) error {
	sp, err := f.shape.spec(changed)
	if err != nil {
		return err
	}
	rep, err := bench.Prefill(ctx, bench.PrefillConfig{Spec: sp, Dir: f.dir, KeepFiles: f.keep, Mode: modeOf(f.exact),
		Prompt: f.prompt, Repeats: f.repeats, Threads: f.threads, Seconds: f.seconds, Log: env.Logf})
	if err != nil {
		return err
	}
	if env.JSON {
		return env.PrintJSON(rep)
	}
	w := env.Out
	fmt.Fprintln(w, describeSynth(rep.Spec))
	fmt.Fprintf(w, "machine: %s, %d threads of %d CPUs, load average %s; %s mode\n", rep.Kernels, rep.Threads, rep.CPUs, rep.Load, rep.Mode)
	fmt.Fprintf(w, "weight products: %.1f Mflop per token\n", rep.FlopsPerToken/1e6)
	for _, r := range rep.Rates {
		fmt.Fprintf(w, "  %-6s in cache (%d columns): %.2f Gflop/s per CPU-second, %.2f Gflop/s on %d threads; %.1f Mflop per token\n",
			r.Type, r.Cols, r.GFlopsCPU, r.GFlopsWall, rep.Threads, 2*float64(r.MACsPerToken)/1e6)
	}
	fmt.Fprintf(w, "prefill of %d tokens (runs of %v s):\n", rep.Prompt, rep.Seconds)
	fmt.Fprintf(w, "  %.1f tokens/s, compute bound %.1f: %.0f%% of it\n", rep.TokensPerS, rep.BoundWall, 100*rep.FractionWall)
	if rep.TokensPerCPUS > 0 {
		fmt.Fprintf(w, "  %.1f tokens per CPU-second, compute bound %.1f: %.0f%% of it\n", rep.TokensPerCPUS, rep.BoundCPU, 100*rep.FractionCPU)
	}
	return nil
}

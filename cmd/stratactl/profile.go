package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/strata"
)

func init() { register(newProfileCmd) }

type profileFlags struct {
	tokens         tokenFlags
	out            string
	ctx, maxTokens int
	threads        int
	exact          bool
}

func newProfileCmd(env *cli.Env) *cobra.Command {
	var f profileFlags
	cmd := &cobra.Command{
		Use:   "profile MODEL (--text FILE | --ids FILE) -o profile.strp",
		Short: "Measure per-expert usage and REAP saliency on calibration text",
		Long: `profile runs MODEL over calibration windows of --ctx tokens (each on its own
from position 0, no BOS) and records, per MoE layer and expert: the tokens
routed to it (count), the sum of its renormalised gate weights (gate_sum),
the sum of gate weight × L2 norm of its output (ean) and their mean over its
tokens (reap). The result is a keep.strp (STRP) keeping every expert, ranked
by count, with these statistics in its STAT block: the input of
stratactl prune --profile.

The calibration tokens come from --text (a text file, tokenized with the
model's tokenizer) or --ids (a file of little-endian int32 token ids).
--max-tokens stops after that many tokens (whole windows).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProfile(cmd, env, args[0], &f)
		},
	}
	fl := cmd.Flags()
	f.tokens.add(fl, "calibration")
	fl.StringVarP(&f.out, "output", "o", "", "profile to write (keep.strp format)")
	ctxFlag(fl, &f.ctx)
	cli.IntVar(fl, &f.maxTokens, "max-tokens", 0, 0, maxTokenCount, "stop after this many tokens, in whole windows (0: all)")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS); results do not depend on it")
	exactFlag(fl, &f.exact, "the model")
	cmd.MarkFlagRequired("output")
	return cmd
}

func runProfile(cmd *cobra.Command, env *cli.Env, path string, f *profileFlags) error {
	if err := checkFiles([]string{path, f.tokens.text, f.tokens.ids}, []string{f.out}); err != nil {
		return err
	}
	m, err := engine.Open(path, engine.Options{Threads: f.threads, Mode: modeOf(f.exact)})
	if err != nil {
		return err
	}
	defer m.Close()
	moe, err := m.File.MoE()
	if err != nil {
		return err
	}
	var blocks []int
	for _, l := range moe.Layers {
		blocks = append(blocks, l.Block)
	}
	maxWindows := 0
	if f.maxTokens > 0 {
		if maxWindows = f.maxTokens / f.ctx; maxWindows == 0 {
			return fmt.Errorf("--max-tokens %d is less than one window of --ctx %d", f.maxTokens, f.ctx)
		}
	}
	windows, src, err := loadWindows(m, f.tokens, f.ctx, maxWindows)
	if err != nil {
		return err
	}
	prog := env.NewProgress(int64(len(windows)*f.ctx), "profile", cli.Tokens)
	start := time.Now()
	stats, err := profile.Run(cmd.Context(), m, blocks, windows, func(n int) { prog.Add(int64(n)) })
	prog.Done()
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	if err := strata.WriteKeep(f.out, stats.Keep()); err != nil {
		return err
	}
	// The top 8 of each ranking: what fits on a line.
	rep := profile.Report{Model: path, Mode: m.Mode.String(), Output: f.out, Source: src, Ctx: f.ctx, Windows: len(windows), Tokens: stats.Tokens,
		NExpert: stats.NExpert, Seconds: secs, TokensPerS: float64(stats.Tokens) / secs, Layers: stats.Summary(8)}
	if env.JSON {
		return env.PrintJSON(rep)
	}
	fmt.Fprintf(env.Out, "profiled %s (%s mode): %d tokens in %d windows of %d from %s, %.1f s (%.0f tokens/s)\n",
		path, rep.Mode, rep.Tokens, rep.Windows, rep.Ctx, src, secs, rep.TokensPerS)
	fmt.Fprintf(env.Out, "%5s  %9s  %9s  %6s  %-9s  %s\n", "layer", "count min", "count max", "unused", "REAP max", "top experts by REAP")
	for _, pl := range rep.Layers {
		fmt.Fprintf(env.Out, "%5d  %9d  %9d  %6d  %-9.4g  %v\n", pl.Block, pl.CountMin, pl.CountMax, pl.Unused, pl.REAPMax, pl.TopREAP)
	}
	fmt.Fprintf(env.Out, "wrote %s\n", f.out)
	return nil
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/fixture"
)

func init() { registerBench(newBenchQ2Cmd) }

func newBenchQ2Cmd(env *cli.Env) *cobra.Command {
	var (
		fixtures, model, imat string
		blocks, candidates    int
		noSpeed               bool
	)
	cmd := &cobra.Command{
		Use:   "q2rules",
		Short: "Compare Q2_0's scale rules (ggml, field, search) by relative MSE on the fixtures, gaussian blocks and a model's experts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Flags and inputs are checked before any work: a bad --model must
			// not cost the fixture and gaussian passes first.
			if fixtures == "" || model == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				shared, err := fixture.Shared(wd)
				if err != nil {
					return fmt.Errorf("%w: give --fixtures and --model", err)
				}
				if fixtures == "" {
					fixtures = filepath.Join(shared, "fixtures", "ggml")
				}
				if model == "" {
					model = filepath.Join(shared, "models", "tiny-qwen3moe", "model-bf16.gguf")
				}
			}
			rep, err := bench.Q2Rules(cmd.Context(), bench.Q2RulesConfig{Fixtures: fixtures, Model: model, Imatrix: imat, GaussianBlocks: blocks,
				Candidates: candidates, NoSpeed: noSpeed, Progress: func(total int64, desc string) *cli.Progress { return env.NewProgress(total, desc, cli.Weights) }})
			if err != nil {
				return err
			}
			if env.JSON {
				return env.PrintJSON(rep)
			}
			printQ2Rules(env, rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&fixtures, "fixtures", "", "folder of ggml fixture GGUFs (default: shared/fixtures/ggml above the working directory)")
	cmd.Flags().StringVar(&model, "model", "", "BF16/F32/F16 GGUF whose *_exps tensors are compared (default: the tiny qwen3moe fixture)")
	cmd.Flags().StringVar(&imat, "imatrix", "", "llama.cpp importance matrix: adds importance-weighted errors of the search with and without it")
	cli.IntVar(cmd.Flags(), &blocks, "gaussian-blocks", 16384, 1, 1<<24, "gaussian blocks of 64 to compare")
	cli.IntVar(cmd.Flags(), &candidates, "candidates", 0, 0, maxQ2Candidates, "Q2Search candidate scales per sign (0: the default)")
	cmd.Flags().BoolVar(&noSpeed, "no-speed", false, "skip the quantize speed measurement")
	return cmd
}

func printQ2Rules(env *cli.Env, rep *bench.Q2RulesReport) {
	fmt.Fprintf(env.Out, "Q2_0 relative MSE, sum (x-y)^2 / sum x^2 (search: %d candidate scales per sign; kernels %s)\n", rep.Candidates, rep.Kernels)
	tw := tabwriter.NewWriter(env.Out, 2, 4, 2, ' ', 0)
	hdr := "data\tweights\tggml\tfield\tsearch\tsearch/field"
	if rep.Imatrix != "" {
		hdr += "\tw.search\tw.search+imatrix"
	}
	fmt.Fprintln(tw, hdr)
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%.4f\t%.3f", r.Data, r.Weights, r.RelGGML, r.RelField, r.RelSearch, r.RelSearch/r.RelField)
		if rep.Imatrix != "" {
			if r.WRelSearch != nil {
				fmt.Fprintf(tw, "\t%.4f\t%.4f", *r.WRelSearch, *r.WRelSearchImatrix)
			} else {
				fmt.Fprint(tw, "\t-\t-")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if rep.Imatrix != "" {
		fmt.Fprintf(env.Out, "w.*: importance-weighted relative error, weights from %s (expert e uses row e)\n", rep.Imatrix)
	}
	if len(rep.Speed) > 0 {
		fmt.Fprintf(env.Out, "\nQ2_0 quantize speed, one goroutine, %d gaussian weights (sigma %g), best of %d (%s)\n",
			rep.Speed[0].Weights, bench.Q2SpeedSigma, bench.Q2SpeedRuns, rep.SpeedClock)
		tw = tabwriter.NewWriter(env.Out, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "rule\tpath\tMweights/CPU-s\tcpu s\twall s")
		for _, s := range rep.Speed {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.4f\t%.4f\n", s.Rule, s.Path, s.MWeightsPerCPU, s.CPUSeconds, s.WallSeconds)
		}
		tw.Flush()
	}
}

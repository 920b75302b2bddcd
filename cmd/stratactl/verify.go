package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { register(newVerifyCmd) }

func newVerifyCmd(env *cli.Env) *cobra.Command {
	var (
		source, imatrix, keepMap string
		jobs                     int
	)
	cmd := &cobra.Command{
		Use:   "verify PATH",
		Short: "Check a pack folder or a GGUF byte by byte; with --source, against the model it was made from",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := convert.Verify(cmd.Context(), convert.VerifyConfig{Path: args[0], Source: source, Imatrix: imatrix, KeepMap: keepMap, Jobs: jobs, Progress: progressFor(env)})
			if err != nil {
				return err
			}
			if env.JSON {
				if err := env.PrintJSON(rep); err != nil {
					return err
				}
			} else {
				printVerify(env, rep)
			}
			if !rep.OK {
				// The report is on stdout; stderr gets one line too, so that a
				// redirected report never fails silently.
				n := len(rep.Failures) + rep.Omitted
				first := "a check failed"
				if len(rep.Failures) > 0 {
					first = rep.Failures[0].String()
				}
				return &cli.ExitError{Code: 1, Err: fmt.Errorf("verify %s: %d problem(s), the first: %s", rep.Path, n, first)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the GGUF the checked file was made from: compare every expert and tensor with it")
	cmd.Flags().StringVar(&keepMap, "keep-map", "", "for a pruned GGUF (stratactl prune): the keep map it was pruned with, so that --source compares each kept expert with its source expert")
	cmd.Flags().StringVar(&imatrix, "imatrix", "", "the importance matrix the file was made with (default: the one the pack's manifest names)")
	cli.Threads(cmd.Flags(), &jobs, "worker threads (0: all cores)")
	cli.Verbose(cmd.Flags(), env, "also list the tensors whose type did not change")
	return cmd
}

func printVerify(env *cli.Env, rep *convert.VerifyReport) {
	fmt.Fprintf(env.Out, "verify %s (%s)\n", rep.Path, rep.Kind)
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(env.Out, "  %s %-16s %s\n", mark, c.Name, c.Detail)
	}
	if len(rep.Layers) > 0 {
		fmt.Fprintf(env.Out, "relative MSE against %s:\n", rep.Source)
		for _, l := range rep.Layers {
			fmt.Fprintf(env.Out, "  block %3d  %.4g", l.Block, l.RelMSE)
			for _, p := range l.Parts {
				fmt.Fprintf(env.Out, "  %s %.4g", p.Tensor, p.RelMSE)
			}
			fmt.Fprintln(env.Out)
		}
		fmt.Fprintf(env.Out, "  overall    %.4g\n", rep.RelMSE)
	}
	for _, t := range rep.Tensors {
		if t.Type != t.Source || env.Verbose {
			fmt.Fprintf(env.Out, "  %-32s %s -> %s  rel. MSE %.4g (quantizer: %.4g, identical bytes: %v)\n", t.Name, t.Source, t.Type, t.RelMSE, t.Requant, t.Identical)
		}
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintf(env.Out, "%d failure(s):\n", len(rep.Failures)+rep.Omitted)
		for _, f := range rep.Failures {
			fmt.Fprintf(env.Out, "  %s\n", f)
		}
		if rep.Omitted > 0 {
			fmt.Fprintf(env.Out, "  ... and %d more\n", rep.Omitted)
		}
		fmt.Fprintln(env.Out, "FAILED")
		return
	}
	fmt.Fprintln(env.Out, "OK")
}

package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { register(newQuantizeCmd) }

func newQuantizeCmd(env *cli.Env) *cobra.Command {
	var (
		out, tensors, imatrix string
		jobs                  int
		split                 splitFlags
		qf                    quantFlags
		cf                    calibFlags
	)
	cmd := &cobra.Command{
		Use:   "quantize IN.gguf -o OUT.gguf --type TYPE",
		Short: "Convert selected tensors (default: the MoE experts) to another type, copying the rest byte for byte",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o OUT.gguf is required")
			}
			t, q2, err := qf.parse()
			if err != nil {
				return err
			}
			so, err := split.options()
			if err != nil {
				return err
			}
			if err := checkFiles([]string{args[0], imatrix, cf.tokens.text, cf.tokens.ids}, outputs(out, so)); err != nil {
				return err
			}
			cal, err := cf.prepare(cmd.Context(), env, cmd.Flags(), args[0], t, imatrix, jobs)
			if err != nil {
				return err
			}
			qc := convert.QuantizeConfig{In: args[0], Out: out, Type: t, Tensors: tensors,
				Q2: q2, Imatrix: imatrix, Jobs: jobs, Version: cli.Version, Progress: progressFor(env), Split: so}
			if cal != nil {
				defer cal.Close()
				qc.Experts, qc.Calib = cal.q, cal.info
			}
			res, err := convert.Quantize(cmd.Context(), qc)
			if err != nil {
				return err
			}
			cal.finish()
			if env.JSON {
				return env.PrintJSON(res)
			}
			tw := tabwriter.NewWriter(env.Out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "tensor\tfrom\tto\taction\trel. MSE\tcalib. output err")
			for _, r := range res.Tensors {
				// A selected tensor left as is is shown with the reason.
				if r.Action == "kept" && r.Note == "" && !env.Verbose {
					continue
				}
				oe := "-"
				if r.CalibOutputErr != nil {
					oe = fmt.Sprintf("%.4g", *r.CalibOutputErr)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.4g\t%s\n", r.Name, r.From, r.To, r.Action, r.RelMSE, oe)
			}
			tw.Flush()
			if c := res.Calib; c != nil {
				fmt.Fprintf(env.Out, "calibration: %d tokens in %d windows of %d from %s (%d held back), damping %g, %.1f s\n",
					c.Tokens, c.Windows, c.Ctx, c.Source, c.HeldTokens, c.Damp, c.Seconds)
				for _, fb := range c.Fallbacks {
					fmt.Fprintf(env.Out, "plain search fallback: %s\n", fb)
				}
			}
			fmt.Fprintf(env.Out, "%d tensors converted to %s, %d kept; %d -> %d bytes; general.file_type %s\nwrote %s\n",
				res.Converted, res.Type, len(res.Tensors)-res.Converted, res.InBytes, res.OutBytes, res.FileType, res.Out)
			if len(res.Shards) > 1 {
				fmt.Fprintf(env.Out, "as %d shards: %s\n", len(res.Shards), strings.Join(res.Shards, ", "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "output GGUF file")
	qf.add(f, "", "target type (q2_0, q8_0, bf16, f16, f32)")
	f.StringVar(&tensors, "tensors", convert.DefaultTensors, "regular expression selecting the tensors to convert")
	f.StringVar(&imatrix, "imatrix", "", imatrixUsage)
	cli.Threads(f, &jobs, "worker threads (0: all cores)")
	cli.Verbose(f, env, "also list the tensors copied unchanged")
	split.add(f)
	cf.add(f)
	cmd.MarkFlagRequired("type")
	return cmd
}

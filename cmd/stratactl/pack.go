package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { register(newPackCmd) }

func newPackCmd(env *cli.Env) *cobra.Command {
	var (
		out, keep, imatrix string
		jobs               int
		carryMTP           bool
		qf                 quantFlags
		cf                 calibFlags
	)
	cmd := &cobra.Command{
		Use:   "pack IN.gguf -o DIR",
		Short: "Write a strata pack: model.gguf, model.experts (one aligned slot per expert), keep.strp, manifest.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o DIR is required")
			}
			t, q2, err := qf.parse()
			if err != nil {
				return err
			}
			cal, err := cf.prepare(cmd.Context(), env, cmd.Flags(), args[0], t, imatrix, jobs)
			if err != nil {
				return err
			}
			pc := convert.PackConfig{In: args[0], OutDir: out, Type: t, Keep: keep, Imatrix: imatrix, CarryMTP: carryMTP,
				Q2: q2, Jobs: jobs, Version: cli.Version, Args: env.Args, Progress: progressFor(env)}
			if cal != nil {
				defer cal.Close()
				pc.Experts, pc.Calib = cal.q, cal.info
			}
			man, err := convert.Pack(cmd.Context(), pc)
			if err != nil {
				return err
			}
			if env.JSON {
				return env.PrintJSON(man)
			}
			m := man.Model
			fmt.Fprintf(env.Out, "packed %s (%s): %d MoE layers, %d of %d experts kept, %s experts, slots of %d bytes (%d of payload)\n",
				args[0], m.Arch, m.MoELayers, m.Expert, m.SourceExpert, man.Parameters.Type, m.SlotBytes, m.PayloadBytes)
			for _, l := range man.Layers {
				fmt.Fprintf(env.Out, "  block %3d  rel. MSE %.4g", l.Block, l.RelMSE)
				for _, p := range l.Parts {
					fmt.Fprintf(env.Out, "  %s %s->%s %.4g", p.Tensor, p.From, p.To, p.RelMSE)
				}
				fmt.Fprintln(env.Out)
			}
			fmt.Fprintf(env.Out, "overall rel. MSE %.4g\n", man.RelMSE)
			if man.MTP != nil {
				fmt.Fprintf(env.Out, "%s\n", man.MTP)
			}
			for _, o := range man.Outputs {
				fmt.Fprintf(env.Out, "  %-14s %14d bytes  sha256 %s\n", o.Path, o.Bytes, o.SHA256)
			}
			fmt.Fprintf(env.Out, "wrote %s\n", out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "output folder (must not exist)")
	qf.add(f, "q2_0", "expert type in model.experts")
	f.StringVar(&keep, "keep-map", "", "keep map (keep.strp, from prune): prune to the kept experts in the same pass")
	f.StringVar(&imatrix, "imatrix", "", imatrixUsage)
	f.BoolVar(&carryMTP, "carry-mtp", false, "keep the multi-token-prediction blocks (nextn_predict_layers), whole, in model.gguf instead of dropping them")
	cli.Threads(f, &jobs, "worker threads (0: all cores)")
	cf.add(f)
	return cmd
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/quant"
)

func init() { register(newSynthCmd) }

func newSynthCmd(env *cli.Env) *cobra.Command {
	var (
		cfg            convert.SynthConfig
		typ, denseType string
	)
	cmd := &cobra.Command{
		Use:   "synth -o FILE --arch qwen3moe --layers L --experts E --embd D --ff F --type TYPE",
		Short: "Write a complete synthetic MoE GGUF of any shape with random but valid weights, streaming",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.Out == "" {
				return fmt.Errorf("-o FILE is required")
			}
			if err := checkFiles(nil, []string{cfg.Out}); err != nil {
				return err
			}
			var err error
			if cfg.Type, err = quant.ParseType(typ); err != nil {
				return err
			}
			if cfg.DenseType, err = quant.ParseType(denseType); err != nil {
				return err
			}
			cfg.Progress = progressFor(env)
			res, err := convert.Synth(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if env.JSON {
				return env.PrintJSON(res)
			}
			fmt.Fprintf(env.Out, "wrote %s: %d bytes, %d tensors, %d weights; %d layers × %d experts (%d × %d), %s experts, %d heads (%d kv) of %d, vocab %d\n",
				res.Out, res.Bytes, res.Tensors, res.Weights, cfg.Layers, cfg.Experts, cfg.Embd, cfg.FF, cfg.Type, res.Heads, res.HeadsKV, res.HeadDim, res.Vocab)
			for name, t := range res.Fallback {
				fmt.Fprintf(env.Out, "  %s: %s (its rows are not a whole number of %s blocks)\n", name, t, cfg.Type)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.Out, "output", "o", "", "output GGUF file")
	f.StringVar(&cfg.Arch, "arch", "qwen3moe", "architecture (qwen3moe)")
	f.IntVar(&cfg.Layers, "layers", 4, "blocks (all MoE)")
	f.IntVar(&cfg.Experts, "experts", 32, "experts per layer")
	f.IntVar(&cfg.ExpertsUsed, "experts-used", 0, "experts per token (0: min(8, experts))")
	f.IntVar(&cfg.Embd, "embd", 256, "n_embd (a multiple of 64)")
	f.IntVar(&cfg.FF, "ff", 256, "n_ff_exp")
	f.StringVar(&typ, "type", "iq3_s", "expert type")
	f.StringVar(&denseType, "dense-type", "bf16", "type of attention, embedding and output weights")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	f.IntVarP(&cfg.Jobs, "jobs", "j", 0, "worker threads (0: all cores)")
	return cmd
}

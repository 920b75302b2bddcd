package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/quant"
)

func init() { register(newSynthCmd) }

// The bounds of a synthetic (or benchmarked) model's shape: well above any
// published MoE (61 layers, 384 experts, widths of 7168 and 18432), far below
// what would only exhaust the disk.
const (
	maxLayers  = 1024
	maxExperts = 4096
	maxWidth   = 1 << 16
	maxHeads   = 1024
	maxVocab   = 1 << 22
)

func newSynthCmd(env *cli.Env) *cobra.Command {
	var (
		cfg            convert.SynthConfig
		typ, denseType string
	)
	cmd := &cobra.Command{
		Use:   "synth -o FILE --arch qwen3moe|qwen35moe --layers L --experts E --embd D --ff F --type TYPE",
		Short: "Write a complete synthetic MoE GGUF of any shape with random but valid weights, streaming",
		Long: `synth writes a complete MoE model with random but valid weights, streaming.

qwen3moe: every block is attention (heads of 64) + routed experts.
qwen35moe: every --attn-interval-th block is gated full attention, the others
gated delta nets; every block has routed experts and a sigmoid-gated shared
expert (--ff-shared wide). Head counts and dimensions follow n_embd with the
ratios of Qwen3-Next / Qwen3.5 (attention heads of 256, n_embd/128 of them,
2 KV heads; delta-net heads of 128, n_embd/128 key heads and twice as many
value heads), so --embd must be a multiple of 128. The field shape:
  synth --arch qwen35moe --layers 48 --experts 512 --experts-used 10 --embd 2560 --ff 640`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.Out == "" {
				return fmt.Errorf("-o FILE is required")
			}
			if err := checkFiles(nil, []string{cfg.Out}); err != nil {
				return err
			}
			if cfg.Hybrid.AttnInterval < 1 {
				return fmt.Errorf("--attn-interval %d: want at least 1", cfg.Hybrid.AttnInterval)
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
			if h := res.Hybrid; h != nil {
				fmt.Fprintf(env.Out, "  %d attention layers %v, the others gated delta nets (%d key heads × %d, %d value heads × %d, conv %d); shared expert ff %d\n",
					len(res.AttentionLayers), res.AttentionLayers, h.KHeads, h.KDim, h.VHeads, h.VDim, h.ConvKernel, h.SharedFF)
			}
			for name, t := range res.Fallback {
				fmt.Fprintf(env.Out, "  %s: %s (its rows are not a whole number of %s blocks)\n", name, t, cfg.Type)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.Out, "output", "o", "", "output GGUF file")
	f.StringVar(&cfg.Arch, "arch", "qwen3moe", "architecture (qwen3moe or qwen35moe)")
	cli.IntVar(f, &cfg.Hybrid.AttnInterval, "attn-interval", 4, 1, maxLayers, "qwen35moe: every N-th block is full attention")
	cli.IntVar(f, &cfg.Hybrid.SharedFF, "ff-shared", 0, 0, maxWidth, "qwen35moe: shared expert width (0: --ff)")
	cli.IntVar(f, &cfg.Layers, "layers", 4, 1, maxLayers, "blocks (all MoE)")
	cli.IntVar(f, &cfg.Experts, "experts", 32, 1, maxExperts, "experts per layer")
	cli.IntVar(f, &cfg.ExpertsUsed, "experts-used", 0, 0, maxExperts, "experts per token (0: min(8, experts))")
	cli.IntVar(f, &cfg.Embd, "embd", 256, 64, maxWidth, "n_embd (a multiple of 64; of 128 for qwen35moe)")
	cli.IntVar(f, &cfg.FF, "ff", 256, 1, maxWidth, "n_ff_exp")
	f.StringVar(&typ, "type", "iq3_s", "expert type")
	f.StringVar(&denseType, "dense-type", "bf16", "type of attention, embedding and output weights")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	cli.Threads(f, &cfg.Jobs, "worker threads (0: all cores)")
	return cmd
}

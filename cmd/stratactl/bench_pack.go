package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/quant"
)

func init() { registerBench(newBenchPackCmd) }

func newBenchPackCmd(env *cli.Env) *cobra.Command {
	var (
		cfg convert.BenchPackConfig
		typ string
		cal bench.PackCalibration
	)
	cmd := &cobra.Command{
		Use:   "pack",
		Short: "Synthesize a model (default: the field's 48 × 512 experts of 2560 × 640, IQ3_S), pack it with a keep map, and compare with the disk floor",
		Long: `bench pack writes a synthetic model (or takes --input), keeps --keep experts per
layer, packs it in this process (cold: the input is dropped from the page
cache first) and reports wall time, weights converted per second, the peak
RSS from the start of the pack (the high-water mark is reset after the
synthesis; where the kernel does not allow that, the whole run's), and the
ratio to the disk floor: the time to read the input once and write the
output bytes, measured in the same run. With --calib-windows N it packs the
model a second time with the calibrated quantizer (optq at its defaults),
calibrated on N windows of --calib-ctx uniformly random token ids run
through the model itself (seeded by --seed), and reports that pack's time
(calibration run included) against the plain one's, its peak RSS and its
peak anonymous RSS (the peak less the mapped model's pages).
The field-scale default needs about 75 GB of free disk in --dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if cfg.Type, err = quant.ParseType(typ); err != nil {
				return err
			}
			cfg.Progress = progressFor(env)
			if cal.Windows > 0 {
				cal.Threads, cal.Dir = cfg.Jobs, cfg.Dir
				cfg.Calibrate = cal.Calibrate
			}
			res, err := convert.BenchPack(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if env.JSON {
				return env.PrintJSON(res)
			}
			gb := func(b int64) float64 { return float64(b) / 1e9 }
			fmt.Fprintf(env.Out, "machine        %s, -j %d\n", res.Machine, res.Jobs)
			fmt.Fprintf(env.Out, "input          %s (%s): %.2f GB, %d MoE layers × %d experts\n", res.Input, res.Arch, gb(res.InputBytes), res.Layers, res.Experts)
			if res.SynthSeconds > 0 {
				fmt.Fprintf(env.Out, "synth          %.1f s\n", res.SynthSeconds)
			}
			fmt.Fprintf(env.Out, "pack           %.1f s, %.1f CPU s (page cache dropped: %v), %d of %d experts kept, %.3g weights converted, %.3g weights/s, rel. MSE %.4g\n",
				res.PackSeconds, res.PackCPUSeconds, res.CacheDropped, res.Kept, res.Experts, float64(res.Weights), res.WeightsPerSec, res.PackRelMSE)
			fmt.Fprintf(env.Out, "output         %.2f GB\n", gb(res.OutputBytes))
			fmt.Fprintf(env.Out, "peak RSS       %.0f MB (%s)\n", float64(res.PeakRSSBytes)/1e6, res.RSSScope)
			fmt.Fprintf(env.Out, "disk floor     %.1f s (read input %.1f s = %.0f MB/s, write output %.1f s = %.0f MB/s)\n",
				res.FloorSeconds, res.ReadSeconds, float64(res.InputBytes)/1e6/res.ReadSeconds, res.WriteSeconds, float64(res.OutputBytes)/1e6/res.WriteSeconds)
			fmt.Fprintf(env.Out, "pack / floor   %.2f\n", res.RatioToFloor)
			if c := res.Calibrated; c != nil {
				fmt.Fprintf(env.Out, "calibrated     %.1f s = %.2f x the plain pack, %.1f CPU s = %.2f x (calibration run %.1f s, %.1f CPU s: %d tokens, %s), %.3g weights/s, rel. MSE %.4g\n",
					c.PackSeconds, c.Ratio, c.CPUSeconds, c.CPURatio, c.CollectSeconds, c.CollectCPUSeconds, c.Calibration.Tokens, c.Calibration.Source, c.WeightsPerSec, c.RelMSE)
				fmt.Fprintf(env.Out, "  peak RSS     %.0f MB (%s), anonymous %.0f MB\n", float64(c.PeakRSSBytes)/1e6, c.RSSScope, float64(c.PeakAnonBytes)/1e6)
				for _, f := range c.Calibration.Fallbacks {
					fmt.Fprintf(env.Out, "  plain search %s\n", f)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "work folder (default: the system temp folder)")
	f.StringVar(&cfg.Input, "input", "", "pack this model instead of a synthetic one")
	f.StringVar(&cfg.Arch, "arch", "qwen3moe", "synthetic model: architecture (qwen3moe or qwen35moe: the hybrid, its dense part as synth --arch qwen35moe makes it)")
	cli.IntVar(f, &cfg.Layers, "layers", 48, 1, maxLayers, "synthetic model: MoE layers")
	cli.IntVar(f, &cfg.Experts, "experts", 512, 1, maxExperts, "synthetic model: experts per layer")
	cli.IntVar(f, &cfg.Embd, "embd", 2560, 64, maxWidth, "synthetic model: n_embd (a multiple of 64)")
	cli.IntVar(f, &cfg.FF, "ff", 640, 1, maxWidth, "synthetic model: n_ff_exp")
	f.StringVar(&typ, "type", "iq3_s", "synthetic model: expert type")
	cli.IntVar(f, &cfg.Keep, "keep", 256, 1, maxExperts, "experts kept per layer")
	cli.Threads(f, &cfg.Jobs, "worker threads (0: all cores)")
	f.BoolVar(&cfg.KeepFiles, "keep-files", false, "leave the model and pack in --dir")
	f.BoolVar(&cfg.SlotTimes, "slot-times", false, "put each slot's start and end in the packs' phases (--json)")
	cli.IntVar(f, &cal.Windows, "calib-windows", 0, 0, 1<<20, "also pack with the calibrated quantizer, calibrated on this many windows of random token ids (0: no calibrated pack)")
	cli.IntVar(f, &cal.Ctx, "calib-ctx", 256, 2, 1<<20, "tokens per calibration window")
	f.Uint64Var(&cal.Seed, "seed", 1, "seed of the calibration windows (window i uses seed+i)")
	return cmd
}

package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/quant"
)

func init() { registerBench(newBenchQuantCmd) }

func newBenchQuantCmd(env *cli.Env) *cobra.Command {
	var seconds float64
	var mib int
	var typeNames []string
	cmd := &cobra.Command{
		Use:   "quant",
		Short: "Dequantize (every type, every path) and Q2_0 quantize speed on one core, vs memory bandwidth and ggml",
		Long: `Measures, on one goroutine locked to one OS thread, the weights per second
of every dequantizer (the portable Go path and, where this CPU has one, the
vector path) and of the Q2_0 quantizer in its ggml and search modes, over a
buffer of --mib MiB of float32. Each figure is the median of the calls made in
--seconds seconds after one warm-up call. Memory bandwidth (write, read and
copy of a buffer of the same size) is measured in the same run, and each
dequantizer's output rate is shown as a fraction of the write bandwidth.
ggml's single-thread figures are printed beside, labelled as reference
documentation (they come from QUANT-FORMATS.md, not from this run).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			types := bench.DequantTypes
			if len(typeNames) > 0 {
				types = nil
				for _, name := range typeNames {
					t, err := quant.ParseType(name)
					if err != nil {
						return err
					}
					if !quant.CanDequantize(t) {
						return fmt.Errorf("no dequantizer for type %s", t)
					}
					types = append(types, t)
				}
			}
			rep, err := bench.Quant(cmd.Context(), seconds, mib, types, func(total int64, desc string) *cli.Progress { return env.NewProgress(total, desc, cli.Steps) })
			if err != nil {
				return err
			}
			if env.JSON {
				return env.PrintJSON(rep)
			}
			printQuantBench(env.Out, rep)
			return nil
		},
	}
	cli.Float64VarOpen(cmd.Flags(), &seconds, "seconds", 0.5, 0, 600, "time spent on each measurement")
	cli.IntVar(cmd.Flags(), &mib, "mib", 64, 1, 4096, "float32 buffer size in MiB (ggml's anchors used 64)")
	cmd.Flags().StringSliceVar(&typeNames, "type", nil, "measure only these types (e.g. --type q8_0,iq3_s); Q2_0 also selects its quantizer")
	return cmd
}

func printQuantBench(w io.Writer, r *bench.QuantReport) {
	fmt.Fprintf(w, "CPU paths: %s; one thread; output %d MiB of float32 (and %d KiB in cache); median call over %.2gs per figure\n",
		r.Paths, r.BufferMiB, r.CacheKiB, r.SecondsPerPoint)
	if r.LoadAverage != "" {
		fmt.Fprintf(w, "load average at start: %s (GOMAXPROCS %d)\n", r.LoadAverage, r.GOMAXPROCS)
	}
	fmt.Fprintf(w, "memory bandwidth (this run, one thread, per CPU-second): write %.2f GB/s, read %.2f GB/s, copy %.2f GB/s\n\n",
		r.WriteGBs, r.ReadGBs, r.CopyGBs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\ttype\tpath\tMw/s wall\tbest\tper CPU-s\tin cache\tMB/s\tof write BW\tggml ref MB/s*\tvs ggml ref\t")
	for _, x := range r.Rates {
		ref, vs, bw := "-", "-", "-"
		if x.GGMLMBPerS != nil {
			ref = fmt.Sprintf("%.0f", *x.GGMLMBPerS)
			vs = fmt.Sprintf("%.2fx", *x.VsGGML)
		}
		if x.OfWriteBW > 0 {
			bw = fmt.Sprintf("%.0f%%", 100*x.OfWriteBW)
		}
		cpu, cache := "-", "-"
		if x.CPUMWPerS > 0 {
			cpu = fmt.Sprintf("%.1f", x.CPUMWPerS)
		}
		if x.CacheMWPerS > 0 {
			cache = fmt.Sprintf("%.1f", x.CacheMWPerS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f\t%s\t%s\t%.0f\t%s\t%s\t%s\t\n",
			x.Op, x.Type, x.Path, x.MWeightsPerS, x.BestMWPerS, cpu, cache, x.MBPerS, bw, ref, vs)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nMw/s: million weights per second of wall-clock time (median call; best = fastest call) over the\n"+
		"big output; per CPU-s: per second of this thread's CPU time (time taken by other processes left out);\n"+
		"in cache: wall-clock median over the small output. MB/s uses the wall-clock median; 'of write BW' and\n"+
		"'vs ggml ref' use the per-CPU-second rate (ggml's figures come from an idle, pinned core).\n")
	fmt.Fprintf(w, "* %s.\n", r.ReferenceNote)
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { registerBench(newBenchDecodeCmd) }

type benchDecodeFlags struct {
	shape            synthShapeFlags
	dir              string
	changed          func(name string) bool
	keep             bool
	arenaFrac        float64
	prompt, tokens   int
	readers, threads int
	memMB, memPasses int
	exact, noAIO     bool
	readCost         bool
	diskSlots        int
	residentCapMB    float64
}

func newBenchDecodeCmd(env *cli.Env) *cobra.Command {
	var f benchDecodeFlags
	cmd := &cobra.Command{
		Use:   "decode",
		Short: "Decode speed of a synthetic pack against the memory and disk bandwidth measured in the same run",
		Long: `bench decode writes a synthetic pack of --arch (qwen3moe, or the hybrid
qwen35moe: gated delta nets with every --attn-interval-th layer gated attention,
a shared expert, head geometry from --embd as synth makes it unless --heads,
--heads-kv or --head-dim are given; random weights of the given shapes and
types) to --dir, measures this machine's memory read bandwidth and the
pack's random slot-read bandwidth (O_DIRECT where allowed), then decodes twice:
with every expert resident (bound by memory bandwidth: weight bytes per token)
and with an arena of --arena-frac of the experts (bound also by the disk: bytes
read per token). The memory bandwidth is a plain streaming read (load-only
vector loop) over --mem-mb on every thread, the best of --mem-passes; the
compute bound is each of the step's matrix kernels (type, width, mode) timed
on one thread over rows resident in L2, times the threads. It prints each
speed next to the limits those give: the mean rate, and one over the median
and the fastest step; and, where the OS has thread CPU clocks, the weight bytes
the decode streams per CPU-second of the process beside the streaming read's
bytes per CPU-second of its threads (a fraction that waiting for a core on a
shared machine changes far less). The resident run's arena is bounded by --resident-cap-mb
(default: half the machine's RAM, the bound of run's default arena); when the
experts exceed it, the report says so (resident_capped) and that run streams
the rest.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.changed = cmd.Flags().Changed
			return benchDecode(cmd.Context(), env, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "where to make the synthetic pack's own new folder (default: the temp dir); it is removed after unless --keep-files")
	fl.BoolVar(&f.keep, "keep-files", false, "keep the synthetic pack")
	f.shape.add(fl, 8)
	cli.Float64VarOpen(fl, &f.arenaFrac, "arena-frac", 0.25, 0, 1, "arena of the streaming run, as a fraction of all experts")
	cli.IntVar(fl, &f.prompt, "prompt", 16, 1, maxCtx, "prompt tokens (random ids)")
	cli.IntVarP(fl, &f.tokens, "tokens", "n", 32, 2, maxCtx, "tokens to decode per run")
	cli.IntVar(fl, &f.readers, "readers", engine.DefaultReaders, 1, maxReaders, "slot reads in flight at once (native AIO requests, or reader goroutines)")
	fl.BoolVar(&f.noAIO, "no-aio", false, "read slots with reader goroutines' blocking reads, not native AIO")
	fl.BoolVar(&f.readCost, "read-cost", false, "decode every expert resident once more under a background read of random slots at the streaming run's rate: what the reads alone cost the compute here")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS)")
	cli.IntVar(fl, &f.memMB, "mem-mb", 512, 1, 1<<16, "buffer for the memory bandwidth measurement (a plain streaming read on every thread), MiB")
	cli.IntVar(fl, &f.memPasses, "mem-passes", 5, 1, 1000, "passes of the memory bandwidth measurement (the best counts)")
	exactFlag(fl, &f.exact, "the decode")
	cli.IntVar(fl, &f.diskSlots, "disk-slots", 256, 1, 1<<20, "random slot reads for the disk bandwidth measurement")
	cli.Float64Var(fl, &f.residentCapMB, "resident-cap-mb", 0, 0, 1<<30, "bound on the resident run's arena, MiB (0: half the machine's RAM); the report says when it applied")
	cli.Verbose(fl, env, "say where the synthetic pack is written before writing it")
	return cmd
}

func benchDecode(ctx context.Context, env *cli.Env, f *benchDecodeFlags) error {
	sp, err := f.shape.spec(f.changed)
	if err != nil {
		return err
	}
	rep, err := bench.Decode(ctx, bench.DecodeConfig{Spec: sp, Dir: f.dir, KeepFiles: f.keep, ArenaFrac: f.arenaFrac,
		Prompt: f.prompt, Tokens: f.tokens, Readers: f.readers, NoAIO: f.noAIO, ReadCost: f.readCost, Threads: f.threads, Mode: modeOf(f.exact), MemMB: f.memMB, MemPasses: f.memPasses, DiskSlots: f.diskSlots, ResidentCapMB: f.residentCapMB, Log: env.Logf})
	if err != nil {
		return err
	}
	size, dir := rep.ExpertsBytes, rep.Dir
	if env.JSON {
		return env.PrintJSON(rep)
	}
	w := env.Out
	fmt.Fprintln(w, describeSynth(rep.Spec))
	if h := rep.Spec.Hybrid; h != nil {
		fmt.Fprintf(w, "  every %d-th layer attention (%d heads, %d KV, dim %d), the others delta nets (%d key, %d value heads of %d), shared expert ff %d\n",
			h.AttnInterval, h.Heads, h.HeadsKV, h.HeadDim, h.KHeads, h.VHeads, h.VDim, h.SharedFF)
	}
	fmt.Fprintf(w, "  experts file %.1f MB (slots of %d bytes), written in %.1f s to %s\n", float64(size)/1e6, rep.SlotBytes, rep.WriteSeconds, dir)
	fmt.Fprintf(w, "  weights per token: dense %.1f MB + experts %.1f MB\n", rep.DenseMBPerTok, rep.ExpertMBPerTok)
	fmt.Fprintf(w, "machine: %s, %d threads of %d CPUs, load average %s; %s mode\n", rep.Kernels, rep.Threads, rep.CPUs, rep.LoadAverage, rep.Mode)
	fmt.Fprintf(w, "  memory read bandwidth %.2f GB/s, %.2f GB per CPU-second (streaming read of %d MiB, %d threads, best of %d passes before the runs and before and after each)\n", rep.MemReadGBs, rep.MemReadGBsPerCPU, rep.MemMB, rep.Threads, rep.MemPasses)
	for _, k := range rep.KernelRates {
		how := "float32 activations"
		if k.Quantized {
			how = "Q8_0 activations"
		}
		fmt.Fprintf(w, "  in-cache kernel %s x %d (%s): %.2f G weights/s, %.2f GB/s per thread (%.0f KiB of rows); %.1f M weights/token\n",
			k.Type, k.Cols, how, k.GWeightsPerS, k.GBPerS, k.SampleKB, float64(k.WeightsPerToken)/1e6)
	}
	fmt.Fprintf(w, "  compute bound %.2f tokens/s (those rates x %d threads; L2 %d KiB)\n", rep.ComputeLimit, rep.Threads, rep.L2KB)
	direct := "O_DIRECT"
	if !rep.DiskDirect {
		direct = "buffered: " + rep.DiskNote
	}
	fmt.Fprintf(w, "  slot reads %.0f MB/s (%d random slots, %d readers, %s)\n", rep.DiskReadMBs, f.diskSlots, f.readers, direct)
	for _, r := range []struct {
		name string
		d    bench.DecodeRun
	}{{"resident", rep.Resident}, {"streaming", rep.Streaming}} {
		d := r.d
		fmt.Fprintf(w, "%s (arena %.0f MiB): decode %.2f tokens/s (median step %.2f, best %.2f, per CPU-second %.2f), prefill %.2f tokens/s\n",
			r.name, d.ArenaMB, d.DecodeTokensPerS, d.MedianTokensPerS, d.BestTokensPerS, d.CPUTokensPerS, d.PrefillTokensPerS)
		checked := ""
		if d.MemBytesPerToken > d.BytesPerToken {
			checked = fmt.Sprintf(" + %.1f MB of slots checked", d.MemBytesPerToken-d.BytesPerToken)
		}
		fmt.Fprintf(w, "  bounds: memory %.2f tokens/s (%.1f MB/token%s at %.2f GB/s, the best pass; this run's own %.2f), compute %.2f tokens/s",
			d.MemLimit, d.BytesPerToken, checked, rep.MemReadGBs, d.MemReadGBs, d.ComputeLimit)
		if d.DiskLimit > 0 {
			fmt.Fprintf(w, ", disk %.2f tokens/s (%.2f MB read/token)", d.DiskLimit, d.Stream.LandedMBPerToken())
		}
		fmt.Fprintf(w, "\n  median step: %.0f%% of the memory bound, %.0f%% of the compute bound, %.0f%% of the tighter of memory and disk (%.2f tokens/s); best step: %.0f%% of the memory bound\n",
			100*d.MemFraction, 100*d.ComputeFraction, 100*d.Fraction, d.Limit, 100*d.BestMemFraction)
		if d.CPUMemFraction > 0 {
			fmt.Fprintf(w, "  per CPU-second: %.1f GB of weights, %.0f%% of the streaming read's %.2f GB per CPU-second (the best pass)\n",
				d.CPUTokensPerS*d.BytesPerToken/1e3, 100*d.CPUMemFraction, rep.MemReadGBsPerCPU)
		}
		if r.name == "resident" && rep.ResidentCapped {
			why := "half the machine's RAM"
			if f.residentCapMB > 0 {
				why = "--resident-cap-mb"
			}
			fmt.Fprintf(w, "  arena capped at %.1f MiB (%s): %d of %d experts resident, the rest streamed\n",
				rep.ResidentCapMB, why, d.Stream.ArenaSlots, d.Stream.TotalSlots)
		}
		printStepPhases(w, d.Phases)
		reads := "reader goroutines"
		if d.Stream.NativeAIO {
			reads = "native AIO"
		}
		fmt.Fprintf(w, "  hit rate %.3f, misses %.2f/token (in %.2f layers), read %.2f MB/token (%.2f of it dropped unread; %s), read-ahead hits %.2f/token, hits still being read at their Need %.2f/token, waiting %.2f ms/token\n",
			d.Stream.HitRate, d.Stream.MissesPerToken, d.Stream.MissedNeedsPerToken, d.Stream.ReadMBPerToken, d.Stream.DroppedMBPerToken, reads, d.Stream.ReadAheadHitsPerToken, d.Stream.LateHitsPerToken, d.Stream.WaitMsPerToken)
	}
	if u := rep.ResidentUnderReads; u != nil {
		fmt.Fprintf(w, "resident under a background read of %.0f MB/s (random slots, the streaming run's rate, bytes unused): decode %.2f tokens/s (median step %.2f), %.0f%% of the memory bound; the reads alone cost %.2f ms a step\n",
			rep.BackgroundReadMBs, u.DecodeTokensPerS, u.MedianTokensPerS, 100*u.MemFraction, 1e3/u.MedianTokensPerS-1e3/rep.Resident.MedianTokensPerS)
	}
	fmt.Fprintf(w, "streaming / resident: median step %.3f", rep.StreamingOfResident)
	if rep.StreamingOfResidentCPU > 0 {
		fmt.Fprintf(w, ", per CPU-second %.3f", rep.StreamingOfResidentCPU)
	}
	fmt.Fprintln(w)
	return nil
}

// printStepPhases prints a run's step breakdown: the weight products
// phase by phase (time, bytes, rate), then the rest.
func printStepPhases(w io.Writer, phases []bench.StepPhase) {
	var prod, other, mb, passes, wait float64
	for _, p := range phases {
		if p.Products {
			prod, mb = prod+p.Ms, mb+p.MB
		} else {
			other += p.Ms
		}
		passes, wait = passes+p.Passes, wait+p.WaitMs
	}
	if prod+other == 0 {
		return
	}
	fmt.Fprintf(w, "  step, mean: %.2f ms = products %.2f ms (%.1f MB at %.2f GB/s) + the rest %.2f ms; %.0f pool passes, %.2f ms waiting for workers\n",
		prod+other, prod, mb, mb/prod, other, passes, wait)
	line := func(products bool) {
		fmt.Fprint(w, "   ")
		for _, p := range phases {
			if p.Products != products || p.Ms == 0 {
				continue
			}
			fmt.Fprintf(w, " %s %.2f", p.Name, p.Ms)
			if p.GBs > 0 {
				fmt.Fprintf(w, " (%.2f GB/s)", p.GBs)
			}
			if p.WaitMs >= 0.005 {
				fmt.Fprintf(w, " (wait %.2f)", p.WaitMs)
			}
			fmt.Fprint(w, ";")
		}
		fmt.Fprintln(w)
	}
	line(true)
	line(false)
}

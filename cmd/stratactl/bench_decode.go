package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/hybridshape"
	"github.com/stratactl/stratactl/quant"
)

func init() { registerBench(newBenchDecodeCmd) }

type benchDecodeFlags struct {
	dir, arch                  string
	attnInterval               int
	changed                    func(name string) bool
	keep                       bool
	layers, embd, heads, kv    int
	headDim, experts, used, ff int
	vocab                      int
	denseType, expertType      string
	arenaFrac                  float64
	prompt, tokens             int
	readers, threads           int
	memMB, memPasses           int
	exact                      bool
	diskSlots                  int
	seed                       uint64
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
and the fastest step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.changed = cmd.Flags().Changed
			return benchDecode(cmd.Context(), env, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "where to make the synthetic pack's own new folder (default: the temp dir); it is removed after unless --keep-files")
	fl.BoolVar(&f.keep, "keep-files", false, "keep the synthetic pack")
	fl.StringVar(&f.arch, "arch", "qwen3moe", "architecture of the synthetic pack: "+strings.Join(engine.SynthArchitectures, ", "))
	cli.IntVar(fl, &f.attnInterval, "attn-interval", 4, 1, maxLayers, "qwen35moe: every this many layers one is full attention")
	cli.IntVar(fl, &f.layers, "layers", 8, 1, maxLayers, "MoE layers")
	cli.IntVar(fl, &f.embd, "embd", 2560, 1, maxWidth, "hidden size")
	cli.IntVar(fl, &f.heads, "heads", 32, 1, maxHeads, "attention heads")
	cli.IntVar(fl, &f.kv, "heads-kv", 4, 1, maxHeads, "key/value heads")
	cli.IntVar(fl, &f.headDim, "head-dim", 128, 1, maxWidth, "head dimension")
	cli.IntVar(fl, &f.experts, "experts", 64, 1, maxExperts, "experts per layer")
	cli.IntVar(fl, &f.used, "used", 8, 1, maxExperts, "experts per token")
	cli.IntVar(fl, &f.ff, "ff", 640, 1, maxWidth, "expert feed-forward size")
	cli.IntVar(fl, &f.vocab, "vocab", 32768, 1, maxVocab, "vocabulary")
	fl.StringVar(&f.denseType, "dense-type", "q8_0", "type of the dense matrices")
	fl.StringVar(&f.expertType, "expert-type", "q2_0", "type of the experts")
	cli.Float64VarOpen(fl, &f.arenaFrac, "arena-frac", 0.25, 0, 1, "arena of the streaming run, as a fraction of all experts")
	cli.IntVar(fl, &f.prompt, "prompt", 16, 1, maxCtx, "prompt tokens (random ids)")
	cli.IntVarP(fl, &f.tokens, "tokens", "n", 32, 2, maxCtx, "tokens to decode per run")
	cli.IntVar(fl, &f.readers, "readers", 4, 1, maxReaders, "slot reader goroutines")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS)")
	cli.IntVar(fl, &f.memMB, "mem-mb", 512, 1, 1<<16, "buffer for the memory bandwidth measurement (a plain streaming read on every thread), MiB")
	cli.IntVar(fl, &f.memPasses, "mem-passes", 5, 1, 1000, "passes of the memory bandwidth measurement (the best counts)")
	exactFlag(fl, &f.exact, "the decode")
	cli.IntVar(fl, &f.diskSlots, "disk-slots", 256, 1, 1<<20, "random slot reads for the disk bandwidth measurement")
	cli.Verbose(fl, env, "say where the synthetic pack is written before writing it")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the weights and prompt")
	return cmd
}

func benchDecode(ctx context.Context, env *cli.Env, f *benchDecodeFlags) error {
	dt, err := quant.ParseType(f.denseType)
	if err != nil {
		return err
	}
	et, err := quant.ParseType(f.expertType)
	if err != nil {
		return err
	}
	if f.used > f.experts {
		return fmt.Errorf("--used %d: more experts per token than the %d --experts", f.used, f.experts)
	}
	sp := engine.SynthSpec{Layers: f.layers, Embd: f.embd, Heads: f.heads, HeadsKV: f.kv, HeadDim: f.headDim,
		Experts: f.experts, ExpertsUsed: f.used, ExpertFF: f.ff, Vocab: f.vocab, DenseType: dt, ExpertType: et, Seed: f.seed}
	sp.Arch = f.arch
	if f.arch == "qwen35moe" {
		// synth's geometry from n_embd, overridden by the flags given.
		h := hybridshape.Shape{AttnInterval: f.attnInterval}
		if f.changed("heads") {
			h.Heads = f.heads
		}
		if f.changed("heads-kv") {
			h.HeadsKV = f.kv
		}
		if f.changed("head-dim") {
			h.HeadDim = f.headDim
		}
		sp.Hybrid = &h
	}
	rep, err := bench.Decode(ctx, bench.DecodeConfig{Spec: sp, Dir: f.dir, KeepFiles: f.keep, ArenaFrac: f.arenaFrac,
		Prompt: f.prompt, Tokens: f.tokens, Readers: f.readers, Threads: f.threads, Mode: modeOf(f.exact), MemMB: f.memMB, MemPasses: f.memPasses, DiskSlots: f.diskSlots, Log: env.Logf})
	if err != nil {
		return err
	}
	size, dir := rep.ExpertsBytes, rep.Dir
	if env.JSON {
		return env.PrintJSON(rep)
	}
	w := env.Out
	fmt.Fprintf(w, "synthetic %s pack: %d layers, embd %d, %d experts (%d used) of ff %d, %s experts, %s dense, vocab %d\n",
		rep.Spec.Arch, f.layers, f.embd, f.experts, f.used, f.ff, et, dt, f.vocab)
	if h := rep.Spec.Hybrid; h != nil {
		fmt.Fprintf(w, "  every %d-th layer attention (%d heads, %d KV, dim %d), the others delta nets (%d key, %d value heads of %d), shared expert ff %d\n",
			h.AttnInterval, h.Heads, h.HeadsKV, h.HeadDim, h.KHeads, h.VHeads, h.VDim, h.SharedFF)
	}
	fmt.Fprintf(w, "  experts file %.1f MB (slots of %d bytes), written in %.1f s to %s\n", float64(size)/1e6, rep.SlotBytes, rep.WriteSeconds, dir)
	fmt.Fprintf(w, "  weights per token: dense %.1f MB + experts %.1f MB\n", rep.DenseMBPerTok, rep.ExpertMBPerTok)
	fmt.Fprintf(w, "machine: %s, %d threads of %d CPUs, load average %s; %s mode\n", rep.Kernels, rep.Threads, rep.CPUs, rep.LoadAverage, rep.Mode)
	fmt.Fprintf(w, "  memory read bandwidth %.2f GB/s (streaming read of %d MiB, %d threads, best of %d)\n", rep.MemReadGBs, rep.MemMB, rep.Threads, rep.MemPasses)
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
		fmt.Fprintf(w, "  bounds: memory %.2f tokens/s (%.1f MB/token), compute %.2f tokens/s", d.MemLimit, d.BytesPerToken, d.ComputeLimit)
		if d.DiskLimit > 0 {
			fmt.Fprintf(w, ", disk %.2f tokens/s (%.2f MB read/token)", d.DiskLimit, d.Stream.ReadMBPerToken)
		}
		fmt.Fprintf(w, "\n  median step: %.0f%% of the memory bound, %.0f%% of the compute bound, %.0f%% of the tighter of memory and disk (%.2f tokens/s)\n",
			100*d.MemFraction, 100*d.ComputeFraction, 100*d.Fraction, d.Limit)
		fmt.Fprintf(w, "  hit rate %.3f, misses %.2f/token, read %.2f MB/token, read-ahead hits %.2f/token, waiting %.2f ms/token\n",
			d.Stream.HitRate, d.Stream.MissesPerToken, d.Stream.ReadMBPerToken, d.Stream.ReadAheadHitsPerToken, d.Stream.WaitMsPerToken)
	}
	return nil
}

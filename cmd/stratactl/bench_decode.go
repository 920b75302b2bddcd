package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
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
	memMB            int
	diskSlots        int
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
read per token). It prints each speed next to the limit those bandwidths give.`,
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
	cli.IntVar(fl, &f.readers, "readers", 4, 1, maxReaders, "slot reader goroutines")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS)")
	cli.IntVar(fl, &f.memMB, "mem-mb", 512, 1, 1<<16, "buffer for the memory bandwidth measurement, MiB")
	cli.IntVar(fl, &f.diskSlots, "disk-slots", 256, 1, 1<<20, "random slot reads for the disk bandwidth measurement")
	cli.Verbose(fl, env, "say where the synthetic pack is written before writing it")
	return cmd
}

func benchDecode(ctx context.Context, env *cli.Env, f *benchDecodeFlags) error {
	sp, err := f.shape.spec(f.changed)
	if err != nil {
		return err
	}
	rep, err := bench.Decode(ctx, bench.DecodeConfig{Spec: sp, Dir: f.dir, KeepFiles: f.keep, ArenaFrac: f.arenaFrac,
		Prompt: f.prompt, Tokens: f.tokens, Readers: f.readers, Threads: f.threads, MemMB: f.memMB, DiskSlots: f.diskSlots, Log: env.Logf})
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
	fmt.Fprintf(w, "machine: %s, %d threads of %d CPUs\n", rep.Kernels, rep.Threads, rep.CPUs)
	fmt.Fprintf(w, "  memory read bandwidth %.2f GB/s (%d MiB buffer, best of 3)\n", rep.MemReadGBs, f.memMB)
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
		fmt.Fprintf(w, "%s (arena %.0f MiB): decode %.2f tokens/s, prefill %.2f tokens/s\n", r.name, d.ArenaMB, d.DecodeTokensPerS, d.PrefillTokensPerS)
		fmt.Fprintf(w, "  limit %.2f tokens/s (memory %.2f", d.Limit, d.MemLimit)
		if d.DiskLimit > 0 {
			fmt.Fprintf(w, ", disk %.2f", d.DiskLimit)
		}
		fmt.Fprintf(w, "): %.0f%% of it\n", 100*d.Fraction)
		fmt.Fprintf(w, "  hit rate %.3f, misses %.2f/token, read %.2f MB/token, read-ahead hits %.2f/token, waiting %.2f ms/token\n",
			d.Stream.HitRate, d.Stream.MissesPerToken, d.Stream.ReadMBPerToken, d.Stream.ReadAheadHitsPerToken, d.Stream.WaitMsPerToken)
	}
	return nil
}

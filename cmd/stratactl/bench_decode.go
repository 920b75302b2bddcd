package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

func init() { registerBench(newBenchDecodeCmd) }

type benchDecodeFlags struct {
	dir                        string
	keep                       bool
	layers, embd, heads, kv    int
	headDim, experts, used, ff int
	vocab                      int
	denseType, expertType      string
	arenaFrac                  float64
	prompt, tokens             int
	readers, threads           int
	memMB                      int
	diskSlots                  int
	seed                       uint64
}

func newBenchDecodeCmd(env *cli.Env) *cobra.Command {
	var f benchDecodeFlags
	cmd := &cobra.Command{
		Use:   "decode",
		Short: "Decode speed of a synthetic pack against the memory and disk bandwidth measured in the same run",
		Long: `bench decode writes a synthetic qwen3moe pack (random weights of the given
shapes and types) to --dir, measures this machine's memory read bandwidth and the
pack's random slot-read bandwidth (O_DIRECT where allowed), then decodes twice:
with every expert resident (bound by memory bandwidth: weight bytes per token)
and with an arena of --arena-frac of the experts (bound also by the disk: bytes
read per token). It prints each speed next to the limit those bandwidths give.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return benchDecode(cmd.Context(), env, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "where to make the synthetic pack's own new folder (default: the temp dir); it is removed after unless --keep-files")
	fl.BoolVar(&f.keep, "keep-files", false, "keep the synthetic pack")
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
	cli.IntVar(fl, &f.memMB, "mem-mb", 512, 1, 1<<16, "buffer for the memory bandwidth measurement, MiB")
	cli.IntVar(fl, &f.diskSlots, "disk-slots", 256, 1, 1<<20, "random slot reads for the disk bandwidth measurement")
	cli.Verbose(fl, env, "say where the synthetic pack is written before writing it")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the weights and prompt")
	return cmd
}

type decodeRun struct {
	ArenaMB           float64              `json:"arena_mb"`
	PrefillTokensPerS float64              `json:"prefill_tokens_per_s"`
	DecodeTokensPerS  float64              `json:"decode_tokens_per_s"`
	DecodeSteps       int                  `json:"decode_steps"`
	BytesPerToken     float64              `json:"weight_mb_per_token"`
	MemLimit          float64              `json:"memory_limit_tokens_per_s"`
	DiskLimit         float64              `json:"disk_limit_tokens_per_s,omitempty"`
	Limit             float64              `json:"limit_tokens_per_s"`
	Fraction          float64              `json:"fraction_of_limit"`
	Stream            *engine.StreamReport `json:"stream"`
}

type benchDecodeReport struct {
	Kernels        string           `json:"kernels"`
	Threads        int              `json:"threads"`
	CPUs           int              `json:"cpus"`
	Spec           engine.SynthSpec `json:"spec"`
	Dir            string           `json:"dir"`
	ExpertsBytes   int64            `json:"experts_bytes"`
	SlotBytes      int64            `json:"slot_bytes"`
	PayloadBytes   int64            `json:"payload_bytes"`
	WriteSeconds   float64          `json:"write_seconds"`
	DenseMBPerTok  float64          `json:"dense_mb_per_token"`
	ExpertMBPerTok float64          `json:"expert_mb_per_token"`
	MemReadGBs     float64          `json:"memory_read_gb_s"`
	DiskReadMBs    float64          `json:"disk_read_mb_s"`
	DiskDirect     bool             `json:"disk_direct"`
	DiskNote       string           `json:"disk_note,omitempty"`
	Resident       decodeRun        `json:"resident"`
	Streaming      decodeRun        `json:"streaming"`
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
	size, err := sp.SynthBytes()
	if err != nil {
		return err
	}
	// The pack goes into a new folder of its own (inside --dir when given),
	// so that removing it afterwards can never remove a user's files.
	if f.dir != "" {
		if _, err := os.Stat(f.dir); os.IsNotExist(err) {
			if err := os.MkdirAll(f.dir, 0o755); err != nil {
				return err
			}
			if !f.keep {
				defer os.Remove(f.dir) // made here, so removed here
			}
		}
	}
	dir, err := os.MkdirTemp(f.dir, "stratactl-bench-decode-")
	if err != nil {
		return err
	}
	if !f.keep {
		defer os.RemoveAll(dir)
	}
	rep := benchDecodeReport{Kernels: kernels.Describe(), CPUs: runtime.NumCPU(), Spec: sp, Dir: dir, ExpertsBytes: size}
	env.Logf("writing a synthetic pack of %.1f MB to %s", float64(size)/1e6, dir)
	t0 := time.Now()
	if err := engine.WriteSyntheticPack(dir, sp); err != nil {
		return err
	}
	rep.WriteSeconds = time.Since(t0).Seconds()

	pool := kernels.NewPool(f.threads)
	rep.Threads = pool.Threads
	rep.MemReadGBs = memoryReadBandwidth(pool, f.memMB) / 1e9

	rng := rand.New(rand.NewPCG(f.seed, 2))
	prompt := make([]int32, f.prompt)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(f.vocab))
	}
	decode := func(arenaMB float64, measureDisk bool) (decodeRun, error) {
		m, err := engine.Open(dir, engine.Options{Threads: f.threads, Stream: engine.StreamOptions{ArenaMB: arenaMB, Readers: f.readers}})
		if err != nil {
			return decodeRun{}, err
		}
		defer m.Close()
		ps := m.Stream()
		rep.SlotBytes, rep.PayloadBytes = ps.SlotBytes(), ps.PayloadBytes()
		dense := float64(m.DenseBytesPerToken())
		experts := float64(f.layers * f.used * int(ps.PayloadBytes()))
		rep.DenseMBPerTok, rep.ExpertMBPerTok = dense/1e6, experts/1e6
		if measureDisk {
			bw, err := ps.MeasureReads(f.diskSlots, f.readers, f.seed)
			if err != nil {
				return decodeRun{}, err
			}
			rep.DiskReadMBs = bw / 1e6
			rep.DiskDirect, rep.DiskNote = ps.Direct()
		}
		s := m.NewSession()
		var before engine.StreamCounters
		res, err := s.Generate(ctx, prompt, engine.GenerateOptions{
			MaxTokens: f.tokens,
			// Sampled, not greedy: greedy decoding of random weights
			// tends to repeat one token, which would route every step
			// alike and flatter the cache.
			Sampler:      engine.NewSampler(1, 1, f.seed),
			AfterPrefill: func() { before = ps.Counters() },
		})
		if err != nil {
			return decodeRun{}, err
		}
		st := ps.Report(before, ps.Counters(), res.DecodeSteps)
		r := decodeRun{
			ArenaMB:           st.ArenaMB,
			PrefillTokensPerS: res.PrefillTokensPerSecond(),
			DecodeTokensPerS:  res.DecodeTokensPerSecond(),
			DecodeSteps:       res.DecodeSteps,
			BytesPerToken:     (dense + experts) / 1e6,
			Stream:            st,
		}
		r.MemLimit = rep.MemReadGBs * 1e9 / (dense + experts)
		r.Limit = r.MemLimit
		if measureDisk && st.ReadMBPerToken > 0 {
			r.DiskLimit = rep.DiskReadMBs / (st.ReadMBPerToken * (1 << 20) / 1e6)
			// Reads and compute can overlap at best, so the tighter of
			// the two bounds is the limit.
			r.Limit = min(r.MemLimit, r.DiskLimit)
		}
		if r.Limit > 0 {
			r.Fraction = r.DecodeTokensPerS / r.Limit
		}
		return r, nil
	}
	if rep.Resident, err = decode(0, false); err != nil {
		return err
	}
	arena := f.arenaFrac * float64(f.layers*f.experts) * float64(rep.SlotBytes) / (1 << 20)
	if rep.Streaming, err = decode(arena, true); err != nil {
		return err
	}
	if env.JSON {
		return env.PrintJSON(rep)
	}
	w := env.Out
	fmt.Fprintf(w, "synthetic pack: %d layers, embd %d, %d experts (%d used) of ff %d, %s experts, %s dense, vocab %d\n",
		f.layers, f.embd, f.experts, f.used, f.ff, et, dt, f.vocab)
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
		d    decodeRun
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

// memoryReadBandwidth streams a buffer of mb MiB through the dot kernel on
// every thread (each thread its own contiguous part, against a vector that
// stays in cache) and returns the best of three passes in bytes per second.
func memoryReadBandwidth(pool *kernels.Pool, mb int) float64 {
	const chunk = 1 << 14
	n := mb << 20 / 4 / chunk * chunk
	buf := make([]float32, n)
	for i := range buf {
		buf[i] = 1
	}
	x := make([]float32, chunk)
	for i := range x {
		x[i] = 1
	}
	best := 0.0
	sums := make([]float32, n/chunk)
	for pass := 0; pass < 3; pass++ {
		t0 := time.Now()
		pool.Parallel(n/chunk, 1<<20, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				sums[c] = kernels.DotF32(buf[c*chunk:(c+1)*chunk], x)
			}
		})
		if bw := float64(4*n) / time.Since(t0).Seconds(); bw > best {
			best = bw
		}
	}
	return best
}

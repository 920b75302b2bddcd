package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/kernels"
)

// DecodeConfig is what bench decode measures: a synthetic pack of Spec,
// written into a new folder inside Dir (the system's temp folder when
// empty) and removed after unless KeepFiles, decoded with every expert
// resident and with an arena of ArenaFrac of the experts.
type DecodeConfig struct {
	Spec      engine.SynthSpec
	Dir       string
	KeepFiles bool
	ArenaFrac float64
	Prompt    int // prompt tokens (random ids from Spec.Seed)
	Tokens    int // tokens decoded per run
	Readers   int // slot reader goroutines
	Threads   int // matmul threads (0: GOMAXPROCS)
	MemMB     int // buffer of the memory bandwidth measurement, MiB
	DiskSlots int // random slot reads of the disk bandwidth measurement
	Log       func(format string, args ...any)
}

type DecodeRun struct {
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

type DecodeReport struct {
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
	Resident       DecodeRun        `json:"resident"`
	Streaming      DecodeRun        `json:"streaming"`
}

// Decode writes the synthetic pack, measures this machine's memory read
// bandwidth and the pack's random slot-read bandwidth, and decodes it twice
// (resident and streaming), each speed beside the limit those bandwidths
// give.
func Decode(ctx context.Context, cfg DecodeConfig) (*DecodeReport, error) {
	pack, err := writeSynthPack(cfg.Spec, cfg.Dir, cfg.KeepFiles, "decode", cfg.Log)
	if err != nil {
		return nil, err
	}
	defer pack.remove()
	sp, dir := pack.spec, pack.dir
	rep := DecodeReport{Kernels: kernels.Describe(), CPUs: runtime.NumCPU(), Spec: sp, Dir: dir, ExpertsBytes: pack.size, WriteSeconds: pack.seconds}

	pool := kernels.NewPool(cfg.Threads)
	rep.Threads = pool.Threads
	rep.MemReadGBs = MemoryReadBandwidth(pool, cfg.MemMB) / 1e9

	rng := rand.New(rand.NewPCG(sp.Seed, 2))
	prompt := make([]int32, cfg.Prompt)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(sp.Vocab))
	}
	decode := func(arenaMB float64, measureDisk bool) (DecodeRun, error) {
		m, err := engine.Open(dir, engine.Options{Threads: cfg.Threads, Stream: engine.StreamOptions{ArenaMB: arenaMB, Readers: cfg.Readers}})
		if err != nil {
			return DecodeRun{}, err
		}
		defer func() {
			m.Close()
			// Give the arena back before the next run makes its own: the
			// collector would otherwise let the heap reach twice the first
			// arena before collecting it (the field shape's 12 GB arenas
			// were killed for memory that way on a 24 GB machine).
			debug.FreeOSMemory()
		}()
		ps := m.Stream()
		rep.SlotBytes, rep.PayloadBytes = ps.SlotBytes(), ps.PayloadBytes()
		dense := float64(m.DenseBytesPerToken())
		experts := float64(sp.Layers * sp.ExpertsUsed * int(ps.PayloadBytes()))
		rep.DenseMBPerTok, rep.ExpertMBPerTok = dense/1e6, experts/1e6
		if measureDisk {
			bw, err := ps.MeasureReads(cfg.DiskSlots, cfg.Readers, sp.Seed)
			if err != nil {
				return DecodeRun{}, err
			}
			rep.DiskReadMBs = bw / 1e6
			rep.DiskDirect, rep.DiskNote = ps.Direct()
		}
		s := m.NewSession()
		var before engine.StreamCounters
		res, err := s.Generate(ctx, prompt, engine.GenerateOptions{
			MaxTokens: cfg.Tokens,
			// Sampled, not greedy: greedy decoding of random weights
			// tends to repeat one token, which would route every step
			// alike and flatter the cache.
			Sampler:      engine.NewSampler(1, 1, sp.Seed),
			AfterPrefill: func() { before = ps.Counters() },
		})
		if err != nil {
			return DecodeRun{}, err
		}
		st := ps.Report(before, ps.Counters(), res.DecodeSteps)
		r := DecodeRun{
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
		return nil, err
	}
	arena := cfg.ArenaFrac * float64(sp.Layers*sp.Experts) * float64(rep.SlotBytes) / (1 << 20)
	if rep.Streaming, err = decode(arena, true); err != nil {
		return nil, err
	}
	return &rep, nil
}

// MemoryReadBandwidth streams a buffer of mb MiB through the dot kernel on
// every thread (each thread its own contiguous part, against a vector that
// stays in cache) and returns the best of three passes in bytes per second.
func MemoryReadBandwidth(pool *kernels.Pool, mb int) float64 {
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

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/osutil"
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
	// NoAIO reads slots with reader goroutines (StreamOptions.NoAIO).
	NoAIO bool
	// ReadCost decodes every expert resident a second time while a
	// background read loads the disk at the streaming run's rate
	// (ResidentUnderReads): what the reads alone cost the compute.
	ReadCost  bool
	Prompt    int // prompt tokens (random ids from Spec.Seed)
	Tokens    int // tokens decoded per run
	Readers   int // slot reader goroutines
	Threads   int // matmul threads (0: GOMAXPROCS)
	Mode      engine.Mode
	MemMB     int // buffer of the memory bandwidth measurement, MiB
	MemPasses int // passes over it (the best counts; 0: 5)
	DiskSlots int // random slot reads of the disk bandwidth measurement
	// ResidentCapMB bounds the resident run's arena; 0: the engine's
	// default arena, every expert up to engine.DefaultArenaCap (half the
	// machine's RAM).
	ResidentCapMB float64
	Log           func(format string, args ...any)
}

type DecodeRun struct {
	ArenaMB           float64 `json:"arena_mb"`
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s"`
	// DecodeTokensPerS is decode steps over their total wall time;
	// MedianTokensPerS and BestTokensPerS one over the median and the
	// fastest step (steadier on a shared machine); CPUTokensPerS steps
	// per second of the process's CPU time (every thread's, readers too).
	DecodeTokensPerS float64 `json:"decode_tokens_per_s"`
	MedianTokensPerS float64 `json:"median_step_tokens_per_s"`
	BestTokensPerS   float64 `json:"best_step_tokens_per_s"`
	CPUTokensPerS    float64 `json:"cpu_tokens_per_s,omitempty"`
	DecodeSteps      int     `json:"decode_steps"`
	// BytesPerToken is the weight bytes a step reads from memory (MB);
	// MemBytesPerToken those and, in a run that reads slots, the slot
	// bytes the read checks (CRC-32C, a pass over each slot read from
	// disk; the pieces of reads dropped unread, StreamReport's
	// DroppedMBPerToken, left out): the bytes the memory bound divides.
	BytesPerToken    float64 `json:"weight_mb_per_token"`
	MemBytesPerToken float64 `json:"memory_mb_per_token"`
	// MemReadGBs is the best streaming-read pass just before and after
	// this run; the bounds take the best pass of the whole report
	// (DecodeReport.MemReadGBs), one bandwidth for both runs, so that
	// their fractions compare (a run whose own passes met other load got
	// a lower bound, and a fraction that flattered it).
	MemReadGBs float64 `json:"memory_read_gb_s"`
	// MemReadGBsPerCPU is the same passes' best in bytes per CPU-second
	// of the reading threads, and CPUMemFraction the decode's weight
	// bytes per CPU-second of the process (CPUTokensPerS times the bytes
	// per token) over it: the memory bound's fraction in CPU time, which
	// waiting for a core on a shared machine changes far less than wall
	// time (it does not show the second thread's use: that is the wall
	// figures').
	MemReadGBsPerCPU float64              `json:"memory_read_gb_per_cpu_s,omitempty"`
	CPUMemFraction   float64              `json:"cpu_fraction_of_memory_limit,omitempty"`
	MemLimit         float64              `json:"memory_limit_tokens_per_s"`
	DiskLimit        float64              `json:"disk_limit_tokens_per_s,omitempty"`
	ComputeLimit     float64              `json:"compute_limit_tokens_per_s"`
	Limit            float64              `json:"limit_tokens_per_s"`
	Fraction         float64              `json:"fraction_of_limit"`
	MemFraction      float64              `json:"fraction_of_memory_limit"`
	BestMemFraction  float64              `json:"best_step_fraction_of_memory_limit"`
	ComputeFraction  float64              `json:"fraction_of_compute_limit"`
	Stream           *engine.StreamReport `json:"stream"`
	// Phases are the decode steps' mean time by phase (engine.StepTimes,
	// the same run timed), in the engine's order.
	Phases []StepPhase `json:"step_phases"`
}

// StepPhase is one phase of the decode steps, means per step: its time,
// the weight bytes its products read and their rate over its time, its
// pool passes and the caller's time in them waiting for the workers.
type StepPhase struct {
	Name     string  `json:"name"`
	Products bool    `json:"products"`
	Ms       float64 `json:"ms_per_step"`
	MB       float64 `json:"weight_mb_per_step,omitempty"`
	GBs      float64 `json:"gb_per_s,omitempty"`
	Passes   float64 `json:"pool_passes_per_step"`
	WaitMs   float64 `json:"pool_wait_ms_per_step"`
}

// stepPhases are st's phases as means per step.
func stepPhases(st *engine.StepTimes) []StepPhase {
	if st.Steps == 0 {
		return nil
	}
	n := float64(st.Steps)
	var out []StepPhase
	for p := engine.Phase(0); p < engine.NumPhases; p++ {
		ph := StepPhase{Name: p.String(), Products: p.Products(), Ms: float64(st.Nanos[p]) / 1e6 / n,
			MB: float64(st.Bytes[p]) / 1e6 / n, Passes: float64(st.Passes[p]) / n, WaitMs: float64(st.WaitNanos[p]) / 1e6 / n}
		if st.Nanos[p] > 0 && st.Bytes[p] > 0 {
			ph.GBs = float64(st.Bytes[p]) / float64(st.Nanos[p])
		}
		out = append(out, ph)
	}
	return out
}

// KernelRate is the in-cache rate of one kind of product a decode step
// runs: the matrix-vector kernel of Type at Cols columns, in the run's
// mode, on one thread over SampleKB of weights resident in L2.
type KernelRate struct {
	Type            string  `json:"type"`
	Cols            int     `json:"cols"`
	Quantized       bool    `json:"quantized"` // DotQ8 against Q8_0 activations, else float32 activations
	WeightsPerToken int64   `json:"weights_per_token"`
	BytesPerToken   int64   `json:"bytes_per_token"`
	SampleKB        float64 `json:"sample_kb"`
	GWeightsPerS    float64 `json:"g_weights_per_s_per_thread"`
	GBPerS          float64 `json:"gb_per_s_per_thread"`
}

type DecodeReport struct {
	Kernels        string           `json:"kernels"`
	Mode           string           `json:"mode"`
	Threads        int              `json:"threads"`
	CPUs           int              `json:"cpus"`
	LoadAverage    string           `json:"load_average,omitempty"`
	Spec           engine.SynthSpec `json:"spec"`
	Dir            string           `json:"dir"`
	ExpertsBytes   int64            `json:"experts_bytes"`
	SlotBytes      int64            `json:"slot_bytes"`
	PayloadBytes   int64            `json:"payload_bytes"`
	WriteSeconds   float64          `json:"write_seconds"`
	DenseMBPerTok  float64          `json:"dense_mb_per_token"`
	ExpertMBPerTok float64          `json:"expert_mb_per_token"`
	// MemReadGBs is the best pass of a plain streaming read (XORRead) over
	// MemMB on every thread: passes before the first run and just before
	// and after each decode (each run's own best is its MemReadGBs), so a
	// moment of other load (the pack's writeback, other processes) does
	// not set the bound.
	MemReadGBs float64 `json:"memory_read_gb_s"`
	// MemReadGBsPerCPU: the best of the same passes in bytes per
	// CPU-second of the reading threads.
	MemReadGBsPerCPU float64 `json:"memory_read_gb_per_cpu_s,omitempty"`
	MemMB            int     `json:"memory_buffer_mib"`
	MemPasses        int     `json:"memory_passes"`
	DiskReadMBs      float64 `json:"disk_read_mb_s"`
	DiskDirect       bool    `json:"disk_direct"`
	DiskNote         string  `json:"disk_note,omitempty"`
	// Kernels' in-cache rates, and the compute bound they give: a decode
	// step's weights of each kind over its rate times the threads.
	L2KB         int          `json:"l2_kb"`
	KernelRates  []KernelRate `json:"kernel_rates"`
	ComputeLimit float64      `json:"compute_limit_tokens_per_s"`
	Resident     DecodeRun    `json:"resident"`
	Streaming    DecodeRun    `json:"streaming"`
	// ResidentUnderReads is the resident run again, under a background
	// read of random slots (engine.PackStore.ReadLoad) at the streaming
	// run's rate of slot bytes read (BackgroundReadMBs, as it ran):
	// streaming's reads without their waits, the products' slowdown
	// they cause on this machine (DecodeConfig.ReadCost).
	ResidentUnderReads *DecodeRun `json:"resident_under_reads,omitempty"`
	BackgroundReadMBs  float64    `json:"background_read_mb_s,omitempty"`
	// StreamingOfResident is the streaming run's median step rate over
	// the resident run's, and StreamingOfResidentCPU the same of their
	// steps per CPU-second (what streaming's reads cost, waits aside).
	StreamingOfResident    float64 `json:"streaming_of_resident_median"`
	StreamingOfResidentCPU float64 `json:"streaming_of_resident_cpu,omitempty"`
	// ResidentCapMB is the bound on the resident run's arena (--resident-cap-mb,
	// or half the machine's RAM; 0: none known) and ResidentCapped whether
	// it applied: the experts did not all fit, so that run streamed the
	// rest (its arena_slots below total_slots).
	ResidentCapMB  float64 `json:"resident_cap_mb"`
	ResidentCapped bool    `json:"resident_capped"`
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
	rep := DecodeReport{Kernels: kernels.Describe(), Mode: cfg.Mode.String(), CPUs: runtime.NumCPU(), LoadAverage: LoadAverage(),
		Spec: sp, Dir: dir, ExpertsBytes: pack.size, WriteSeconds: pack.seconds, MemMB: cfg.MemMB, MemPasses: cfg.MemPasses}
	if rep.MemPasses <= 0 {
		rep.MemPasses = 5
	}

	pool := kernels.NewPool(cfg.Threads)
	rep.Threads = pool.Threads
	memRead := func() (MemRead, error) {
		bw, err := MemoryReadBandwidth(pool.Threads, cfg.MemMB, rep.MemPasses)
		rep.MemReadGBs = max(rep.MemReadGBs, bw.BytesPerS/1e9)
		rep.MemReadGBsPerCPU = max(rep.MemReadGBsPerCPU, bw.BytesPerCPUS/1e9)
		return bw, err
	}
	if _, err := memRead(); err != nil {
		return nil, err
	}

	rng := rand.New(rand.NewPCG(sp.Seed, 2))
	prompt := make([]int32, cfg.Prompt)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(sp.Vocab))
	}
	decode := func(arenaMB float64, measureDisk bool, loadBps float64) (DecodeRun, error) {
		m, err := engine.Open(dir, engine.Options{Threads: cfg.Threads, Mode: cfg.Mode, Stream: engine.StreamOptions{ArenaMB: arenaMB, Readers: cfg.Readers, NoAIO: cfg.NoAIO}})
		if err != nil {
			return DecodeRun{}, err
		}
		defer func() {
			// Close unmaps the arena (it is outside the Go heap); the
			// run's garbage goes back too before the next run starts.
			m.Close()
			debug.FreeOSMemory()
		}()
		ps := m.Stream()
		rep.SlotBytes, rep.PayloadBytes = ps.SlotBytes(), ps.PayloadBytes()
		dense := float64(m.DenseBytesPerToken())
		experts := float64(sp.Layers * sp.ExpertsUsed * int(ps.PayloadBytes()))
		rep.DenseMBPerTok, rep.ExpertMBPerTok = dense/1e6, experts/1e6
		if rep.KernelRates == nil {
			if err := measureKernels(ctx, m, sp, &rep); err != nil {
				return DecodeRun{}, err
			}
		}
		if measureDisk {
			bw, err := ps.MeasureReads(cfg.DiskSlots, cfg.Readers, sp.Seed)
			if err != nil {
				return DecodeRun{}, err
			}
			rep.DiskReadMBs = bw / 1e6
			rep.DiskDirect, rep.DiskNote = ps.Direct()
		}
		memBefore, err := memRead()
		if err != nil {
			return DecodeRun{}, err
		}
		s := m.NewSession()
		s.Timing = new(engine.StepTimes)
		var before engine.StreamCounters
		var cpu0 time.Duration
		var cpuOK bool
		var stamps []time.Time
		var stopLoad func() (int64, float64, error)
		defer func() {
			if stopLoad != nil {
				stopLoad()
			}
		}()
		res, err := s.Generate(ctx, prompt, engine.GenerateOptions{
			MaxTokens: cfg.Tokens,
			// Sampled, not greedy: greedy decoding of random weights
			// tends to repeat one token, which would route every step
			// alike and flatter the cache.
			Sampler: engine.NewSampler(1, 1, sp.Seed),
			AfterPrefill: func() {
				if loadBps > 0 {
					stopLoad = ps.ReadLoad(loadBps, sp.Seed)
				}
				before = ps.Counters()
				cpu0, cpuOK = ProcessCPU()
			},
			OnToken: func(int32) error {
				stamps = append(stamps, time.Now())
				return nil
			},
		})
		if err != nil {
			return DecodeRun{}, err
		}
		cpu1, cpuOK1 := ProcessCPU()
		if stopLoad != nil {
			n, sec, err := stopLoad()
			stopLoad = nil
			if err != nil {
				return DecodeRun{}, err
			}
			rep.BackgroundReadMBs = float64(n) / sec / 1e6
		}
		st := ps.Report(before, ps.Counters(), res.DecodeSteps)
		memAfter, err := memRead()
		if err != nil {
			return DecodeRun{}, err
		}
		r := DecodeRun{
			ArenaMB:           st.ArenaMB,
			PrefillTokensPerS: res.PrefillTokensPerSecond(),
			DecodeTokensPerS:  res.DecodeTokensPerSecond(),
			DecodeSteps:       res.DecodeSteps,
			BytesPerToken:     (dense + experts) / 1e6,
			ComputeLimit:      rep.ComputeLimit,
			MemReadGBs:        max(memBefore.BytesPerS, memAfter.BytesPerS) / 1e9,
			MemReadGBsPerCPU:  max(memBefore.BytesPerCPUS, memAfter.BytesPerCPUS) / 1e9,
			Stream:            st,
			Phases:            stepPhases(s.Timing),
		}
		// Step i is the time from token i-1 to token i (token 0 comes
		// from the prompt's logits).
		var steps []float64
		for i := 1; i < len(stamps); i++ {
			steps = append(steps, stamps[i].Sub(stamps[i-1]).Seconds())
		}
		if len(steps) > 0 {
			slices.Sort(steps)
			r.MedianTokensPerS = 1 / steps[len(steps)/2]
			r.BestTokensPerS = 1 / steps[0]
		}
		if cpuOK && cpuOK1 && cpu1 > cpu0 && res.DecodeSteps > 0 {
			r.CPUTokensPerS = float64(res.DecodeSteps) / (cpu1 - cpu0).Seconds()
		}
		if read := st.LandedMBPerToken(); measureDisk && read > 0 {
			r.DiskLimit = rep.DiskReadMBs / (read * (1 << 20) / 1e6)
		}
		return r, nil
	}
	rep.ResidentCapMB = cfg.ResidentCapMB
	if rep.ResidentCapMB == 0 {
		rep.ResidentCapMB = float64(engine.DefaultArenaCap()) / (1 << 20)
	}
	if rep.Resident, err = decode(cfg.ResidentCapMB, false, 0); err != nil {
		return nil, err
	}
	rep.ResidentCapped = rep.Resident.Stream.ArenaSlots < rep.Resident.Stream.TotalSlots
	arena := cfg.ArenaFrac * float64(sp.Layers*sp.Experts) * float64(rep.SlotBytes) / (1 << 20)
	if rep.Streaming, err = decode(arena, true, 0); err != nil {
		return nil, err
	}
	if rate := rep.Streaming.Stream.LandedMBPerToken() * (1 << 20) * rep.Streaming.DecodeTokensPerS; cfg.ReadCost && rate > 0 {
		r, err := decode(cfg.ResidentCapMB, false, rate)
		if err != nil {
			return nil, err
		}
		r.bound(&rep)
		rep.ResidentUnderReads = &r
	}
	rep.Resident.bound(&rep)
	rep.Streaming.bound(&rep)
	if rep.Resident.MedianTokensPerS > 0 {
		rep.StreamingOfResident = rep.Streaming.MedianTokensPerS / rep.Resident.MedianTokensPerS
	}
	if rep.Resident.CPUTokensPerS > 0 {
		rep.StreamingOfResidentCPU = rep.Streaming.CPUTokensPerS / rep.Resident.CPUTokensPerS
	}
	return &rep, nil
}

// bound sets the run's limits and fractions from the report's bandwidths,
// the best passes of the whole report: the memory bound is the bytes a
// step reads from memory (weights, and the slots its reads check) over
// the streaming read's best rate; for a run that reads slots, the disk
// bound is its bytes read per token (those of the reads started, less the
// pieces dropped unread) over the random slot-read rate; reads
// and compute overlap at best, so the tighter of the two is the limit.
func (r *DecodeRun) bound(rep *DecodeReport) {
	r.MemBytesPerToken = r.BytesPerToken
	if r.Stream != nil {
		r.MemBytesPerToken += r.Stream.LandedMBPerToken() * (1 << 20) / 1e6
	}
	mem := r.MemBytesPerToken * 1e6
	if mem > 0 {
		r.MemLimit = rep.MemReadGBs * 1e9 / mem
		if rep.MemReadGBsPerCPU > 0 && r.CPUTokensPerS > 0 {
			r.CPUMemFraction = r.CPUTokensPerS * mem / (rep.MemReadGBsPerCPU * 1e9)
		}
	}
	r.Limit = r.MemLimit
	if r.DiskLimit > 0 {
		r.Limit = min(r.MemLimit, r.DiskLimit)
	}
	// The fractions are of the median step's rate.
	if r.Limit > 0 {
		r.Fraction = r.MedianTokensPerS / r.Limit
	}
	if r.MemLimit > 0 {
		r.MemFraction = r.MedianTokensPerS / r.MemLimit
		// Best against best: the fastest step beside the best
		// streaming-read pass, the least disturbed moments of both.
		r.BestMemFraction = r.BestTokensPerS / r.MemLimit
	}
	if r.ComputeLimit > 0 {
		r.ComputeFraction = r.MedianTokensPerS / r.ComputeLimit
	}
}

// MemRead is a memory read bandwidth: bytes per second of wall time, and
// per CPU-second of the reading threads (0 where the thread CPU clock is
// missing).
type MemRead struct{ BytesPerS, BytesPerCPUS float64 }

// MemoryReadBandwidth streams a buffer of mb MiB through a plain load-only
// loop (kernels.XORRead) on threads goroutines at once, each its own
// contiguous part on its own locked OS thread, and returns the best of
// passes passes, in wall time and in the reading threads' CPU time. The buffer is an anonymous mapping on huge pages where the kernel
// gives them (osutil.MapAnon, as the expert arena), unmapped before it
// returns: on this machine the loop reads 3-8% faster from huge pages than
// from the Go heap's 4 KiB pages, and software prefetch only slows it
// (docs/BENCHMARKS.md), so this is the best plain streaming rate found.
func MemoryReadBandwidth(threads, mb, passes int) (MemRead, error) {
	const chunk = 1 << 20
	n := max(mb<<20/chunk, 1)
	buf, unmap, err := osutil.MapAnon(n*chunk, 64)
	if err != nil {
		return MemRead{}, fmt.Errorf("memory bandwidth buffer: %w", err)
	}
	defer unmap()
	for i := range buf {
		buf[i] = byte(i*131 + i>>12)
	}
	sums := make([]uint64, max(threads, 1))
	cpus := make([]time.Duration, len(sums))
	cpuOK := make([]bool, len(sums))
	var best MemRead
	for pass := 0; pass < max(passes, 1); pass++ {
		// One goroutine per thread, all at once (not the pool's ranges,
		// which a busy worker may leave to another).
		var wg sync.WaitGroup
		t0 := time.Now()
		for th := range sums {
			a, b := th*n/len(sums), (th+1)*n/len(sums)
			wg.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0, ok0 := ThreadCPU()
				sums[th] ^= kernels.XORRead(buf[a*chunk : b*chunk])
				c1, ok1 := ThreadCPU()
				cpus[th], cpuOK[th] = c1-c0, ok0 && ok1 && c1 > c0
			})
		}
		wg.Wait()
		best.BytesPerS = max(best.BytesPerS, float64(len(buf))/time.Since(t0).Seconds())
		var cpu time.Duration
		for th := range cpus {
			if !cpuOK[th] {
				cpu = 0
				break
			}
			cpu += cpus[th]
		}
		if cpu > 0 {
			best.BytesPerCPUS = max(best.BytesPerCPUS, float64(len(buf))/cpu.Seconds())
		}
	}
	runtime.KeepAlive(sums)
	return best, nil
}

// measureKernels times, on one thread, the kernel of each kind of product a
// decode step of m runs (type, columns, mode: engine.InCacheProduct with one
// input row) over as many rows as fit in half the L2 cache, and sets rep's
// rates and compute bound.
func measureKernels(ctx context.Context, m *engine.Model, sp engine.SynthSpec, rep *DecodeReport) error {
	type use struct {
		m       *kernels.Matrix
		weights int64
		bytes   int64
	}
	var order []string
	uses := map[string]*use{}
	add := func(mm *kernels.Matrix, times int64) {
		if mm.Rows == 0 || len(mm.Data) == 0 {
			return
		}
		key := fmt.Sprintf("%s/%d", mm.Type, mm.Cols)
		u := uses[key]
		if u == nil {
			u = &use{m: mm}
			uses[key] = u
			order = append(order, key)
		}
		u.weights += times * int64(mm.Rows) * int64(mm.Cols)
		u.bytes += times * int64(len(mm.Data))
	}
	for _, mm := range m.TokenMatrices() {
		add(mm, 1)
	}
	ex, err := m.Experts.Get(0, 0)
	if err != nil {
		return err
	}
	defer m.Experts.Release(0, 0)
	for _, mm := range []*kernels.Matrix{&ex.Gate, &ex.Up, &ex.Down} {
		add(mm, int64(sp.Layers*sp.ExpertsUsed))
	}
	l2 := cpuid.CPU.Cache.L2
	if l2 <= 0 {
		l2 = 512 << 10
	}
	rep.L2KB = l2 >> 10
	one := kernels.NewPool(1)
	secondsPerToken := 0.0
	for _, key := range order {
		u := uses[key]
		mm := *u.m
		mm.Rows = max(1, min(mm.Rows, l2/2/mm.RowBytes))
		mm.Data = mm.Data[:mm.Rows*mm.RowBytes]
		// The product as a decode step runs it (one input row, the
		// model's mode), on random weights of the same shape.
		mul, err := engine.InCacheProduct(m.Mode, mm.Type, mm.Cols, mm.Rows, 1, rep.Spec.Seed)
		if err != nil {
			return err
		}
		q8 := m.Mode == engine.Fast && mm.CanDotQ8()
		reps := max(1, (4<<20)/len(mm.Data))
		var calls Calls
		if err := OnLockedThread(func() (err error) {
			calls, err = TimeCalls(ctx, 0.3, func() error {
				for i := 0; i < reps; i++ {
					mul(one)
				}
				return nil
			})
			return err
		}); err != nil {
			return err
		}
		sec := calls.Best.Seconds() / float64(reps)
		w := float64(mm.Rows) * float64(mm.Cols)
		r := KernelRate{Type: mm.Type.String(), Cols: mm.Cols, Quantized: q8, WeightsPerToken: u.weights, BytesPerToken: u.bytes,
			SampleKB: float64(len(mm.Data)) / 1024, GWeightsPerS: w / sec / 1e9, GBPerS: float64(len(mm.Data)) / sec / 1e9}
		rep.KernelRates = append(rep.KernelRates, r)
		secondsPerToken += float64(u.weights) / (r.GWeightsPerS * 1e9)
	}
	if secondsPerToken > 0 {
		rep.ComputeLimit = float64(rep.Threads) / secondsPerToken
	}
	return nil
}

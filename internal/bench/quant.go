package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// Anchor is one of ggml's single-thread timings. These are documentation,
// not measurements of this run: they are copied from shared/QUANT-FORMATS.md
// §5 "Timing anchors" (ggml d99724f2, GCC 12.2 -O3, GGML_NATIVE=ON, 64 MiB of
// gaussian F32, median of 5 runs on one pinned core of a 2-vCPU Xeon,
// family 6 model 207). MB/s there is 10^6 bytes of F32 per second, i.e.
// 4 bytes per weight. "default" is ggml's normal build (ggml-base, which holds
// to_float and quantize, compiled without -march=native); "native" is ggml-base
// also built with -march=native.
type Anchor struct {
	Op         string // "dequantize" or "quantize"
	Type       quant.Type
	DefaultMBs float64
	NativeMBs  float64
}

var Anchors = []Anchor{
	{"dequantize", quant.Q2_0, 3304, 3609},
	{"dequantize", quant.IQ3_S, 920, 954},
	{"dequantize", quant.IQ4_NL, 3441, 5138},
	{"dequantize", quant.Q8_0, 8369, 6777},
	{"dequantize", quant.Q6_K, 3194, 3182},
	{"quantize", quant.Q2_0, 822, 819},
}

func AnchorFor(op string, t quant.Type) (Anchor, bool) {
	for _, a := range Anchors {
		if a.Op == op && a.Type == t {
			return a, true
		}
	}
	return Anchor{}, false
}

// CacheKiB is the output size of the in-cache measurement: well inside L2
// on current x86 cores, so it shows decoding cost rather than bandwidth.
const CacheKiB = 256

// DequantTypes is every type quant can decode, in the order printed.
var DequantTypes = []quant.Type{
	quant.Q8_0, quant.IQ4_NL, quant.IQ3_S, quant.Q2_0,
	quant.F32, quant.F16, quant.BF16, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ1_S, quant.IQ1_M,
	quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ3_XXS, quant.IQ4_XS, quant.MXFP4,
	quant.TQ1_0, quant.TQ2_0, quant.Q1_0,
}

// QuantRate is one measured operation.
type QuantRate struct {
	Op           string  `json:"op"` // dequantize | quantize
	Type         string  `json:"type"`
	Path         string  `json:"path"` // portable | avx2 | q2-ggml | q2-search
	Calls        int     `json:"calls"`
	MWeightsPerS float64 `json:"mweights_per_s"`      // big buffer, median call, wall clock
	BestMWPerS   float64 `json:"best_mweights_per_s"` // big buffer, fastest call
	// CPUMWPerS is weights per second of the thread's CPU time (big buffer,
	// median call): the per-core rate with time lost to other processes
	// on a shared machine left out. 0 where the clock is unavailable.
	CPUMWPerS float64 `json:"cpu_mweights_per_s"`
	// CacheMWPerS is the median rate over a small output (CacheKiB) that
	// stays in cache: the decoding cost without memory bandwidth.
	CacheMWPerS float64  `json:"cache_mweights_per_s"`
	MBPerS      float64  `json:"mb_per_s"` // F32 bytes (out for dequantize, in for quantize), 10^6/s
	OfWriteBW   float64  `json:"fraction_of_write_bandwidth"`
	GGMLMBPerS  *float64 `json:"ggml_reference_mb_per_s,omitempty"`
	GGMLNative  *float64 `json:"ggml_reference_native_mb_per_s,omitempty"`
	VsGGML      *float64 `json:"ratio_to_ggml_reference,omitempty"`
}

type QuantReport struct {
	CPU             string  `json:"cpu"`
	Paths           string  `json:"paths"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
	LoadAverage     string  `json:"load_average,omitempty"`
	BufferMiB       int     `json:"buffer_mib"`
	CacheKiB        int     `json:"cache_buffer_kib"`
	SecondsPerPoint float64 `json:"seconds_per_measurement"`
	// Bandwidths are per second of thread CPU time where the clock exists
	// (like the per-core rates they are compared with), else wall clock.
	WriteGBs      float64     `json:"memory_write_gb_per_s"`
	CopyGBs       float64     `json:"memory_copy_gb_per_s"` // bytes copied (read once + written once)
	ReadGBs       float64     `json:"memory_read_gb_per_s"`
	Rates         []QuantRate `json:"rates"`
	ReferenceNote string      `json:"reference_note"`
}

const AnchorNote = "ggml reference figures are copied from shared/QUANT-FORMATS.md section 5 (ggml d99724f2, one pinned core of a 2-vCPU Xeon family 6 model 207); they were not measured in this run"

// Quant measures, on this goroutine locked to its OS thread, the memory
// bandwidth and every dequantizer of types (portable and vector paths) over
// a buffer of mib MiB, and the Q2_0 quantizer when types holds Q2_0; each
// figure is the median of the calls made in seconds.
func Quant(ctx context.Context, seconds float64, mib int, types []quant.Type, progress ProgressFunc) (*QuantReport, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	weights := mib << 20 / 4
	cacheWeights := min(CacheKiB<<10/4, weights)
	dst := make([]float32, weights)
	rep := &QuantReport{
		CPU: kernels.Describe(), Paths: kernels.Describe(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		LoadAverage: LoadAverage(), BufferMiB: mib, CacheKiB: CacheKiB, SecondsPerPoint: seconds, ReferenceNote: AnchorNote,
	}

	// Memory bandwidth over the same buffer size: clear() and copy() are the
	// runtime's vectorized memclr/memmove; the read loop sums in 8 lanes so
	// it is limited by loads, not by one addition chain.
	bytes := float64(4 * weights)
	ct, err := TimeCalls(ctx, seconds, func() error { clear(dst); return nil })
	if err != nil {
		return nil, err
	}
	rep.WriteGBs = bytes / ct.PerCore().Seconds() / 1e9
	other := make([]float32, weights)
	ct, err = TimeCalls(ctx, seconds, func() error { copy(other, dst); return nil })
	if err != nil {
		return nil, err
	}
	rep.CopyGBs = bytes / ct.PerCore().Seconds() / 1e9
	var sink float32 // the sums are kept so the read loop is not optimized away
	ct, err = TimeCalls(ctx, seconds, func() error { sink += sumLanes(other); return nil })
	runtime.KeepAlive(sink)
	if err != nil {
		return nil, err
	}
	rep.ReadGBs = bytes / ct.PerCore().Seconds() / 1e9
	other = nil

	bar := progress(int64(2*len(types)+3), "bench quant")
	defer bar.Done()
	for _, t := range types {
		ti, _ := quant.Info(t)
		n := weights / ti.BlockElements * ti.BlockElements
		src, err := kernels.SampleBlocks(t, n/ti.BlockElements, uint64(t)+1)
		if err != nil {
			return nil, err
		}
		paths := []string{"portable"}
		if kernels.HasVectorDequantize(t) {
			paths = append(paths, "avx2")
		}
		for _, p := range paths {
			decode := quant.Dequantize
			if p != "portable" {
				decode = kernels.Dequantize
			}
			ct, err := TimeCalls(ctx, seconds, func() error { return decode(t, src, dst[:n]) })
			if err != nil {
				return nil, err
			}
			r := newRate("dequantize", t, p, n, ct, rep.WriteGBs)
			cn := max(cacheWeights/ti.BlockElements, 1) * ti.BlockElements
			cs := src[:cn/ti.BlockElements*ti.BlockBytes]
			cct, err := TimeCalls(ctx, seconds/4, func() error { return decode(t, cs, dst[:cn]) })
			if err != nil {
				return nil, err
			}
			r.CacheMWPerS = float64(cn) / cct.Wall.Seconds() / 1e6
			rep.Rates = append(rep.Rates, r)
			bar.Add(1)
		}
	}

	if quant.CanQuantize(quant.Q2_0) && slices.Contains(types, quant.Q2_0) {
		x := make([]float32, weights/64*64)
		rng := rand.New(rand.NewPCG(20260821, 1))
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 0.02)
		}
		q := make([]byte, len(x)/64*18)
		// The search is timed on the path the converter uses (kernels, vector
		// code where the CPU has it) and on the portable reference.
		searchPath := "q2-search portable"
		if kernels.HasVectorQ2Search() {
			searchPath = "q2-search avx2"
		}
		for _, m := range []struct {
			name     string
			mode     quant.Q2Mode
			quantize func(quant.Type, []float32, []byte, *quant.QuantizeOptions) error
		}{
			{"q2-ggml", quant.Q2GGML, kernels.Quantize},
			{searchPath, quant.Q2Search, kernels.Quantize},
			{"q2-search reference", quant.Q2Search, quant.Quantize},
		} {
			opt := &quant.QuantizeOptions{Q2Mode: m.mode}
			ct, err := TimeCalls(ctx, seconds, func() error { return m.quantize(quant.Q2_0, x, q, opt) })
			if err != nil {
				return nil, err
			}
			rep.Rates = append(rep.Rates, newRate("quantize", quant.Q2_0, m.name, len(x), ct, 0))
			bar.Add(1)
		}
	}
	return rep, nil
}

func newRate(op string, t quant.Type, path string, n int, ct Calls, writeGBs float64) QuantRate {
	r := QuantRate{Op: op, Type: t.String(), Path: path, Calls: ct.N}
	r.MWeightsPerS = float64(n) / ct.Wall.Seconds() / 1e6
	r.BestMWPerS = float64(n) / ct.Best.Seconds() / 1e6
	if ct.CPU > 0 {
		r.CPUMWPerS = float64(n) / ct.CPU.Seconds() / 1e6
	}
	r.MBPerS = 4 * r.MWeightsPerS
	if writeGBs > 0 {
		r.OfWriteBW = 4 * float64(n) / ct.PerCore().Seconds() / 1e9 / writeGBs
	}
	if a, ok := AnchorFor(op, t); ok {
		// ggml's figures come from an idle, pinned core, so they are compared
		// with the per-CPU-second rate where there is one.
		per := r.MWeightsPerS
		if r.CPUMWPerS > 0 {
			per = r.CPUMWPerS
		}
		def, nat := a.DefaultMBs, a.NativeMBs
		ratio := 4 * per / def
		r.GGMLMBPerS, r.GGMLNative, r.VsGGML = &def, &nat, &ratio
	}
	return r
}

// sumLanes reads every element once with eight independent sums.
func sumLanes(x []float32) float32 {
	var s [8]float32
	for len(x) >= 8 {
		s[0] += x[0]
		s[1] += x[1]
		s[2] += x[2]
		s[3] += x[3]
		s[4] += x[4]
		s[5] += x[5]
		s[6] += x[6]
		s[7] += x[7]
		x = x[8:]
	}
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]
}

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

func init() { registerBench(newBenchQuantCmd) }

// ggmlAnchor is one of ggml's single-thread timings. These are documentation,
// not measurements of this run: they are copied from shared/QUANT-FORMATS.md
// §5 "Timing anchors" (ggml d99724f2, GCC 12.2 -O3, GGML_NATIVE=ON, 64 MiB of
// gaussian F32, median of 5 runs on one pinned core of a 2-vCPU Xeon,
// family 6 model 207). MB/s there is 10^6 bytes of F32 per second, i.e.
// 4 bytes per weight. "default" is ggml's normal build (ggml-base, which holds
// to_float and quantize, compiled without -march=native); "native" is ggml-base
// also built with -march=native.
type ggmlAnchor struct {
	Op         string // "dequantize" or "quantize"
	Type       quant.Type
	DefaultMBs float64
	NativeMBs  float64
}

var ggmlAnchors = []ggmlAnchor{
	{"dequantize", quant.Q2_0, 3304, 3609},
	{"dequantize", quant.IQ3_S, 920, 954},
	{"dequantize", quant.IQ4_NL, 3441, 5138},
	{"dequantize", quant.Q8_0, 8369, 6777},
	{"dequantize", quant.Q6_K, 3194, 3182},
	{"quantize", quant.Q2_0, 822, 819},
}

func ggmlAnchorFor(op string, t quant.Type) (ggmlAnchor, bool) {
	for _, a := range ggmlAnchors {
		if a.Op == op && a.Type == t {
			return a, true
		}
	}
	return ggmlAnchor{}, false
}

// cacheKiB is the output size of the in-cache measurement: well inside L2
// on current x86 cores, so it shows decoding cost rather than bandwidth.
const cacheKiB = 256

// benchDequantTypes is every type quant can decode, in the order printed.
var benchDequantTypes = []quant.Type{
	quant.Q8_0, quant.IQ4_NL, quant.IQ3_S, quant.Q2_0,
	quant.F32, quant.F16, quant.BF16, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ1_S, quant.IQ1_M,
	quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ3_XXS, quant.IQ4_XS, quant.MXFP4,
	quant.TQ1_0, quant.TQ2_0, quant.Q1_0,
}

// quantRate is one measured operation.
type quantRate struct {
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

type quantBenchReport struct {
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
	Rates         []quantRate `json:"rates"`
	ReferenceNote string      `json:"reference_note"`
}

const anchorNote = "ggml reference figures are copied from shared/QUANT-FORMATS.md section 5 (ggml d99724f2, one pinned core of a 2-vCPU Xeon family 6 model 207); they were not measured in this run"

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
			types := benchDequantTypes
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
			rep, err := benchQuant(cmd.Context(), env, seconds, mib, types)
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

// callTimes summarizes the calls of one measurement.
type callTimes struct {
	wall, best time.Duration // median and fastest wall-clock call
	cpu        time.Duration // median thread CPU time per call (0 if unknown)
	calls      int
}

// perCore is the median CPU time per call, or the wall time without a CPU
// clock.
func (c callTimes) perCore() time.Duration {
	if c.cpu > 0 {
		return c.cpu
	}
	return c.wall
}

// timeCalls runs f once to warm up, then repeatedly for about `seconds`
// (at least 3 calls).
func timeCalls(ctx context.Context, seconds float64, f func() error) (callTimes, error) {
	if err := f(); err != nil {
		return callTimes{}, err
	}
	var walls, cpus []time.Duration
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for len(walls) < 3 || time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return callTimes{}, err
		}
		c0, cok := threadCPU()
		t0 := time.Now()
		if err := f(); err != nil {
			return callTimes{}, err
		}
		walls = append(walls, time.Since(t0))
		if c1, ok := threadCPU(); ok && cok && c1 > c0 {
			cpus = append(cpus, c1-c0)
		}
	}
	slices.Sort(walls)
	ct := callTimes{wall: walls[len(walls)/2], best: walls[0], calls: len(walls)}
	if len(cpus) == len(walls) {
		slices.Sort(cpus)
		ct.cpu = cpus[len(cpus)/2]
	}
	return ct, nil
}

var benchSink float32

func benchQuant(ctx context.Context, env *cli.Env, seconds float64, mib int, types []quant.Type) (*quantBenchReport, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	weights := mib << 20 / 4
	cacheWeights := min(cacheKiB<<10/4, weights)
	dst := make([]float32, weights)
	rep := &quantBenchReport{
		CPU: kernels.Describe(), Paths: kernels.Describe(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		LoadAverage: loadAverage(), BufferMiB: mib, CacheKiB: cacheKiB, SecondsPerPoint: seconds, ReferenceNote: anchorNote,
	}

	// Memory bandwidth over the same buffer size: clear() and copy() are the
	// runtime's vectorized memclr/memmove; the read loop sums in 8 lanes so
	// it is limited by loads, not by one addition chain.
	bytes := float64(4 * weights)
	ct, err := timeCalls(ctx, seconds, func() error { clear(dst); return nil })
	if err != nil {
		return nil, err
	}
	rep.WriteGBs = bytes / ct.perCore().Seconds() / 1e9
	other := make([]float32, weights)
	ct, err = timeCalls(ctx, seconds, func() error { copy(other, dst); return nil })
	if err != nil {
		return nil, err
	}
	rep.CopyGBs = bytes / ct.perCore().Seconds() / 1e9
	ct, err = timeCalls(ctx, seconds, func() error { benchSink += sumLanes(other); return nil })
	if err != nil {
		return nil, err
	}
	rep.ReadGBs = bytes / ct.perCore().Seconds() / 1e9
	other = nil

	bar := env.NewProgress(int64(2*len(types)+3), "bench quant", cli.Steps)
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
			ct, err := timeCalls(ctx, seconds, func() error { return decode(t, src, dst[:n]) })
			if err != nil {
				return nil, err
			}
			r := newRate("dequantize", t, p, n, ct, rep.WriteGBs)
			cn := max(cacheWeights/ti.BlockElements, 1) * ti.BlockElements
			cs := src[:cn/ti.BlockElements*ti.BlockBytes]
			cct, err := timeCalls(ctx, seconds/4, func() error { return decode(t, cs, dst[:cn]) })
			if err != nil {
				return nil, err
			}
			r.CacheMWPerS = float64(cn) / cct.wall.Seconds() / 1e6
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
			ct, err := timeCalls(ctx, seconds, func() error { return m.quantize(quant.Q2_0, x, q, opt) })
			if err != nil {
				return nil, err
			}
			rep.Rates = append(rep.Rates, newRate("quantize", quant.Q2_0, m.name, len(x), ct, 0))
			bar.Add(1)
		}
	}
	return rep, nil
}

func newRate(op string, t quant.Type, path string, n int, ct callTimes, writeGBs float64) quantRate {
	r := quantRate{Op: op, Type: t.String(), Path: path, Calls: ct.calls}
	r.MWeightsPerS = float64(n) / ct.wall.Seconds() / 1e6
	r.BestMWPerS = float64(n) / ct.best.Seconds() / 1e6
	if ct.cpu > 0 {
		r.CPUMWPerS = float64(n) / ct.cpu.Seconds() / 1e6
	}
	r.MBPerS = 4 * r.MWeightsPerS
	if writeGBs > 0 {
		r.OfWriteBW = 4 * float64(n) / ct.perCore().Seconds() / 1e9 / writeGBs
	}
	if a, ok := ggmlAnchorFor(op, t); ok {
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

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func printQuantBench(w io.Writer, r *quantBenchReport) {
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

package kernels

import (
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// rowsVariant is one way to run a matrix's rows against one activation row
// (all of them in one call, as a decode step on one thread does).
type rowsVariant struct {
	name string
	run  func(m *Matrix, x *Q8Row, out []float32)
}

// setVariant runs rows by a kernel set's dispatch (dotQ8Range).
func setVariant(name string, k *kernelSet) rowsVariant {
	return rowsVariant{name, func(m *Matrix, x *Q8Row, out []float32) { k.dotQ8Range(m, 0, m.Rows, x, out) }}
}

// dramShape is a run of matrices a decode step at the field shape walks
// (bench decode's synthetic pack: 32 heads of 128, 4 KV heads, n_embd
// 2560, vocabulary 32768), repeated to fill the buffer.
type dramShape struct {
	name string
	typ  quant.Type
	cols []int // the matrices of one repeat, in order
	rows []int
	// file: the buffer is a file of os.TempDir() mapped read-only, as the
	// engine maps the model (gguf.OpenMapped), not anonymous huge pages;
	// only the variants "host" and "1row" run on it.
	file bool
}

var dramShapes = []dramShape{
	{"x2560", quant.Q8_0, []int{2560, 2560, 2560}, []int{4096, 512, 512}, false}, // attn_q, attn_k, attn_v
	{"x4096", quant.Q8_0, []int{4096}, []int{2560}, false},                       // attn_output
	{"head", quant.Q8_0, []int{2560}, []int{32768}, false},                       // output
	// An expert's gate, up and down (ff 640), as the arena holds them.
	{"expert", quant.Q2_0, []int{2560, 2560, 640}, []int{640, 640, 2560}, false},
	{"file-x2560", quant.Q8_0, []int{2560, 2560, 2560}, []int{4096, 512, 512}, true},
	{"file-head", quant.Q8_0, []int{2560}, []int{32768}, true},
}

// BenchmarkRowsDRAM is the decode's row kernels (the dense Q8_0 matrices,
// the Q2_0 experts) on one thread from DRAM: for
// each shape of dramShapes, whole matrices in a buffer far larger than the
// caches (STRATACTL_DRAM_MB MiB, default 512, rounded up to whole repeats;
// an anonymous mapping on huge pages, as the expert arena), walked once an
// iteration, one call per matrix, front to back, by each variant
// (rowsDRAMVariants of the shape's type: "host" is what the decode
// dispatches), and by the
// plain streaming read (XORRead, bench decode's memory bound) over the
// same bytes as the sub-benchmark "xor". Bytes/s are weight bytes; each
// variant also reports %xor, its pass time against a plain read pass
// timed between its own passes (off the benchmark's clock), so that
// drift in the machine's bandwidth cancels, and cpu-%xor, the same in the
// thread's CPU time (getrusage; Linux only), which waiting for a core on a
// shared machine does not count. The "file-" shapes are the
// same from a mapped file (the engine's dense weights' mapping). Run it on
// one thread:
//
//	go test ./kernels -run XXX -bench RowsDRAM -benchtime 3x -cpu 1
func BenchmarkRowsDRAM(b *testing.B) {
	mb := 512
	if s := os.Getenv("STRATACTL_DRAM_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("STRATACTL_DRAM_MB=%q: want a positive number of MiB", s)
		}
		mb = v
	}
	for _, sh := range dramShapes {
		variants := rowsDRAMVariants(sh.typ)
		if sh.file {
			variants = slices.DeleteFunc(variants, func(v rowsVariant) bool { return v.name != "host" && v.name != "1row" })
		}
		b.Run(sh.name, func(b *testing.B) {
			ti, _ := quant.Info(sh.typ)
			rowBytes := func(i int) int { return sh.cols[i] / ti.BlockElements * ti.BlockBytes }
			perRepeat := 0
			for i, r := range sh.rows {
				perRepeat += r * rowBytes(i)
			}
			repeats := ((mb << 20) + perRepeat - 1) / perRepeat
			pattern, err := SampleBlocks(sh.typ, 64, 1)
			if err != nil {
				b.Fatal(err)
			}
			var data []byte
			if sh.file {
				data = mapDRAMFile(b, repeats*perRepeat, pattern)
			} else {
				var unmap func() error
				data, unmap, err = osutil.MapAnon(repeats*perRepeat, 2<<20)
				if err != nil {
					b.Fatal(err)
				}
				defer unmap()
				for o := 0; o < len(data); o += len(pattern) {
					copy(data[o:], pattern)
				}
			}
			var ms []Matrix
			var xs []*Q8Row
			maxRows := 0
			rng := rand.New(rand.NewPCG(2, 3))
			for o, i := 0, 0; o < len(data); i++ {
				j := i % len(sh.rows)
				rows, cols := sh.rows[j], sh.cols[j]
				m, err := NewMatrix(sh.typ, data[o:o+rows*rowBytes(j)], cols, rows)
				if err != nil {
					b.Fatal(err)
				}
				ms = append(ms, m)
				maxRows = max(maxRows, rows)
				o += rows * rowBytes(j)
				if i < len(sh.rows) {
					var x Q8Row
					if err := QuantizeQ8Row(gaussians(rng, cols, 1), &x); err != nil {
						b.Fatal(err)
					}
					xs = append(xs, &x)
				}
			}
			out := make([]float32, maxRows)
			b.Run("xor", func(b *testing.B) {
				runtime.LockOSThread() // each sub-benchmark runs on a goroutine of its own
				defer runtime.UnlockOSThread()
				var sink uint64
				b.SetBytes(int64(len(data)))
				for i := 0; i < b.N; i++ {
					sink ^= XORRead(data)
				}
				runtime.KeepAlive(sink)
			})
			for _, v := range variants {
				b.Run(v.name, func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var sink uint64
					var xor, cpuRun, cpuXor time.Duration
					b.SetBytes(int64(len(data)))
					for i := 0; i < b.N; i++ {
						c0 := threadCPU(b)
						for j := range ms {
							v.run(&ms[j], xs[j%len(xs)], out)
						}
						b.StopTimer()
						c1 := threadCPU(b)
						t0 := time.Now()
						sink ^= XORRead(data)
						xor += time.Since(t0)
						cpuRun, cpuXor = cpuRun+c1-c0, cpuXor+threadCPU(b)-c1
						b.StartTimer()
					}
					runtime.KeepAlive(sink)
					b.ReportMetric(100*xor.Seconds()/b.Elapsed().Seconds(), "%xor")
					if cpuRun > 0 {
						b.ReportMetric(100*cpuXor.Seconds()/cpuRun.Seconds(), "cpu-%xor")
					}
				})
			}
		})
	}
	b.Run("step", benchRowsStep)
}

// benchRowsStep is BenchmarkRowsDRAM's "step": the row products of whole
// decode steps at the field shape (bench decode's synthetic pack: 8
// layers, each attn_q, attn_k, attn_v, attn_output in Q8_0, then 8 of its
// 64 Q2_0 experts' gate, up and down, drawn at random per layer and token
// from an arena on huge pages; after the layers the output head), 4 tokens
// an iteration, each matrix one call, in that order: the kernels' walk
// with the switches between matrices and types that a step makes.
// Variants: "host" (the dispatch), "q8-1row" (Q8_0 rows by the one-row
// kernel, as before the multi-row walks); %xor against the plain read of
// the same matrices in the same order.
func benchRowsStep(b *testing.B) {
	const layers, experts, used, tokens = 8, 64, 8, 4
	type shape struct {
		typ        quant.Type
		cols, rows int
	}
	q, k, o := shape{quant.Q8_0, 2560, 4096}, shape{quant.Q8_0, 2560, 512}, shape{quant.Q8_0, 4096, 2560}
	head := shape{quant.Q8_0, 2560, 32768}
	gate, down := shape{quant.Q2_0, 2560, 640}, shape{quant.Q2_0, 640, 2560}
	size := func(s shape) int {
		ti, _ := quant.Info(s.typ)
		return s.rows * s.cols / ti.BlockElements * ti.BlockBytes
	}
	region := func(shapes []shape) []Matrix {
		n := 0
		for _, s := range shapes {
			n += size(s)
		}
		data, unmap, err := osutil.MapAnon(n, 2<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unmap() })
		ms := make([]Matrix, len(shapes))
		o := 0
		for i, s := range shapes {
			pattern, err := SampleBlocks(s.typ, 64, 1)
			if err != nil {
				b.Fatal(err)
			}
			d := data[o : o+size(s)]
			for j := 0; j < len(d); j += len(pattern) {
				copy(d[j:], pattern)
			}
			if ms[i], err = NewMatrix(s.typ, d, s.cols, s.rows); err != nil {
				b.Fatal(err)
			}
			o += size(s)
		}
		return ms
	}
	var denseShapes, expertShapes []shape
	for l := 0; l < layers; l++ {
		denseShapes = append(denseShapes, q, k, k, o)
		for e := 0; e < experts; e++ {
			expertShapes = append(expertShapes, gate, gate, down)
		}
	}
	dense := region(append(denseShapes, head))
	arena := region(expertShapes)
	xs := map[shape]*Q8Row{}
	rng := rand.New(rand.NewPCG(4, 5))
	x := func(m *Matrix) *Q8Row {
		key := shape{m.Type, m.Cols, 0}
		if xs[key] == nil {
			xs[key] = new(Q8Row)
			if err := QuantizeQ8Row(gaussians(rng, m.Cols, 1), xs[key]); err != nil {
				b.Fatal(err)
			}
		}
		return xs[key]
	}
	// The calls of the tokens, in order.
	var calls []*Matrix
	bytes := 0
	for t := 0; t < tokens; t++ {
		for l := 0; l < layers; l++ {
			for i := 0; i < 4; i++ {
				calls = append(calls, &dense[4*l+i])
			}
			for _, e := range rng.Perm(experts)[:used] {
				for i := 0; i < 3; i++ {
					calls = append(calls, &arena[3*(experts*l+e)+i])
				}
			}
		}
		calls = append(calls, &dense[len(dense)-1])
	}
	maxRows := 0
	callXs := make([]*Q8Row, len(calls))
	for i, m := range calls {
		callXs[i] = x(m)
		maxRows = max(maxRows, m.Rows)
		bytes += len(m.Data)
	}
	out := make([]float32, maxRows)
	variants := []rowsVariant{setVariant("host", &host)}
	for _, s := range q8StreamSets() {
		if s.name == "1row" {
			variants = append(variants, setVariant("q8-1row", s.k))
		}
	}
	xorPass := func() (sink uint64) {
		for _, m := range calls {
			sink ^= XORRead(m.Data)
		}
		return sink
	}
	b.Run("xor", func(b *testing.B) {
		runtime.LockOSThread() // each sub-benchmark runs on a goroutine of its own
		defer runtime.UnlockOSThread()
		var sink uint64
		b.SetBytes(int64(bytes))
		for i := 0; i < b.N; i++ {
			sink ^= xorPass()
		}
		runtime.KeepAlive(sink)
	})
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var sink uint64
			var xor time.Duration
			b.SetBytes(int64(bytes))
			for i := 0; i < b.N; i++ {
				for j, m := range calls {
					v.run(m, callXs[j], out)
				}
				b.StopTimer()
				t0 := time.Now()
				sink ^= xorPass()
				xor += time.Since(t0)
				b.StartTimer()
			}
			runtime.KeepAlive(sink)
			b.ReportMetric(100*xor.Seconds()/b.Elapsed().Seconds(), "%xor")
		})
	}
}

// BenchmarkQ2RowsCache is the Q2_0 row kernels in cache on one thread: an
// expert's gate or up (x2560: 640 rows of 2560) and its down (x640: 2560
// rows of 640), 460,800 bytes each (in L2), all rows in one call, by each
// of rowsDRAMVariants(Q2_0) ("host" the dispatch). One iteration is
// q2CachePasses calls after an untimed one that brings the rows into the
// cache, so that even -benchtime 3x times the cache, not DRAM. Bytes/s
// are weight bytes per second of wall time; cpu-GB/s and cpu-Gw/s the same
// bytes and the weights per second of the thread's CPU time (Linux only),
// which waiting for a core on a shared machine does not count:
//
//	go test ./kernels -run XXX -bench Q2RowsCache -benchtime 3x -cpu 1
func BenchmarkQ2RowsCache(b *testing.B) {
	const q2CachePasses = 200
	for _, sh := range q2CacheShapes(b) {
		m, x, out, data := sh.m, sh.x, sh.out, sh.m.Data
		for _, v := range rowsDRAMVariants(quant.Q2_0) {
			b.Run(sh.name+"/"+v.name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.SetBytes(int64(q2CachePasses * len(data)))
				v.run(&m, &x, out)
				b.ResetTimer()
				c0 := threadCPU(b)
				for b.Loop() {
					for range q2CachePasses {
						v.run(&m, &x, out)
					}
				}
				cpu := threadCPU(b) - c0
				work := float64(b.N) * q2CachePasses
				reportCPURate(b, work*float64(len(data)), cpu, "cpu-GB/s")
				reportCPURate(b, work*float64(sh.rows*sh.cols), cpu, "cpu-Gw/s")
			})
		}
	}
}

// BenchmarkQ2RowsDuel is BenchmarkQ2RowsCache's two shapes with the
// variants interleaved: rounds of q2DuelPasses calls of each variant in
// turn (STRATACTL_Q2_VARIANTS, comma-separated names of
// rowsDRAMVariants(Q2_0), default host and the "-pf2048" kernels), each
// round timed in the thread's CPU time (threadClock), so that every variant meets the
// same machine (a shared host's other work, the other hyperthread's, the
// clock); it reports each variant's best round and median round as
// "NAME-best-Gw/s" and "NAME-med-Gw/s" (weights per second):
//
//	go test ./kernels -run XXX -bench Q2RowsDuel -benchtime 100x -cpu 1
//
// b.N is the number of rounds.
func BenchmarkQ2RowsDuel(b *testing.B) {
	const q2DuelPasses = 20
	names := map[string]bool{}
	if s := os.Getenv("STRATACTL_Q2_VARIANTS"); s != "" {
		for _, n := range strings.Split(s, ",") {
			names[n] = true
		}
	}
	var vs []rowsVariant
	for _, v := range rowsDRAMVariants(quant.Q2_0) {
		if len(names) > 0 && names[v.name] || len(names) == 0 && (v.name == "host" || strings.HasSuffix(v.name, "-pf2048")) {
			vs = append(vs, v)
		}
	}
	for _, sh := range q2CacheShapes(b) {
		m, x, out := sh.m, sh.x, sh.out
		b.Run(sh.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			rounds := make([][]time.Duration, len(vs))
			for _, v := range vs {
				v.run(&m, &x, out)
			}
			for b.Loop() {
				for i, v := range vs {
					c0 := threadClock(b)
					for range q2DuelPasses {
						v.run(&m, &x, out)
					}
					rounds[i] = append(rounds[i], threadClock(b)-c0)
				}
			}
			work := float64(q2DuelPasses * sh.rows * sh.cols)
			for i, v := range vs {
				r := rounds[i]
				slices.Sort(r)
				reportCPURate(b, work, r[0], v.name+"-best-Gw/s")
				reportCPURate(b, work, r[len(r)/2], v.name+"-med-Gw/s")
			}
		})
	}
}

// q2CacheShape is one of the Q2_0 in-cache benchmarks' matrices (random
// rows of the experts' two widths) with its activations and output.
type q2CacheShape struct {
	name string
	cols int
	rows int
	m    Matrix
	x    Q8Row
	out  []float32
}

// q2CacheShapes makes BenchmarkQ2RowsCache's and BenchmarkQ2RowsDuel's
// shapes, the same rows for both (seed 6, 7).
func q2CacheShapes(b *testing.B) []q2CacheShape {
	rng := rand.New(rand.NewPCG(6, 7))
	var shs []q2CacheShape
	for _, sh := range []q2CacheShape{{name: "x2560", cols: 2560, rows: 640}, {name: "x640", cols: 640, rows: 2560}} {
		var data []byte
		for r := 0; r < sh.rows; r++ {
			data = append(data, randomRow(rng, quant.Q2_0, sh.cols)...)
		}
		m, err := NewMatrix(quant.Q2_0, data, sh.cols, sh.rows)
		if err != nil {
			b.Fatal(err)
		}
		sh.m = m
		if err := QuantizeQ8Row(gaussians(rng, sh.cols, 1), &sh.x); err != nil {
			b.Fatal(err)
		}
		sh.out = make([]float32, sh.rows)
		shs = append(shs, sh)
	}
	return shs
}

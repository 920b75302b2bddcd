package optq

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// BenchmarkQuantizeExpertField times one expert at the field width
// (n_embd 2560, n_ff_exp 640) with 32 calibration tokens, the low-rank path
// bench pack's experts take. cpu-s/op is the process's CPU time per expert
// (user + system, every goroutine), which a loaded machine inflates less
// than the wall time.
func BenchmarkQuantizeExpertField(b *testing.B) { benchExpertField(b, Defaults()) }

// BenchmarkQuantizeExpertFieldAllPasses is BenchmarkQuantizeExpertField
// with the expert-output refinement and the grid scales on for every
// expert (ExpertTokens and GridTokens 0): the decisions of the defaults
// before those thresholds, so that kernel work can be timed against older
// builds on the same bytes.
func BenchmarkQuantizeExpertFieldAllPasses(b *testing.B) {
	opt := Defaults()
	opt.ExpertTokens, opt.GridTokens = 0, 0
	benchExpertField(b, opt)
}

func benchExpertField(b *testing.B, opt Options) {
	rng := rand.New(rand.NewPCG(5, 6))
	ex, in := expertFixture(rng, 2560, 640, 32, 4)
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		if _, err := QuantizeExpert(ex, in, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's user + system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScoreGroup times one scoring pass of 32 candidates over a group
// (4 rows of 8).
func BenchmarkScoreGroup(b *testing.B) {
	w, id, band, s := scoreCase(rand.New(rand.NewPCG(1, 2)))
	bt := (*[group * group]float32)((&factors{cols: group, band: band}).bandByColumn())
	for b.Loop() {
		scoreGroup(w, id, bt, s)
	}
}

// BenchmarkRefineLowField times the low-rank refinement (2 passes) of a
// gate-shaped matrix (640 rows of 2560, 32 tokens) at each lane width
// this CPU runs.
func BenchmarkRefineLowField(b *testing.B) {
	const n, cols, rows = 32, 2560, 640
	rng := rand.New(rand.NewPCG(7, 8))
	x := correlated(rng, n, cols, cols/2)
	f, reason := lowRankFactor(x, n, cols, DefaultDamp, 1)
	if reason != "" {
		b.Fatal(reason)
	}
	w := randMatrix(rng, rows*cols, 0.1)
	q0 := f.quantize(w, rows, Defaults())
	q := &quantized{rows: rows, cols: cols, levels: make([]int8, len(q0.levels)), scales: make([]float32, len(q0.scales))}
	eachWidth(b, func() {
		copy(q.levels, q0.levels)
		copy(q.scales, q0.scales)
		q.refineLow(w, f.lr, 2)
	})
}

// eachWidth runs op as a sub-benchmark at each lane width this CPU runs,
// reporting the process's CPU time per op.
func eachWidth(b *testing.B, op func()) {
	widths := []bool{false}
	if useWide {
		widths = append(widths, true)
	}
	for _, wide := range widths {
		b.Run(map[bool]string{false: "8", true: "16"}[wide], func(b *testing.B) {
			saved := useWide
			useWide = wide
			defer func() { useWide = saved }()
			c0 := cpuTime()
			for b.Loop() {
				op()
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkCarryField times the low-rank carry of one OPTQ pass (every
// group's errors on to the next group) over 640 rows of 2560, 32 tokens,
// at each lane width this CPU runs.
func BenchmarkCarryField(b *testing.B) {
	const n, cols, rows = 32, 2560, 640
	rng := rand.New(rand.NewPCG(9, 8))
	f, reason := lowRankFactor(correlated(rng, n, cols, cols/2), n, cols, DefaultDamp, 1)
	if reason != "" {
		b.Fatal(reason)
	}
	w := randMatrix(rng, rows*cols, 0.1)
	errs := randMatrix(rng, rows*group, 0.01)
	eachWidth(b, func() {
		c := f.lr.carrier(rows)
		for g := 0; g+1 < cols/group; g++ {
			c.carry(w, errs, g*group, (g+1)*group)
		}
	})
}

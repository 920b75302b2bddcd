package engine

import (
	"syscall"
	"testing"
	"time"

	"github.com/stratactl/stratactl/internal/testutil"
)

// BenchmarkModeTiny is tiny-qwen3moe IQ3_S in exact and fast mode on one
// thread: a 128-token prefill (refs/ppl_tokens' first 128) and single decode
// steps, reported as tokens per second of wall time (tok/s) and of the
// process's CPU time (cpu-tok/s, steadier on a loaded machine).
func BenchmarkModeTiny(b *testing.B) {
	ids := readI32(b, testutil.TinyModel(b, "refs", "ppl_tokens.i32.bin"))[:128]
	for _, mode := range []Mode{Exact, Fast} {
		m, err := Open(testutil.TinyModel(b, "model-iq3s.gguf"), Options{Mode: mode, Threads: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(mode.String()+"/prefill128", func(b *testing.B) {
			s := m.NewSession()
			s.MaxBatch = len(ids)
			timeTokens(b, len(ids), func(i int) {
				s.Reset()
				if _, err := s.Forward(ids, false); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(mode.String()+"/decode", func(b *testing.B) {
			s := m.NewSession()
			timeTokens(b, 1, func(i int) {
				if s.Pos >= 128 {
					s.Reset()
				}
				if _, err := s.Forward(ids[s.Pos:s.Pos+1], false); err != nil {
					b.Fatal(err)
				}
			})
		})
		m.Close()
	}
}

// timeTokens runs step b.N times and reports tokens per wall and CPU second.
func timeTokens(b *testing.B, tokens int, step func(i int)) {
	cpu0 := processCPU()
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	wall := time.Since(t0)
	cpu := processCPU() - cpu0
	n := float64(b.N * tokens)
	b.ReportMetric(n/wall.Seconds(), "tok/s")
	if cpu > 0 {
		b.ReportMetric(n/cpu.Seconds(), "cpu-tok/s")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

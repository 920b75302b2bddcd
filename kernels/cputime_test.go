package kernels

import (
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stratactl/stratactl/quant"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCPUSpeed(t *testing.T) {
	if os.Getenv("Q2SPEED") == "" {
		t.Skip()
	}
	runtime.LockOSThread()
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	q := make([]byte, len(x)/64*18)
	for _, c := range []struct {
		name string
		asm  bool
		opt  *quant.QuantizeOptions
	}{{"search avx2", true, nil}, {"search n6", true, &quant.QuantizeOptions{Q2Candidates: 6}}, {"ggml", true, &quant.QuantizeOptions{Q2Mode: quant.Q2GGML}}, {"generic", false, nil}} {
		withPath(c.asm, func() {
			best := time.Hour
			for range 5 {
				t0 := threadCPU()
				QuantizeQ2_0(x, q, c.opt)
				best = min(best, threadCPU()-t0)
			}
			t.Logf("%s: %.1f Mweights per CPU-second", c.name, float64(len(x))/best.Seconds()/1e6)
		})
	}
}

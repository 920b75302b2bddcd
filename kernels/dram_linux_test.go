package kernels

import (
	"bytes"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// threadCPU is the calling OS thread's CPU time (getrusage RUSAGE_THREAD):
// on a shared machine the time a thread ran, not the time it waited for a
// core.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRowsFromDRAM is the row kernels (MatVecQ8's path, one thread)
// over a matrix far larger than the caches, STRATACTL_DRAM_MB MiB (default
// 256) of 2560-column rows on huge pages (osutil.MapAnon, as the expert
// arena), beside the plain streaming read (XORRead, bench decode's memory
// bound) over the same bytes, alternated pass by pass. Each reports the
// best pass of each in thread CPU time: kernel-GB/s, xor-GB/s and their
// ratio, kernel-%xor. Q2_0/one-row is the one-row Q2_0 kernel (the set a
// CPU without VBMI and GFNI gets), for comparison.
func BenchmarkRowsFromDRAM(b *testing.B) {
	mb := 256
	if s := os.Getenv("STRATACTL_DRAM_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("STRATACTL_DRAM_MB=%q: want a positive number of MiB", s)
		}
		mb = v
	}
	oneRow := hostCPU
	oneRow.avx512gfni = false
	oneRowSet := chooseKernels(oneRow)
	for _, c := range []struct {
		name string
		typ  quant.Type
		k    *kernelSet
	}{{"Q8_0", quant.Q8_0, &host}, {"Q2_0", quant.Q2_0, &host}, {"Q2_0/one-row", quant.Q2_0, &oneRowSet}} {
		b.Run(c.name, func(b *testing.B) {
			const cols = 2560
			ti, _ := quant.Info(c.typ)
			rb := cols / ti.BlockElements * ti.BlockBytes
			rows := (mb << 20) / rb
			data, unmap, err := osutil.MapAnon(rows*rb, 64)
			if err != nil {
				b.Fatal(err)
			}
			defer unmap()
			pattern, err := SampleBlocks(c.typ, 64, 1)
			if err != nil {
				b.Fatal(err)
			}
			for o := 0; o < len(data); o += len(pattern) {
				copy(data[o:], pattern)
			}
			m, err := NewMatrix(c.typ, data, cols, rows)
			if err != nil {
				b.Fatal(err)
			}
			var x Q8Row
			if err := QuantizeQ8Row(gaussians(rand.New(rand.NewPCG(2, 3)), cols, 1), &x); err != nil {
				b.Fatal(err)
			}
			out := make([]float32, rows)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			bestX, bestK := time.Duration(1<<62), time.Duration(1<<62)
			var sink uint64
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				t0 := threadCPU(b)
				sink ^= XORRead(data)
				t1 := threadCPU(b)
				c.k.dotQ8Range(&m, 0, rows, &x, out)
				t2 := threadCPU(b)
				bestX, bestK = min(bestX, t1-t0), min(bestK, t2-t1)
			}
			runtime.KeepAlive(sink)
			gbs := func(d time.Duration) float64 { return float64(len(data)) / d.Seconds() / 1e9 }
			b.ReportMetric(gbs(bestK), "kernel-GB/s")
			b.ReportMetric(gbs(bestX), "xor-GB/s")
			b.ReportMetric(100*bestX.Seconds()/bestK.Seconds(), "kernel-%xor")
		})
	}
}

// mapDRAMFile is n bytes of pattern, repeated, in a file of os.TempDir()
// (removed at once: the mapping keeps it) mapped read-only and shared, as
// gguf.OpenMapped maps a model; unmapped at the end of b.
func mapDRAMFile(b *testing.B, n int, pattern []byte) []byte {
	f, err := os.CreateTemp("", "stratactl-rowsdram-*")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	os.Remove(f.Name())
	chunk := bytes.Repeat(pattern, max(1, (1<<20)/len(pattern)))
	for o := 0; o < n; o += len(chunk) {
		if _, err := f.Write(chunk[:min(len(chunk), n-o)]); err != nil {
			b.Fatal(err)
		}
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Munmap(data) })
	return data
}

package kernels

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolParallel: every index is run exactly once, in contiguous ranges,
// at any thread count, with nested calls (which must not deadlock on busy
// workers), and a pool nobody holds ends its workers.
func TestPoolParallel(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, th := range []int{1, 2, 3, 8} {
		p := NewPool(th)
		for _, n := range []int{0, 1, 2, 7, 100, 1000} {
			for rep := 0; rep < 20; rep++ {
				seen := make([]atomic.Int32, n)
				p.Parallel(n, minWork, func(lo, hi int) {
					if lo > hi || lo < 0 || hi > n {
						t.Errorf("range [%d, %d) of %d", lo, hi, n)
						return
					}
					for i := lo; i < hi; i++ {
						seen[i].Add(1)
						// A nested call on the same pool.
						var inner atomic.Int32
						p.Parallel(4, minWork, func(a, b int) { inner.Add(int32(b - a)) })
						if inner.Load() != 4 {
							t.Errorf("nested call covered %d of 4", inner.Load())
						}
					}
				})
				for i := range seen {
					if c := seen[i].Load(); c != 1 {
						t.Fatalf("threads %d n %d: index %d run %d times", th, n, i, c)
					}
				}
			}
		}
	}
	// The pools above are garbage now: their cleanups end their workers.
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		if runtime.NumGoroutine() <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before, %d after the pools were dropped", before, runtime.NumGoroutine())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

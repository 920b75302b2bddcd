package kernels

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stratactl/stratactl/quant"
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

// TestPoolClose: Close ends the workers of a pool still referenced, and
// calls after it run every index once on the caller.
func TestPoolClose(t *testing.T) {
	before := runtime.NumGoroutine()
	p := NewPool(4)
	var ran atomic.Int64
	p.Parallel(1000, minWork, func(lo, hi int) { ran.Add(int64(hi - lo)) })
	if n := runtime.NumGoroutine(); n < before+3 {
		t.Fatalf("%d goroutines before, %d after a call at 4 threads", before, n)
	}
	p.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before, %d after Close", before, runtime.NumGoroutine())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Parallel(1000, minWork, func(lo, hi int) { ran.Add(int64(hi - lo)) })
	if ran.Load() != 2000 {
		t.Fatalf("ran %d of 2000 indices", ran.Load())
	}
	p.Close() // twice is fine
	runtime.KeepAlive(p)
}

// TestRowShares: parallelRows gives each goroutine one contiguous share of
// the rows, about the same bytes each, each boundary the first row that
// starts at or after a page boundary; it runs every row once, in claims
// within the shares; and MatVecsQ8 over such matrices (rows of 2720 and
// 180 bytes, straddling pages) gives DotQ8's bits at 1 to 5 threads.
func TestRowShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := []struct {
		typ        quant.Type
		cols, rows int
	}{{quant.Q8_0, 2560, 700}, {quant.Q2_0, 640, 1500}, {quant.Q8_0, 2560, 37}, {quant.Q2_0, 2560, 901}}
	var ms []*Matrix
	var xs []*Q8Row
	start := []int{0}
	total := 0
	for _, sh := range shapes {
		var data []byte
		for r := 0; r < sh.rows; r++ {
			data = append(data, randomRow(rng, sh.typ, sh.cols)...)
		}
		m, err := NewMatrix(sh.typ, data, sh.cols, sh.rows)
		if err != nil {
			t.Fatal(err)
		}
		x := &Q8Row{}
		if err := QuantizeQ8Row(gaussians(rng, sh.cols, 1), x); err != nil {
			t.Fatal(err)
		}
		ms, xs = append(ms, &m), append(xs, x)
		start = append(start, start[len(start)-1]+m.Rows)
		total += m.Rows * m.RowBytes
	}
	n := start[len(ms)]
	// addr is where global row g starts, bytes the bytes of rows [lo, hi).
	at := func(g int) (i, r int) {
		for g >= start[i+1] && i+1 < len(ms) {
			i++
		}
		return i, g - start[i]
	}
	bytes := func(lo, hi int) int {
		b := 0
		for g := lo; g < hi; g++ {
			i, _ := at(g)
			b += ms[i].RowBytes
		}
		return b
	}
	for shares := 2; shares <= 5; shares++ {
		b := make([]int, shares+1)
		rowBounds(ms, start, total, b)
		if b[0] != 0 || b[shares] != n {
			t.Fatalf("%d shares: bounds %v over %d rows", shares, b, n)
		}
		for s := 1; s < shares; s++ {
			i, r := at(b[s])
			m := ms[i]
			addr := int(uintptr(unsafe.Pointer(&m.Data[0]))) + r*m.RowBytes
			if b[s] < b[s-1] || r > 0 && r < m.Rows && addr%pageBytes >= m.RowBytes {
				t.Errorf("%d shares: boundary %d at row %d of matrix %d, %d bytes into a page (rows of %d)", shares, s, r, i, addr%pageBytes, m.RowBytes)
			}
		}
		for s := 0; s < shares; s++ {
			if d := bytes(b[s], b[s+1]) - total/shares; d > 2*(pageBytes+2720) || d < -2*(pageBytes+2720) {
				t.Errorf("%d shares: share %d has %d bytes, the even share %d", shares, s, bytes(b[s], b[s+1]), total/shares)
			}
		}
		// Through the pool: every row once, each range inside one share.
		seen := make([]atomic.Int32, n)
		NewPool(shares).parallelRows(ms, start, 1, func(lo, hi int) {
			s := 0
			for s+1 < shares && lo >= b[s+1] {
				s++
			}
			if lo >= hi || hi > b[s+1] {
				t.Errorf("%d shares: range [%d, %d) crosses share %d's end %d", shares, lo, hi, s, b[s+1])
			}
			for g := lo; g < hi; g++ {
				seen[g].Add(1)
			}
		})
		for g := range seen {
			if c := seen[g].Load(); c != 1 {
				t.Fatalf("%d shares: row %d run %d times", shares, g, c)
			}
		}
	}
	for th := 1; th <= 5; th++ {
		outs := make([][]float32, len(ms))
		for i, m := range ms {
			outs[i] = make([]float32, m.Rows)
		}
		NewPool(th).MatVecsQ8(ms, xs, outs)
		for i, m := range ms {
			for r := 0; r < m.Rows; r++ {
				if want := DotQ8(m.Type, m.Row(r), xs[i]); !sameFloat(outs[i][r], want) {
					t.Fatalf("threads %d matrix %d row %d: MatVecsQ8 %g, DotQ8 %g", th, i, r, outs[i][r], want)
				}
			}
		}
	}
}

// TestShareClaims: a share's claims from the front and from the back,
// interleaved, cover its units once, the front's in order; each takes a
// quarter of what was left (at least one), so a share of n units takes
// O(log n) claims.
func TestShareClaims(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 100, 4096} {
		for _, pattern := range []uint{0, 1, 0b0110, 0b1011} { // bit i: claim i from the back
			var c shareClaim
			c.v.Store(uint64(n) << 32)
			seen := make([]int, n)
			next, claims := 0, 0
			for i := 0; ; i++ {
				left := int(uint32(c.v.Load()>>32) - uint32(c.v.Load()))
				var u, k int
				if pattern>>(i%4)&1 == 1 {
					u, k = c.back()
					if k > 0 && u != int(uint32(c.v.Load()>>32)) { // the new back
						t.Fatalf("n %d: back claim [%d, %d) not at the back", n, u, u+k)
					}
				} else {
					u, k = c.front()
					if k > 0 && u != next {
						t.Fatalf("n %d: front claim at %d, want %d", n, u, next)
					}
					next = u + k
				}
				if k == 0 {
					if left != 0 {
						t.Fatalf("n %d: no claim with %d units left", n, left)
					}
					break
				}
				if want := max(1, left/claimGuide); k != want {
					t.Fatalf("n %d: claimed %d of %d left, want %d", n, k, left, want)
				}
				for x := u; x < u+k; x++ {
					seen[x]++
				}
				claims++
			}
			for x, s := range seen {
				if s != 1 {
					t.Fatalf("n %d pattern %b: unit %d claimed %d times", n, pattern, x, s)
				}
			}
			if n == 4096 && claims > 40 {
				t.Fatalf("%d claims for 4096 units", claims)
			}
		}
	}
}

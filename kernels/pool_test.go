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
		// Through the pool, in lanes and not: every row once, each range
		// inside one share.
		for _, plain := range []bool{false, true} {
			p := NewPool(shares)
			p.plainRows = plain
			tk := p.task()
			tk.ms = append(tk.ms, ms...)
			tk.rowStarts()
			seen := make([]atomic.Int32, n)
			p.parallelRows(tk, 1, func(lo, hi int) {
				share := -1
				forStepRows(tk, lo, hi, func(g int) {
					s := 0
					for s+1 < shares && g >= b[s+1] {
						s++
					}
					if share >= 0 && s != share {
						t.Errorf("%d shares: steps [%d, %d) run rows of shares %d and %d", shares, lo, hi, share, s)
					}
					share = s
					seen[g].Add(1)
				})
			})
			for g := range seen {
				if c := seen[g].Load(); c != 1 {
					t.Fatalf("%d shares, plain %v: row %d run %d times", shares, plain, g, c)
				}
			}
			p.putTask(tk)
		}
	}
	for th := 1; th <= 5; th++ {
		for _, plain := range []bool{false, true} {
			p := NewPool(th)
			p.plainRows = plain
			outs := make([][]float32, len(ms))
			for i, m := range ms {
				outs[i] = make([]float32, m.Rows)
			}
			p.MatVecsQ8(ms, xs, outs)
			for i, m := range ms {
				for r := 0; r < m.Rows; r++ {
					if want := DotQ8(m.Type, m.Row(r), xs[i]); !sameFloat(outs[i][r], want) {
						t.Fatalf("threads %d, plain %v, matrix %d row %d: MatVecsQ8 %g, DotQ8 %g", th, plain, i, r, outs[i][r], want)
					}
				}
			}
		}
	}
}

// forStepRows calls f with the global row of each row of parallelRows'
// steps [lo, hi) of tk (its pieces).
func forStepRows(tk *task, lo, hi int, f func(g int)) {
	for _, pc := range tk.pieces {
		a, b := max(lo, pc.step)-pc.step, min(hi, pc.step+pc.steps)-pc.step
		if a >= b {
			continue
		}
		for k := range pc.ranges(a, b) {
			rlo, rhi := pc.rowRange(a, b, k)
			for r := rlo; r < rhi; r++ {
				f(tk.start[pc.mat] + r)
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

// TestRowLanesClaims: parallelRows' walk in lanes (rowPiece, pieceShares)
// covers every row of every matrix exactly once, each step range of a share
// only rows of that share, whatever ranges of steps the claims take and in
// whatever order they run: matrices of 1 to 40 rows (fewer than the lanes
// too), 1 to 5 shares, each share's steps cut at random and the cuts run
// shuffled, in lanes and in plain rows.
func TestRowLanesClaims(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 300; trial++ {
		var ms []*Matrix
		start, total := []int{0}, 0
		for range 1 + rng.IntN(5) {
			typ, cols := quant.Q8_0, 256
			if rng.IntN(2) == 0 {
				typ, cols = quant.Q2_0, 640
			}
			rows := 1 + rng.IntN(40)
			var data []byte
			for r := 0; r < rows; r++ {
				data = append(data, randomRow(rng, typ, cols)...)
			}
			m, err := NewMatrix(typ, data, cols, rows)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, &m)
			start = append(start, start[len(start)-1]+rows)
			total += rows * m.RowBytes
		}
		n := start[len(ms)]
		shares := 1 + rng.IntN(5)
		p := NewPool(shares)
		p.plainRows = trial%4 == 3
		tk := p.task()
		tk.ms = append(tk.ms, ms...)
		tk.rowStarts()
		rb := make([]int, shares+1)
		rowBounds(ms, start, total, rb)
		b := make([]int, shares+1)
		steps := tk.pieceShares(p, rb, b)
		if b[0] != 0 || b[shares] != steps {
			t.Fatalf("trial %d: step bounds %v, %d steps", trial, b, steps)
		}
		type claim struct{ s, lo, hi int }
		var claims []claim
		for s := 0; s < shares; s++ {
			if b[s+1] < b[s] {
				t.Fatalf("trial %d: step bounds %v not in order", trial, b)
			}
			for lo := b[s]; lo < b[s+1]; {
				hi := min(b[s+1], lo+1+rng.IntN(4))
				claims = append(claims, claim{s, lo, hi})
				lo = hi
			}
		}
		rng.Shuffle(len(claims), func(i, j int) { claims[i], claims[j] = claims[j], claims[i] })
		seen := make([]int, n)
		for _, c := range claims {
			forStepRows(tk, c.lo, c.hi, func(g int) {
				if g < rb[c.s] || g >= rb[c.s+1] {
					t.Fatalf("trial %d: steps [%d, %d) of share %d ran row %d, outside [%d, %d)", trial, c.lo, c.hi, c.s, g, rb[c.s], rb[c.s+1])
				}
				seen[g]++
			})
		}
		for g, c := range seen {
			if c != 1 {
				t.Fatalf("trial %d: row %d of %d ran %d times (pieces %+v)", trial, g, n, c, tk.pieces)
			}
		}
		p.putTask(tk)
	}
}

// TestRowLanesInterleaved: MatVecsQ8GLU and MatVecsQ8 through the pool at
// 1 to 6 threads, with the activation of some claims stalled (spinning or
// yielding, so that the other goroutines take the stalled one's share from
// its back), give DotQ8's bits for every row, and the activation sees every
// row of every pair once, after both of its products.
func TestRowLanesInterleaved(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := []struct {
		typ        quant.Type
		cols, rows int
	}{{quant.Q2_0, 2560, 101}, {quant.Q2_0, 2560, 3}, {quant.Q2_0, 640, 130}, {quant.Q8_0, 2560, 67}, {quant.Q2_0, 2560, 64}}
	var gates, ups []*Matrix
	var xs []*Q8Row
	for _, sh := range shapes {
		for range 2 {
			var data []byte
			for r := 0; r < sh.rows; r++ {
				data = append(data, randomRow(rng, sh.typ, sh.cols)...)
			}
			m, err := NewMatrix(sh.typ, data, sh.cols, sh.rows)
			if err != nil {
				t.Fatal(err)
			}
			if len(gates) == len(ups) {
				gates = append(gates, &m)
			} else {
				ups = append(ups, &m)
			}
		}
		x := &Q8Row{}
		if err := QuantizeQ8Row(gaussians(rng, sh.cols, 1), x); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	for th := 1; th <= 6; th++ {
		for round := 0; round < 4; round++ {
			p := NewPool(th)
			gs, us := make([][]float32, len(gates)), make([][]float32, len(gates))
			seen := make([][]atomic.Int32, len(gates))
			for i, m := range gates {
				gs[i], us[i] = make([]float32, m.Rows), make([]float32, m.Rows)
				seen[i] = make([]atomic.Int32, m.Rows)
			}
			var calls atomic.Int32
			glu := func(i, lo, hi int) {
				for r := lo; r < hi; r++ {
					g, u := DotQ8(gates[i].Type, gates[i].Row(r), xs[i]), DotQ8(ups[i].Type, ups[i].Row(r), xs[i])
					if !sameFloat(gs[i][r], g) || !sameFloat(us[i][r], u) {
						t.Errorf("threads %d: pair %d row %d: activation before its products (%g %g, want %g %g)", th, i, r, gs[i][r], us[i][r], g, u)
					}
					seen[i][r].Add(1)
				}
				switch c := calls.Add(1); c % 5 {
				case 1: // stall this claim: the others take its share's back
					for t0 := time.Now(); time.Since(t0) < 200*time.Microsecond; {
					}
				case 3:
					runtime.Gosched()
				}
			}
			p.MatVecsQ8GLU(gates, ups, xs, gs, us, glu)
			for i := range seen {
				for r := range seen[i] {
					if c := seen[i][r].Load(); c != 1 {
						t.Fatalf("threads %d: pair %d row %d activated %d times", th, i, r, c)
					}
				}
			}
			outs := make([][]float32, len(gates))
			for i, m := range gates {
				outs[i] = make([]float32, m.Rows)
			}
			p.MatVecsQ8(gates, xs, outs)
			for i, m := range gates {
				for r := 0; r < m.Rows; r++ {
					if want := DotQ8(m.Type, m.Row(r), xs[i]); !sameFloat(outs[i][r], want) {
						t.Fatalf("threads %d: MatVecsQ8 matrix %d row %d: %g, DotQ8 %g", th, i, r, outs[i][r], want)
					}
				}
			}
			p.Close()
		}
	}
}

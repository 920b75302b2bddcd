package kernels

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Pool runs index ranges on up to Threads goroutines: the caller's and a
// set of persistent workers started on first use (no goroutine per call)
// and ended by Close, or, for a pool nobody holds any more, by its
// cleanup.
//
// A call splits its indices into one contiguous share per goroutine (for
// a matrix's rows: about the same bytes each, every boundary at a page
// boundary as near as rows allow, see parallelRows). Each goroutine claims
// its own share from the front, in order, so that it streams one run of
// memory; one that runs out takes work from the back of another's share,
// so a goroutine that starts late (a parked worker waking) or runs slower
// (a shared machine) is helped, and the caller never waits for work it
// could do itself. Each claim takes a quarter of what is left of the
// share (at least a unit), so the streams are long and the last claims,
// which decide how evenly the goroutines finish, small. Each
// output element is computed whole by one goroutine with the kernel's
// fixed order, so results never depend on the thread count or on which
// goroutine ran which claim.
type Pool struct {
	Threads int
	scratch sync.Pool
	free    sync.Pool // *poolJob, recycled
	tasks   sync.Pool // *task, recycled

	mu     sync.Mutex
	ws     *workerSet
	closed bool

	// plainRows has parallelRows walk rows in one lane (a claim's range
	// cut in its kernel's streams anew each claim): the walk before lanes,
	// kept for BenchmarkExpertPasses and the tests.
	plainRows bool

	// passes counts the calls that went parallel (a round trip to the
	// workers each) and waited the caller's time spent waiting, its own
	// claims done, for the claims still running elsewhere (Counters).
	passes, waited atomic.Int64
}

// PoolCounters are a pool's running totals: Passes the calls that ran on
// more than the caller (one hand-off to the workers and one wait each),
// WaitNanos the time the callers spent waiting for the workers' last
// claims after finishing their own.
type PoolCounters struct {
	Passes    int64
	WaitNanos int64
}

// Counters are the pool's totals so far.
func (p *Pool) Counters() PoolCounters {
	return PoolCounters{Passes: p.passes.Load(), WaitNanos: p.waited.Load()}
}

// NewPool sizes a pool; threads <= 0 means GOMAXPROCS.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &Pool{Threads: threads}
}

// Close ends the pool's workers. Calls after it run on the caller alone;
// Close must not race with a call in progress.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.ws != nil {
		p.ws.stop()
		p.ws = nil
	}
}

func (p *Pool) buf(n int) *[]float32 {
	if b, ok := p.scratch.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}

// minWork is the weights x tokens a goroutine should get at least: below it,
// handing work to another goroutine costs more than it saves.
const minWork = 1 << 15

// unitWork is the work of the smallest claim in Parallel (weights x
// tokens), and unitBytes the weight bytes of the smallest claim in
// parallelRows: a couple of microseconds, so that the goroutines of a call
// finish within about that of each other; each claim takes 1/claimGuide
// of what is left of a share, so a share takes a few dozen claims (one
// compare-and-swap and one kernel call each) whatever its size.
const (
	unitWork   = 1 << 14
	unitBytes  = 16 << 10
	claimGuide = 4
)

// pageBytes is the page size the row shares align to.
const pageBytes = 4096

// workerSet is a set of workers behind one channel. The workers hold only
// the channel, so the pool's cleanup can stop them.
type workerSet struct {
	jobs chan *poolJob // buffered, one per worker
	once sync.Once
}

func (w *workerSet) stop() { w.once.Do(func() { close(w.jobs) }) }

// poolJob is one call: shares contiguous shares of [0, n), bounds[s] ..
// bounds[s+1], each in units of unit indices (the last one shorter).
type poolJob struct {
	fn     func(lo, hi int)
	unit   int
	bounds []int
	claims []shareClaim
	// joined counts the goroutines that joined after the caller (share 0);
	// pending the units not finished. done gets one value when pending
	// reaches 0; refs counts the caller and the copies sent to workers,
	// and the last to let go recycles the job into home.
	joined  atomic.Int32
	pending atomic.Int64
	refs    atomic.Int32
	done    chan struct{}
	home    *sync.Pool
}

// shareClaim is a share's unclaimed units [front, back) in one word
// (front in the low half), on a cache line of its own.
type shareClaim struct {
	v atomic.Uint64
	_ [56]byte
}

// claimSize is the units a claim takes of left unclaimed.
func claimSize(left uint32) uint32 { return max(1, left/claimGuide) }

// front claims units from the front of the share (the owner's, in order):
// the first and how many, 0 when none is left.
func (c *shareClaim) front() (int, int) {
	for {
		v := c.v.Load()
		f, b := uint32(v), uint32(v>>32)
		if f >= b {
			return 0, 0
		}
		k := claimSize(b - f)
		if c.v.CompareAndSwap(v, v+uint64(k)) {
			return int(f), int(k)
		}
	}
}

// back claims units from the back of the share (another goroutine's).
func (c *shareClaim) back() (int, int) {
	for {
		v := c.v.Load()
		f, b := uint32(v), uint32(v>>32)
		if f >= b {
			return 0, 0
		}
		k := claimSize(b - f)
		if c.v.CompareAndSwap(v, v-uint64(k)<<32) {
			return int(b - k), int(k)
		}
	}
}

// run claims the units of share self (when there is one) from the front,
// then takes the others' from their backs, until none is unclaimed.
func (j *poolJob) run(self int) {
	shares := len(j.claims)
	if self < shares {
		for {
			u, k := j.claims[self].front()
			if k == 0 {
				break
			}
			j.do(self, u, k)
		}
	}
	for k := 1; k <= shares; k++ {
		s := (self + k) % shares
		if s == self {
			continue
		}
		for {
			u, k := j.claims[s].back()
			if k == 0 {
				break
			}
			j.do(s, u, k)
		}
	}
}

// do runs units [u, u+k) of share s.
func (j *poolJob) do(s, u, k int) {
	lo := j.bounds[s] + u*j.unit
	j.fn(lo, min(lo+k*j.unit, j.bounds[s+1]))
	if j.pending.Add(int64(-k)) == 0 {
		j.done <- struct{}{}
	}
}

// waitSpin is how long the caller, its own claims done, spins on the
// claims still running elsewhere before it parks: parking and being woken
// cost tens of microseconds, the last claims a few.
const waitSpin = 50 * time.Microsecond

// wait returns when every unit has finished, adding the time it waited
// to *waited.
func (j *poolJob) wait(waited *atomic.Int64) {
	if j.pending.Load() != 0 {
		t0 := time.Now()
		for i := 1; j.pending.Load() != 0; i++ {
			spinPause(8)
			if i%32 == 0 && time.Since(t0) > waitSpin {
				break
			}
		}
		<-j.done
		waited.Add(int64(time.Since(t0)))
		return
	}
	<-j.done
}

// release drops one reference; the last recycles the job.
func (j *poolJob) release() {
	if j.refs.Add(-1) == 0 {
		j.fn = nil
		j.home.Put(j)
	}
}

// poolWorker runs the jobs it is handed until its channel is closed. After
// a job it polls for the next for workerSpin before it parks.
func poolWorker(jobs <-chan *poolJob) {
	for j := range jobs {
		for j != nil {
			j.run(int(j.joined.Add(1)))
			j.release()
			j = spinFor(jobs)
		}
	}
}

// workerSpin is how long a worker that finished a job keeps polling for
// the next. A decode step is a few dozen products of 0.01-2 ms with gaps
// of microseconds to tens of microseconds between them; waking a parked
// worker (an idle OS thread, on a shared machine) took about as long as a
// small product (docs/BENCHMARKS.md).
const workerSpin = 200 * time.Microsecond

// spinFor polls jobs for up to workerSpin (reading its length, with spin
// hints between, and yielding now and then to other goroutines); nil when
// none came or jobs is closed.
func spinFor(jobs <-chan *poolJob) *poolJob {
	t0 := time.Now()
	for i := 1; ; i++ {
		if len(jobs) > 0 || i%16 == 0 {
			select {
			case j, ok := <-jobs:
				if !ok {
					return nil
				}
				return j
			default:
			}
			if i%16 == 0 {
				if time.Since(t0) > workerSpin {
					return nil
				}
				runtime.Gosched()
			}
		}
		spinPause(8)
	}
}

// job is a recycled job with room for shares shares.
func (p *Pool) job(shares int) *poolJob {
	j, _ := p.free.Get().(*poolJob)
	if j == nil {
		j = &poolJob{done: make(chan struct{}, 1), home: &p.free}
	}
	if cap(j.claims) < shares {
		j.claims = make([]shareClaim, shares)
		j.bounds = make([]int, shares+1)
	}
	j.claims, j.bounds = j.claims[:shares], j.bounds[:shares+1]
	return j
}

// start hands j to up to n workers (starting them on first use) and
// returns how many took it; none once the pool is closed.
func (p *Pool) start(j *poolJob, n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0
	}
	if p.ws == nil || cap(p.ws.jobs) < n {
		// (Threads grew: a new set takes over; the old one's workers end
		// once they have drained its channel.)
		if p.ws != nil {
			p.ws.stop()
		}
		w := &workerSet{jobs: make(chan *poolJob, n)}
		for i := 0; i < n; i++ {
			go poolWorker(w.jobs)
		}
		runtime.AddCleanup(p, func(w *workerSet) { w.stop() }, w)
		p.ws = w
	}
	sent := 0
	for ; sent < n; sent++ {
		select {
		case p.ws.jobs <- j:
		default: // every worker has a job waiting: the caller does more
			return sent
		}
	}
	return sent
}

// threads is how many goroutines n indices of work each get.
func (p *Pool) threads(n, work int) int {
	threads := max(p.Threads, 1)
	work = max(work, 1)
	return max(min(threads, n*work/minWork, n), 1)
}

// Parallel splits [0, n) into contiguous ranges and runs fn on each, on
// up to Threads goroutines; work is the cost of one index, for sizing the
// shares and claims. The caller takes ranges too, so Parallel never waits
// on a busy worker for work it could do itself, and nested calls cannot
// deadlock.
func (p *Pool) Parallel(n, work int, fn func(lo, hi int)) {
	threads := p.threads(n, work)
	if threads <= 1 || n < 2 {
		fn(0, n)
		return
	}
	j := p.job(threads)
	for s := range j.bounds {
		j.bounds[s] = s * n / threads
	}
	p.runJob(j, max(1, unitWork/max(work, 1)), fn)
}

// parallelRows is Parallel over the rows of t.ms taken in order (t.start
// their first global rows), fn reading mult rows of that shape per row (a
// gate's and an up's: 2). The shares get about the same weight bytes
// each, each boundary the first row that starts at or after the page
// boundary nearest the even split, so that no two goroutines stream the
// same page (but for the one a row straddles). Each share's rows of each
// matrix are a rowPiece walked in lanes, the streams of the matrix type's
// row kernel (kernelSet.lanes): fn's indices are the pieces' steps
// (t.pieces, in order), one row of every lane, so that the claims of a
// share from the front continue the same streams where the last claim
// left them instead of starting new ones; units are about unitBytes.
func (p *Pool) parallelRows(t *task, mult int, fn func(lo, hi int)) {
	ms, start := t.ms, t.start
	n := start[len(ms)]
	maxStep, total := 0, 0
	for _, m := range ms {
		maxStep = max(maxStep, p.rowLanes(m)*m.RowBytes)
		total += m.Rows * m.RowBytes
	}
	// A row's work in weights, as Parallel counts it.
	threads := p.threads(n, max(1, mult*total/max(n, 1)))
	if threads <= 1 || n < 2 {
		t.rb = append(t.rb[:0], 0, n)
		fn(0, t.pieceShares(p, t.rb, nil))
		return
	}
	j := p.job(threads)
	t.rb = slices.Grow(t.rb[:0], threads+1)[:threads+1] // rowBounds sets every bound
	rowBounds(ms, start, total, t.rb)
	t.pieceShares(p, t.rb, j.bounds)
	p.runJob(j, max(1, unitBytes/(mult*maxStep)), fn)
}

// rowPiece is rows [row, row+rows) of matrix mat of a task, inside one
// share, in lanes lanes of lane = rows/lanes rows: step i < lane is row
// row+l*lane+i of every lane l, the step after (when lanes*lane < rows)
// the rows after the lanes. Global steps [step, step+steps) are its.
type rowPiece struct {
	mat, row, rows, lanes, lane, step, steps int
}

// rowLanes is how many lanes parallelRows walks m's rows in: the streams
// of its type's row kernel (1 without one, or with p.plainRows).
func (p *Pool) rowLanes(m *Matrix) int {
	if l := host.lanes[m.Type]; l > 1 && host.q8lanes[m.Type] != nil && !p.plainRows {
		return l
	}
	return 1
}

// pieceShares sets t.pieces to the rows of the shares rb (global rows,
// len(rb)-1 shares) cut at the matrices' ends, and b (when not nil; len
// rb) to the shares' bounds in steps; it returns the steps in all.
func (t *task) pieceShares(p *Pool, rb, b []int) int {
	t.pieces = t.pieces[:0]
	step, i := 0, 0
	for s := 0; s+1 < len(rb); s++ {
		if b != nil {
			b[s] = step
		}
		for g := rb[s]; g < rb[s+1]; {
			for g >= t.start[i+1] {
				i++
			}
			m := t.ms[i]
			end := min(rb[s+1], t.start[i+1])
			pc := rowPiece{mat: i, row: g - t.start[i], rows: end - g, lanes: p.rowLanes(m), step: step}
			pc.lane = pc.rows / pc.lanes
			pc.steps = pc.lane
			if pc.lanes*pc.lane < pc.rows {
				pc.steps++
			}
			t.pieces = append(t.pieces, pc)
			step += pc.steps
			g = end
		}
	}
	if b != nil {
		b[len(rb)-1] = step
	}
	return step
}

// piece is the index of the piece holding step g (of t.pieces, in order).
func (t *task) piece(g int) int {
	lo, hi := 0, len(t.pieces)
	for lo < hi {
		k := (lo + hi) / 2
		if pc := &t.pieces[k]; g >= pc.step+pc.steps {
			lo = k + 1
		} else {
			hi = k
		}
	}
	return lo
}

// dot sets out[r] = DotQ8(row r of m, x) for the rows of the piece's
// steps [a, b): the lanes' rows in one call of k's lane kernel, the rows
// after the lanes in one of its row kernel.
func (pc *rowPiece) dot(k *kernelSet, m *Matrix, a, b int, x *Q8Row, out []float32) {
	if c := min(b, pc.lane); a < c {
		if pc.lanes == 1 {
			k.dotQ8Range(m, pc.row+a, pc.row+c, x, out)
		} else if f := k.q8lanes[m.Type]; f == nil || !f(m, pc.row+a, c-a, pc.lane, x, out) {
			for l := 0; l < pc.lanes; l++ {
				r := pc.row + l*pc.lane
				k.dotQ8Range(m, r+a, r+c, x, out)
			}
		}
	}
	if b > pc.lane {
		k.dotQ8Range(m, pc.row+pc.lanes*pc.lane, pc.row+pc.rows, x, out)
	}
}

// ranges is how many row ranges the piece's steps [a, b) are (rowRange's
// k), one a lane and one for the rows after the lanes.
func (pc *rowPiece) ranges(a, b int) int {
	n := 0
	if a < min(b, pc.lane) {
		n = pc.lanes
	}
	if b > pc.lane {
		n++
	}
	return n
}

// rowRange is the k-th of the row ranges of steps [a, b) (k < ranges).
func (pc *rowPiece) rowRange(a, b, k int) (lo, hi int) {
	if a < min(b, pc.lane) && k < pc.lanes {
		r := pc.row + k*pc.lane
		return r + a, r + min(b, pc.lane)
	}
	return pc.row + pc.lanes*pc.lane, pc.row + pc.rows
}

// rowBounds sets the len(b)-1 shares' bounds b over the rows of ms (as
// parallelRows numbers them; total is their bytes): boundary s the first
// row starting at or after the page boundary nearest s/shares of the bytes.
func rowBounds(ms []*Matrix, start []int, total int, b []int) {
	shares := len(b) - 1
	b[0], b[shares] = 0, start[len(ms)]
	i, before := 0, 0 // the matrix the next boundary falls in, the bytes before it
	for s := 1; s < shares; s++ {
		at := s * total / shares
		for at >= before+ms[i].Rows*ms[i].RowBytes && i+1 < len(ms) {
			before += ms[i].Rows * ms[i].RowBytes
			i++
		}
		b[s] = max(b[s-1], start[i]+pageRow(ms[i], at-before))
	}
}

// pageRow is the first row of m that starts at or after the page boundary
// nearest byte off of its data (m.Rows when none does).
func pageRow(m *Matrix, off int) int {
	base := int(uintptr(unsafe.Pointer(unsafe.SliceData(m.Data))))
	page := (base+off+pageBytes/2)/pageBytes*pageBytes - base
	if page <= 0 {
		return 0
	}
	return min((page+m.RowBytes-1)/m.RowBytes, m.Rows)
}

// runJob runs j (its bounds set) in units of unit indices: the caller
// takes share 0, workers the others as they join.
func (p *Pool) runJob(j *poolJob, unit int, fn func(lo, hi int)) {
	shares := len(j.claims)
	total := 0
	for s := 0; s < shares; s++ {
		u := (j.bounds[s+1] - j.bounds[s] + unit - 1) / unit
		j.claims[s].v.Store(uint64(u) << 32)
		total += u
	}
	j.fn, j.unit = fn, unit
	j.joined.Store(0)
	j.pending.Store(int64(total))
	j.refs.Store(int32(shares))
	if total == 0 {
		j.done <- struct{}{}
	}
	if sent := p.start(j, shares-1); sent < shares-1 {
		j.refs.Add(int32(sent - (shares - 1)))
	}
	p.passes.Add(1)
	j.run(0)
	j.wait(&p.waited)
	j.release()
}

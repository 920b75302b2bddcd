package engine

import "github.com/stratactl/stratactl/kernels"

// scratch is a session's working memory for one batch of the forward
// pass, reused from batch to batch so that a steady-state decode step
// allocates nothing and a prompt's layers do not each allocate (and the
// runtime clear) their buffers: at 512 tokens the routed experts' outputs
// alone are 42 MB a layer. Reset at the batch's start, it hands out
// slices and activation wrappers in turn, each valid until the next reset;
// each layer rewinds to the mark after the batch's own buffers, so what it
// holds is bounded by one layer's work at Session.MaxBatch tokens, not by
// the model. When a layer needs more than the block holds it takes a
// larger block (the slices already handed out stay valid in the old one),
// so after a step or two of a shape the block fits. Slices come uncleared.
type scratch struct {
	f     block[float32]
	i32   block[int32]
	acts  []*acts
	nacts int

	// The MoE block's bookkeeping, resized per layer.
	users    [][]int // per expert, its (token, rank) slots
	distinct []int
	order    []int         // expertsParallel's experts, largest first
	experts  []*expertBufs // expertRun's buffers, one per goroutine
	first    []int         // per row, addRowsFinite's or combineBatch's first non-finite index
	shared   sharedJob     // expertsParallel's shared expert
	guess    []int         // read-ahead's
	taken    []bool
	seen     []bool
	now      []int
	left     []int
	es       []int
	exs      []*Expert
	scores   []float32 // a decode token's attention scores, per head
	// The rotary angles of position ropePos (when ropeSet), which every
	// layer of a decode step rotates by.
	ropeCos, ropeSin []float32
	ropePos          int
	ropeSet          bool
	// matVecs' argument lists.
	ms, gates, ups []*kernels.Matrix
	as             []*acts
	outs, outs2    [][]float32
	xq             []*kernels.Q8Row
	vecs           matVecArgs
	// The passes a decode step hands the pool, their functions bound once.
	glu   gluPass
	attn  attnPass
	delta deltaPass
	conv  convPass
}

// reset starts a batch: everything handed out before may be reused.
func (sc *scratch) reset() { sc.rewind(scratchMark{}) }

// scratchMark is how much of a scratch was handed out at some point.
type scratchMark struct{ f, i32, acts int }

// mark is the scratch's current mark.
func (sc *scratch) mark() scratchMark { return scratchMark{sc.f.off, sc.i32.off, sc.nacts} }

// rewind hands out again what was handed out after mark m (taken in
// the same block: after a growth the old block keeps what came before).
func (sc *scratch) rewind(m scratchMark) { sc.f.off, sc.i32.off, sc.nacts = m.f, m.i32, m.acts }

// floats is n float32s, uncleared.
func (sc *scratch) floats(n int) []float32 { return sc.f.take(n) }

// zeros is n float32s set to zero.
func (sc *scratch) zeros(n int) []float32 {
	s := sc.floats(n)
	clear(s)
	return s
}

// int32s is n int32s, uncleared.
func (sc *scratch) int32s(n int) []int32 { return sc.i32.take(n) }

// block hands out consecutive slices of buf; off is the next free one.
type block[T any] struct {
	buf []T
	off int
}

// take is the next n elements, from a larger new buffer when buf has no
// room left (what was handed out stays in the old one).
func (b *block[T]) take(n int) []T {
	if b.off+n > len(b.buf) {
		b.buf = make([]T, max(2*len(b.buf), b.off+n, 1<<10))
		b.off = 0
	}
	s := b.buf[b.off : b.off+n : b.off+n]
	b.off += n
	return s
}

// newActs is newActs(x, n, mode) in a recycled wrapper whose quantized
// rows keep their buffers from the batch before.
func (sc *scratch) newActs(x []float32, n int, mode Mode) *acts {
	if sc.nacts == len(sc.acts) {
		sc.acts = append(sc.acts, new(acts))
	}
	a := sc.acts[sc.nacts]
	sc.nacts++
	a.rewrap(x, n, mode)
	return a
}

// expertBufs is n goroutines' expertRun buffers, kept from call to call.
func (sc *scratch) expertBufs(n int) []*expertBufs {
	sc.experts = reuseRows(sc.experts, max(n, len(sc.experts)))
	return sc.experts[:n]
}

// bools is n false values, reusing buf.
func bools(buf *[]bool, n int) []bool {
	if cap(*buf) < n {
		*buf = make([]bool, n)
	}
	s := (*buf)[:n]
	clear(s)
	return s
}

// grow is *buf resized to n elements (the old contents, where kept, are
// the caller's to overwrite).
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// reuseRows is n non-nil rows, spare's where it has them.
func reuseRows[R any](spare []*R, n int) []*R {
	if cap(spare) < n {
		spare = append(spare[:cap(spare)], make([]*R, n-cap(spare))...)
	}
	spare = spare[:n]
	for i, r := range spare {
		if r == nil {
			spare[i] = new(R)
		}
	}
	return spare
}

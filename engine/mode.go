package engine

import (
	"fmt"

	"github.com/stratactl/stratactl/kernels"
)

// Mode selects the arithmetic of the weight-matrix products.
type Mode int

const (
	// Fast multiplies weights whose type has a quantized dot product
	// (kernels.VecDotQ8) with activations quantized to Q8_0 once per row,
	// and BF16 weights with activations rounded to bfloat16 once per row
	// (kernels.DotBF16), the quantized row reused by every matrix and
	// expert reading it; in a batch each weight row meets all the batch's
	// rows (MatMulQ8, MatMulBF16). Products on other types stay exact. Each
	// output element is one kernels.DotQ8 or DotBF16 of one weight row and
	// one quantized row, so the bits do not depend on the thread count or
	// on how tokens are batched. The experts' gated activation silu(g) * u
	// and attention's softmax take float32 exponentials (kernels.SwiGLU,
	// ExpF32) where the exact mode's round float64 ones. The default (the
	// zero Mode).
	Fast Mode = iota
	// Exact multiplies every weight row, decoded to float32, with float32
	// activations: the reference mode, which every test against the
	// reference models' logits and statistics selects explicitly.
	Exact
)

func (m Mode) String() string {
	switch m {
	case Exact:
		return "exact"
	case Fast:
		return "fast"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// acts is a batch of activation rows as the products read them: float32
// rows of n and, in fast mode, their Q8_0 quantization and their bfloat16
// rounding, each made on first use and kept for every later product
// reading the same rows.
type acts struct {
	x    []float32
	n    int
	rows int
	fast bool
	q    []*kernels.Q8Row
	b    []*kernels.BF16Row
	// A gathered batch takes its rows from rows idx of from: its quantized
	// rows shared, its float32 rows copied to buf on first use (f32).
	from *acts
	idx  []int
	buf  []float32
	// Rows whose buffers the next quantization reuses (rewrap).
	spareQ []*kernels.Q8Row
	spareB []*kernels.BF16Row
	// A gathered batch's lists of its source's rows, reused by gatherInto.
	gq []*kernels.Q8Row
	gb []*kernels.BF16Row
}

// newActs wraps the rows x (len a multiple of n) for mode mode.
func newActs(x []float32, n int, mode Mode) *acts {
	a := makeActs(x, n, mode)
	return &a
}

func makeActs(x []float32, n int, mode Mode) acts {
	return acts{x: x, n: n, rows: len(x) / n, fast: mode == Fast}
}

// rewrap makes a the wrapper newActs(x, n, mode) would make, keeping the
// buffers of a's quantized rows for its next quantization.
func (a *acts) rewrap(x []float32, n int, mode Mode) {
	q, b := a.spareQ, a.spareB
	if a.from == nil {
		q, b = max2(a.q, q), max2(a.b, b)
	}
	*a = makeActs(x, n, mode)
	a.spareQ, a.spareB = q, b
}

// max2 is the longer of two row lists.
func max2[R any](x, y []*R) []*R {
	if len(x) >= len(y) {
		return x
	}
	return y
}

// T is the number of rows.
func (a *acts) T() int { return a.rows }

// f32 is the float32 rows [T][n]; a gathered batch copies them from its
// source on the first call.
func (a *acts) f32() []float32 {
	if a.x == nil && a.from != nil {
		x := a.buf[:a.rows*a.n]
		src := a.from.f32()
		for j, t := range a.idx {
			copy(x[j*a.n:(j+1)*a.n], src[t*a.n:(t+1)*a.n])
		}
		a.x = x
	}
	return a.x
}

// q8 is the rows quantized to Q8_0, quantized on the first call.
func (a *acts) q8() []*kernels.Q8Row {
	if a.q == nil {
		if a.from != nil {
			a.q = grow(&a.gq, a.T())
		} else {
			a.q = reuseRows(a.spareQ, a.T())
		}
		for t, r := range a.q {
			if a.from != nil {
				a.q[t] = a.from.q8()[a.idx[t]]
				continue
			}
			if err := kernels.QuantizeQ8Row(a.f32()[t*a.n:(t+1)*a.n], r); err != nil {
				// Only reached through a matrix that CanDotQ8 (n a multiple
				// of 32), so this is a broken invariant, not bad input.
				panic("engine: " + err.Error())
			}
		}
	}
	return a.q
}

// bf16 is the rows rounded to bfloat16, rounded on the first call.
func (a *acts) bf16() []*kernels.BF16Row {
	if a.b == nil {
		if a.from != nil {
			a.b = grow(&a.gb, a.T())
		} else {
			a.b = reuseRows(a.spareB, a.T())
		}
		for t := range a.b {
			if a.from != nil {
				a.b[t] = a.from.bf16()[a.idx[t]]
				continue
			}
			kernels.QuantizeBF16Row(a.f32()[t*a.n:(t+1)*a.n], a.b[t])
		}
	}
	return a.b
}

// gatherInto makes g the rows idx of a and returns it. Its quantized and
// bfloat16 rows are a's, shared, so no row is quantized twice; its float32
// rows are copied to buf (len >= len(idx)*n) only when a product reads
// them (f32): in fast mode a product on a quantized type reads the shared
// quantized rows in place. g's lists of shared rows are reused (its own
// quantized rows, if it had any, are dropped: g is a gathered batch's
// wrapper from then on).
func (a *acts) gatherInto(g *acts, idx []int, buf []float32) *acts {
	gq, gb := g.gq, g.gb
	*g = acts{n: a.n, rows: len(idx), fast: a.fast, from: a, idx: idx, buf: buf, gq: gq, gb: gb}
	return g
}

// prepare makes the rows in the form a product of mat with a reads
// (quantized, rounded or float32), a batch's on pool's goroutines, so
// that goroutines running such products on a, or on batches gathered
// from it, only read them.
func (a *acts) prepare(pool *kernels.Pool, mat *kernels.Matrix) {
	a.quantizeAll(pool, mat)
	switch {
	case a.useBF16(mat):
		a.bf16()
	case a.useQ8(mat):
		a.q8()
	default:
		a.f32()
	}
}

// quantizeAll quantizes (or rounds) a's own rows for mat's product, when
// there are several, on pool's goroutines: the rows of a batch, which q8
// and bf16 would take one after the other. Each row is the same either
// way.
func (a *acts) quantizeAll(pool *kernels.Pool, mat *kernels.Matrix) {
	q, b := a.rowsFor(mat)
	if q == nil && b == nil {
		return
	}
	work := 2 * a.n // a row's rounding
	if q != nil {
		work = 4 * a.n // a row's quantization
	}
	pool.Parallel(a.T(), work, func(lo, hi int) { a.quantizeRows(q, b, lo, hi) })
	a.setRows(q, b)
}

// rowsFor is the rows quantizeAll(pool, mat) would fill, to be filled by
// quantizeRows and set by setRows instead (as part of another pass over
// the rows): new Q8_0 or bfloat16 rows, the spare ones reused; none where
// quantizeAll would do nothing or mat is nil.
func (a *acts) rowsFor(mat *kernels.Matrix) ([]*kernels.Q8Row, []*kernels.BF16Row) {
	if mat == nil || a.from != nil || a.T() < 2 {
		return nil, nil
	}
	switch {
	case a.useBF16(mat):
		if a.b == nil {
			return nil, reuseRows(a.spareB, a.T())
		}
	case a.useQ8(mat):
		if a.q == nil {
			return reuseRows(a.spareQ, a.T()), nil
		}
	}
	return nil, nil
}

// quantizeRows quantizes (or rounds) a's rows [lo, hi) into rowsFor's
// rows q (or b), as quantizeAll does.
func (a *acts) quantizeRows(q []*kernels.Q8Row, b []*kernels.BF16Row, lo, hi int) {
	n, x := a.n, a.x
	for t := lo; t < hi && q != nil; t++ {
		if err := kernels.QuantizeQ8Row(x[t*n:(t+1)*n], q[t]); err != nil {
			panic("engine: " + err.Error()) // as in q8
		}
	}
	for t := lo; t < hi && b != nil; t++ {
		kernels.QuantizeBF16Row(x[t*n:(t+1)*n], b[t])
	}
}

// setRows makes rowsFor's rows, every one filled by quantizeRows, a's.
func (a *acts) setRows(q []*kernels.Q8Row, b []*kernels.BF16Row) {
	if q != nil {
		a.q = q
	}
	if b != nil {
		a.b = b
	}
}

// useQ8 reports whether the product of mat with a takes the quantized path.
func (a *acts) useQ8(mat *kernels.Matrix) bool { return a.fast && mat.CanDotQ8() }

// useBF16 reports whether the product of mat with a takes the bfloat16 path.
func (a *acts) useBF16(mat *kernels.Matrix) bool { return a.fast && mat.CanDotBF16() }

// matMul sets out[t*Rows+r] = row r of mat . row t of a, in a's mode.
func matMul(pool *kernels.Pool, mat *kernels.Matrix, a *acts, out []float32) {
	T := a.T()
	a.quantizeAll(pool, mat)
	switch {
	case a.useBF16(mat):
		pool.MatMulBF16(mat, a.bf16(), out)
	case !a.useQ8(mat):
		// In blocks of exactBlock rows, so that the rows each weight row
		// meets stay in cache (a batch of thousands streamed them all
		// from memory once per weight row); each element is the same.
		x := a.f32()
		for t0 := 0; t0 < T; t0 += exactBlock {
			t1 := min(t0+exactBlock, T)
			pool.MatMul(mat, x[t0*a.n:t1*a.n], t1-t0, out[t0*mat.Rows:t1*mat.Rows])
		}
	case T == 1:
		pool.MatVecQ8(mat, a.q8()[0], out)
	default:
		pool.MatMulQ8(mat, a.q8(), out)
	}
}

// exactBlock is how many activation rows one exact product takes at a
// time: 64 rows of 2560 float32s are 640 KiB.
const exactBlock = 64

// matMulTo is matMul with row t of the output in outs[t] (each at least
// mat.Rows long): the quantized path writes them in place, the others
// through buf (at least T*Rows long), copied.
func matMulTo(pool *kernels.Pool, mat *kernels.Matrix, a *acts, outs [][]float32, buf []float32) {
	if a.useQ8(mat) && !a.useBF16(mat) && a.T() > 1 {
		a.quantizeAll(pool, mat)
		pool.MatMulQ8To(mat, a.q8(), outs)
		return
	}
	R := mat.Rows
	buf = buf[:a.T()*R]
	matMul(pool, mat, a, buf)
	for t, o := range outs {
		copy(o[:R], buf[t*R:(t+1)*R])
	}
}

// matVecArgs are matVecs' argument lists, kept from call to call (a
// session's scratch holds one) so that a decode step's products allocate
// none.
type matVecArgs struct {
	as               []*acts
	exact, qm, bm    []*kernels.Matrix
	exactX, exactOut [][]float32
	qout, bout       [][]float32
	qx               []*kernels.Q8Row
	bx               []*kernels.BF16Row
}

// matVecs sets outs[i] = ms[i] . as[i] for single rows, in one parallel pass
// over all the matrices' rows (the small products of one decode step), each
// element the bits matMul would give. v holds the argument lists (nil: new
// ones).
func matVecs(pool *kernels.Pool, ms []*kernels.Matrix, as []*acts, outs [][]float32, v *matVecArgs) {
	if v == nil {
		v = new(matVecArgs)
	}
	v.exact, v.exactX, v.exactOut = v.exact[:0], v.exactX[:0], v.exactOut[:0]
	v.qm, v.qx, v.qout = v.qm[:0], v.qx[:0], v.qout[:0]
	v.bm, v.bx, v.bout = v.bm[:0], v.bx[:0], v.bout[:0]
	for i, mat := range ms {
		if as[i].useBF16(mat) {
			v.bm = append(v.bm, mat)
			v.bx = append(v.bx, as[i].bf16()[0])
			v.bout = append(v.bout, outs[i])
		} else if as[i].useQ8(mat) {
			v.qm = append(v.qm, mat)
			v.qx = append(v.qx, as[i].q8()[0])
			v.qout = append(v.qout, outs[i])
		} else {
			v.exact = append(v.exact, mat)
			v.exactX = append(v.exactX, as[i].f32())
			v.exactOut = append(v.exactOut, outs[i])
		}
	}
	if len(v.exact) > 0 {
		pool.MatVecs(v.exact, v.exactX, v.exactOut)
	}
	if len(v.qm) > 0 {
		pool.MatVecsQ8(v.qm, v.qx, v.qout)
	}
	if len(v.bm) > 0 {
		pool.MatVecsBF16(v.bm, v.bx, v.bout)
	}
}

// matVecsOrMul computes outs[i] = ms[i] a for a's rows: in one parallel pass
// for a single row, or for a batch against matrices that all take its
// quantized (or rounded) rows, else a matMul each (the same dot per element either
// way). v is as for matVecs.
func matVecsOrMul(pool *kernels.Pool, ms []*kernels.Matrix, a *acts, outs [][]float32, v *matVecArgs) {
	if a.T() == 1 {
		if v == nil {
			v = new(matVecArgs)
		}
		v.as = v.as[:0]
		for range ms {
			v.as = append(v.as, a)
		}
		matVecs(pool, ms, v.as, outs, v)
		return
	}
	// A batch against matrices that all take its quantized (or rounded)
	// rows: one pass over all their rows (MatMulsQ8, MatMulsBF16, each
	// element MatMulQ8's or MatMulBF16's).
	q8, bf := len(ms) > 1, len(ms) > 1
	for _, mat := range ms {
		q8 = q8 && a.useQ8(mat) && !a.useBF16(mat) && mat.Cols == ms[0].Cols
		bf = bf && a.useBF16(mat) && mat.Cols == ms[0].Cols
	}
	switch {
	case q8:
		a.quantizeAll(pool, ms[0])
		pool.MatMulsQ8(ms, a.q8(), outs)
		return
	case bf:
		a.quantizeAll(pool, ms[0])
		pool.MatMulsBF16(ms, a.bf16(), outs)
		return
	}
	for i, mat := range ms {
		matMul(pool, mat, a, outs[i])
	}
}

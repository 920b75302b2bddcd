package kernels

import (
	"fmt"

	"github.com/stratactl/stratactl/quant"
)

// Matrix is a weight matrix in its stored type, used in place: Rows rows of
// Cols weights, row r at Data[r*RowBytes:].
type Matrix struct {
	Type     quant.Type
	Data     []byte
	Rows     int
	Cols     int
	RowBytes int
}

// NewMatrix checks that data holds rows x cols weights of type t and that
// the type can be decoded.
func NewMatrix(t quant.Type, data []byte, cols, rows int) (Matrix, error) {
	if cols <= 0 || rows <= 0 {
		return Matrix{}, fmt.Errorf("matrix of %d x %d", rows, cols)
	}
	rb, err := quant.RowBytes(t, int64(cols))
	if err != nil {
		return Matrix{}, err
	}
	if !CanDecode(t) {
		return Matrix{}, fmt.Errorf("no kernel for type %s", t)
	}
	if int64(len(data)) < rb*int64(rows) {
		return Matrix{}, fmt.Errorf("%d rows of %d %s weights need %d bytes, have %d", rows, cols, t, rb*int64(rows), len(data))
	}
	return Matrix{Type: t, Data: data[:rb*int64(rows)], Rows: rows, Cols: cols, RowBytes: int(rb)}, nil
}

// Row is the stored bytes of row r.
func (m *Matrix) Row(r int) []byte { return m.Data[r*m.RowBytes : (r+1)*m.RowBytes] }

// DecodeRowTo writes row r as float32 into dst (len Cols).
func (m *Matrix) DecodeRowTo(r int, dst []float32) error {
	return DecodeRow(m.Type, m.Row(r), dst[:m.Cols])
}

// MatVec sets out[r] = row r . x for every row (len(x) = Cols).
func (p *Pool) MatVec(m *Matrix, x, out []float32) {
	p.MatMul(m, x, 1, out)
}

// MatMul multiplies every row by each of ntok inputs, xs[t*Cols:(t+1)*Cols],
// into out[t*Rows+r]. With several inputs each row is decoded once and
// reused, which is what makes batched prefill cheaper than token by token;
// the bits are the same either way (see dot.go).
func (p *Pool) MatMul(m *Matrix, xs []float32, ntok int, out []float32) {
	cols, rows := m.Cols, m.Rows
	if len(xs) < ntok*cols || len(out) < ntok*rows {
		panic(fmt.Sprintf("kernels: MatMul shapes: %d inputs of %d, %d rows, len(xs)=%d len(out)=%d", ntok, cols, rows, len(xs), len(out)))
	}
	t := p.task()
	t.m, t.x, t.ntok, t.out, t.fused = m, xs, ntok, out, host.fuses(m.Type, cols)
	p.Parallel(rows, cols*ntok, t.matMul)
	p.putTask(t)
}

func (t *task) runMatMul(lo, hi int) {
	p, m, xs, ntok, out := t.p, t.m, t.x, t.ntok, t.out
	cols, rows := m.Cols, m.Rows
	bp := p.buf(cols)
	buf := *bp
	if ntok == 1 && m.Type == quant.F32 && host.dotF32x2 != nil {
		// Float32 rows (the router) two at a time, in two lanes: rows
		// lo+i and lo+half+i, two sequential streams of weights per
		// thread; each row's dot the bits of Dot.
		half := (hi - lo) / 2
		for i := lo; i < lo+half; i++ {
			host.dotF32Rows2(m.Row(i), m.Row(i+half), xs[:cols], buf, &out[i], &out[i+half])
		}
		lo += 2 * half
	}
	for r := lo; r < hi; r++ {
		row := m.Row(r)
		if ntok == 1 {
			out[r] = Dot(m.Type, row, xs[:cols], buf)
			continue
		}
		if t.fused && ntok <= 2 {
			for k := 0; k < ntok; k++ {
				out[k*rows+r] = Dot(m.Type, row, xs[k*cols:(k+1)*cols], buf)
			}
			continue
		}
		if err := DecodeRow(m.Type, row, buf); err != nil {
			panic("kernels: MatMul on an unchecked matrix: " + err.Error())
		}
		for k := 0; k < ntok; k++ {
			out[k*rows+r] = DotF32(buf, xs[k*cols:(k+1)*cols])
		}
	}
	p.scratch.Put(bp)
}

// MatVecs computes outs[i][r] = row r of ms[i] . xs[i] for several matrices
// in one parallel pass over all their rows: one decode step has dozens of
// small products (the experts of a layer, q/k/v), and one pass instead of
// one each saves the goroutine start-ups. The bits are MatVec's.
func (p *Pool) MatVecs(ms []*Matrix, xs, outs [][]float32) {
	work := 0
	for i, m := range ms {
		if len(xs[i]) < m.Cols || len(outs[i]) < m.Rows {
			panic(fmt.Sprintf("kernels: MatVecs shapes: matrix %d is %d x %d, len(x)=%d len(out)=%d", i, m.Rows, m.Cols, len(xs[i]), len(outs[i])))
		}
		work = max(work, m.Cols)
	}
	t := p.task()
	t.ms, t.xs, t.outs = append(t.ms, ms...), append(t.xs, xs...), append(t.outs, outs...)
	t.rowStarts()
	p.Parallel(t.start[len(ms)], work, t.matVecs)
	p.putTask(t)
}

func (t *task) runMatVecs(lo, hi int) {
	ms, start, xs, outs := t.ms, t.start, t.xs, t.outs
	maxCols := 0
	for _, m := range ms {
		maxCols = max(maxCols, m.Cols)
	}
	bp := t.p.buf(maxCols)
	buf := *bp
	i := 0
	for g := lo; g < hi; g++ {
		for g >= start[i+1] {
			i++
		}
		m := ms[i]
		r := g - start[i]
		outs[i][r] = Dot(m.Type, m.Row(r), xs[i][:m.Cols], buf)
	}
	t.p.scratch.Put(bp)
}

// CanDotQ8 reports whether MatVecQ8 and MatMulQ8 take m (its type pairs
// with Q8_0 activations and its rows are whole 32-weight sub-blocks).
func (m *Matrix) CanDotQ8() bool { return VecDotQ8(m.Type) && m.Cols%32 == 0 }

func (m *Matrix) checkQ8(op string, x *Q8Row) {
	if !m.CanDotQ8() || x.Len() != m.Cols {
		panic(fmt.Sprintf("kernels: %s on %s, %d x %d, with %d activations", op, m.Type, m.Rows, m.Cols, x.Len()))
	}
}

// MatVecQ8 sets out[r] = DotQ8(m.Type, row r, x) for every row: the fast
// mode's matrix-vector product, with the bits of DotQ8 at any thread count.
func (p *Pool) MatVecQ8(m *Matrix, x *Q8Row, out []float32) {
	m.checkQ8("MatVecQ8", x)
	t := p.task()
	t.ms, t.q8, t.outs = append(t.ms, m), append(t.q8, x), append(t.outs, out[:m.Rows])
	t.rowStarts()
	p.parallelRows(t, 1, t.matVecsQ8)
	p.putTask(t)
}

// dotQ8Range sets out[r] = DotQ8(m.Type, row r, x) for r in [lo, hi): by
// the type's multi-row kernel where k has one that takes x, else row by row.
func (k *kernelSet) dotQ8Range(m *Matrix, lo, hi int, x *Q8Row, out []float32) {
	if lo >= hi {
		return
	}
	if f := k.q8rows[m.Type]; f != nil && f(m, lo, hi, x, out) {
		return
	}
	// Row by row, the shapes checked and the kernel looked up once.
	checkDotQ8(m.Type, m.RowBytes, x)
	f := k.q8dot[m.Type]
	for r := lo; r < hi; r++ {
		out[r] = dotQ8With(f, m.Type, m.Row(r), x)
	}
}

// MatVecsQ8 is MatVecs in the fast mode: outs[i][r] = DotQ8(row r of ms[i],
// xs[i]) for several matrices in one parallel pass over all their rows,
// with MatVecQ8's bits.
func (p *Pool) MatVecsQ8(ms []*Matrix, xs []*Q8Row, outs [][]float32) {
	for i, m := range ms {
		m.checkQ8("MatVecsQ8", xs[i])
		if len(outs[i]) < m.Rows {
			panic(fmt.Sprintf("kernels: MatVecsQ8: matrix %d has %d rows, len(out)=%d", i, m.Rows, len(outs[i])))
		}
	}
	t := p.task()
	t.ms, t.q8, t.outs = append(t.ms, ms...), append(t.q8, xs...), append(t.outs, outs...)
	t.rowStarts()
	p.parallelRows(t, 1, t.matVecsQ8)
	p.putTask(t)
}

// runMatVecsQ8 runs the rows of parallelRows' steps [lo, hi).
func (t *task) runMatVecsQ8(lo, hi int) {
	for k := t.piece(lo); k < len(t.pieces) && t.pieces[k].step < hi; k++ {
		pc := &t.pieces[k]
		a, b := max(lo, pc.step)-pc.step, min(hi, pc.step+pc.steps)-pc.step
		pc.dot(&host, t.ms[pc.mat], a, b, t.q8[pc.mat], t.outs[pc.mat])
	}
}

// MatVecsQ8GLU sets gs[i][r] = DotQ8(row r of gates[i], xs[i]) and
// us[i][r] = DotQ8(row r of ups[i], xs[i]) for every row of every pair, in
// one parallel pass over the gates' rows in which each range computes the
// gate's and the up's rows of its part and then calls glu(i, lo, hi) for
// them: the gated activation (SwiGLU) runs in the pass, on every thread,
// instead of after it on one. ups[i] has gates[i]'s shape. The bits are
// MatVecQ8's; glu sees every row of every pair once, in no fixed order.
func (p *Pool) MatVecsQ8GLU(gates, ups []*Matrix, xs []*Q8Row, gs, us [][]float32, glu func(i, lo, hi int)) {
	for i, m := range gates {
		m.checkQ8("MatVecsQ8GLU", xs[i])
		ups[i].checkQ8("MatVecsQ8GLU", xs[i])
		if ups[i].Rows != m.Rows || len(gs[i]) < m.Rows || len(us[i]) < m.Rows {
			panic(fmt.Sprintf("kernels: MatVecsQ8GLU: pair %d has %d and %d rows, len(g)=%d len(u)=%d", i, m.Rows, ups[i].Rows, len(gs[i]), len(us[i])))
		}
	}
	t := p.task()
	t.ms, t.ups, t.q8, t.outs, t.us, t.glu = append(t.ms, gates...), append(t.ups, ups...), append(t.q8, xs...), append(t.outs, gs...), append(t.us, us...), glu
	t.rowStarts()
	p.parallelRows(t, 2, t.matVecsQ8GLU)
	p.putTask(t)
}

// runMatVecsQ8GLU runs the gates' and ups' rows of parallelRows' steps
// [lo, hi), then the activation on each of their row ranges.
func (t *task) runMatVecsQ8GLU(lo, hi int) {
	for k := t.piece(lo); k < len(t.pieces) && t.pieces[k].step < hi; k++ {
		pc := &t.pieces[k]
		i := pc.mat
		a, b := max(lo, pc.step)-pc.step, min(hi, pc.step+pc.steps)-pc.step
		pc.dot(&host, t.ms[i], a, b, t.q8[i], t.outs[i])
		pc.dot(&host, t.ups[i], a, b, t.q8[i], t.us[i])
		for r := range pc.ranges(a, b) {
			rlo, rhi := pc.rowRange(a, b, r)
			t.glu(i, rlo, rhi)
		}
	}
}

package kernels

// task is the arguments of one of the pool's products, recycled
// (Pool.tasks) together with its range functions, bound once when the
// task is made: a closure handed to Parallel escapes to the heap, a new
// object on every call, and a decode step makes dozens of products, so a
// product takes its task from the pool's free list instead and
// allocates nothing once warm.
type task struct {
	p        *Pool
	ms, ups  []*Matrix
	start    []int
	q8       []*Q8Row
	bx       []*BF16Row
	reps     []*Q8Row // MatMulQ8To's inputs repeated (packed tiles), kept
	xs       [][]float32
	outs, us [][]float32
	glu      func(i, lo, hi int)
	m        *Matrix
	x, out   []float32
	ntok     int
	// pieces are parallelRows' walk of the rows (its steps), rb its
	// shares' row bounds.
	pieces []rowPiece
	rb     []int
	fused  bool
	// padded: MatMulsQ8's inputs are padded for the tiles.
	padded bool

	matMul, matVecs, matVecsQ8, matVecsQ8GLU func(lo, hi int)
	matMulQ8Dots, matMulQ8Tiles, matMulsQ8   func(lo, hi int)
	matMulsBF16, matMulQ8Packed              func(lo, hi int)
}

// task is a recycled task of p.
func (p *Pool) task() *task {
	t, _ := p.tasks.Get().(*task)
	if t == nil {
		t = new(task)
		t.matMul, t.matVecs, t.matVecsQ8, t.matVecsQ8GLU = t.runMatMul, t.runMatVecs, t.runMatVecsQ8, t.runMatVecsQ8GLU
		t.matMulQ8Dots, t.matMulQ8Tiles, t.matMulsQ8 = t.runMatMulQ8Dots, t.runMatMulQ8Tiles, t.runMatMulsQ8
		t.matMulsBF16, t.matMulQ8Packed = t.runMatMulsBF16, t.runMatMulQ8Packed
	}
	t.p = p
	return t
}

// putTask drops t's references to the call's data and recycles it.
func (p *Pool) putTask(t *task) {
	t.ms, t.ups, t.q8, t.xs, t.outs, t.us = t.ms[:0], t.ups[:0], t.q8[:0], t.xs[:0], t.outs[:0], t.us[:0]
	clear(t.ms[:cap(t.ms)])
	clear(t.ups[:cap(t.ups)])
	clear(t.q8[:cap(t.q8)])
	t.bx = t.bx[:0]
	clear(t.bx[:cap(t.bx)])
	clear(t.xs[:cap(t.xs)])
	clear(t.outs[:cap(t.outs)])
	clear(t.us[:cap(t.us)])
	t.glu, t.m, t.x, t.out, t.p = nil, nil, nil, nil, nil
	p.tasks.Put(t)
}

// rowStarts sets t.start to the first global row of each of t.ms (and
// their total after the last).
func (t *task) rowStarts() {
	t.start = append(t.start[:0], 0)
	for i, m := range t.ms {
		t.start = append(t.start, t.start[i]+m.Rows)
	}
}

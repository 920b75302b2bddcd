package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"

	"github.com/stratactl/stratactl/quant"
)

// BF16 weights in the fast mode: against activations rounded once per row
// to bfloat16 as a sum of two, x ~ hi + lo with hi = bf16(x) (ggml's fp32->
// bf16, its vec_dot_type for BF16: round to nearest even) and lo =
// bf16(x - hi) (x - hi is exact), so the activations keep 16 significant
// bits (|x - hi - lo| <= 2^-17 |x|) where hi alone keeps 8: hi alone moved
// tiny-qwen3moe BF16's mean KLD from exact mode to 0.0017 (all positions;
// 0.0015 over llama-perplexity's), above llama.cpp's 0.0014 (docs/QUALITY.md),
// at twice the multiplies, which a memory-bound product hides. The
// arithmetic is AVX-512 BF16's VDPBF16PS, the definition on every path:
//
// The row is cut into chunks of 128 elements, the last one zero-padded
// (weights and activations +0). Pair k (elements 2k and 2k+1) goes to
// lane k%64 of 64 float32 lanes (zero at the start); each lane takes its
// pairs in increasing k, and a pair is four steps, hi before lo and element
// 2k+1 before 2k: lane = step(lane, w[2k+1], hi[2k+1]), then w[2k] with
// hi[2k], w[2k+1] with lo[2k+1], w[2k] with lo[2k]. A step (bf16Step) reads
// a subnormal bfloat16 as a zero of its sign, forms the product exactly and
// adds it to the lane with one rounding to nearest even, then flushes a
// result whose magnitude, rounded to 24 bits with an unbounded exponent, is
// below 2^-126 to a zero of its sign (VDPBF16PS's DAZ, FMA, RNE and FTZ; its
// products are exact, so only the one rounding remains). The lanes are then
// folded in plain float32 adds: s_j = (l_j+l_{16+j}) + (l_{32+j}+l_{48+j})
// for j < 16, t_j = s_j + s_{j+8} for j < 8, and t by foldLanes.
//
// The vector paths: VDPBF16PS on four 16-lane accumulators (where the CPU
// has AVX-512 BF16); or AVX2 multiplies and adds under MXCSR's DAZ and FTZ,
// which give the same bits whenever no product underflows or overflows
// (then a product is exact, and so is a tiny sum), and which return to the
// portable path for the whole row when the MXCSR flags say one did.

// BF16Row is a row of activations rounded to bfloat16 pairs (hi, lo) by
// QuantizeBF16Row (quant's Float32ToBF16, ggml's rounding). Per chunk of 128
// elements it holds the 128 hi values, then the 128 lo values; the last
// chunk is zero past the row, which the vector kernels read. Only
// QuantizeBF16Row fills a BF16Row.
type BF16Row struct {
	n int
	v []uint16
}

// Len is the number of activations in the row.
func (r *BF16Row) Len() int { return r.n }

// bf16Chunk is the number of elements one pass over the 64 lanes takes.
const bf16Chunk = 128

// QuantizeBF16Row rounds x to bfloat16 pairs into r, reusing r's buffer.
func QuantizeBF16Row(x []float32, r *BF16Row) { host.quantizeBF16Row(x, r) }

func (k *kernelSet) quantizeBF16Row(x []float32, r *BF16Row) {
	n := len(x)
	pv := (n + bf16Chunk - 1) / bf16Chunk * 2 * bf16Chunk
	if cap(r.v) < pv {
		r.v = make([]uint16, pv)
	}
	r.n, r.v = n, r.v[:pv]
	clear(r.v)
	if k.bf16quant != nil && n > 0 {
		k.bf16quant(&x[0], n, &r.v[0])
		return
	}
	for c := 0; c*bf16Chunk < n; c++ {
		xc := x[c*bf16Chunk : min(n, (c+1)*bf16Chunk)]
		hi := r.v[2*bf16Chunk*c : 2*bf16Chunk*c+bf16Chunk]
		lo := r.v[2*bf16Chunk*c+bf16Chunk : 2*bf16Chunk*(c+1)]
		for j, f := range xc {
			h := quant.Float32ToBF16(f)
			hi[j] = h
			lo[j] = quant.Float32ToBF16(f - quant.BF16ToFloat32(h))
		}
	}
}

// padded reports whether the row's buffer holds its whole last chunk
// (QuantizeBF16Row's rows do).
func (r *BF16Row) padded() bool {
	return len(r.v) >= (r.n+bf16Chunk-1)/bf16Chunk*2*bf16Chunk
}

// hiLo is the pair of element i (i < n).
func (r *BF16Row) hiLo(i int) (uint16, uint16) {
	at := i/bf16Chunk*2*bf16Chunk + i%bf16Chunk
	return r.v[at], r.v[at+bf16Chunk]
}

// CanDotBF16 reports whether MatVecBF16 and MatMulBF16 take m.
func (m *Matrix) CanDotBF16() bool { return m.Type == quant.BF16 }

// DotBF16 is the dot product of a row of x.Len() BF16 weights (at least
// 2*x.Len() bytes; DotBF16 panics otherwise) with the rounded activations x,
// in the order above.
func DotBF16(row []byte, x *BF16Row) float32 { return host.dotBF16(row, x) }

func (k *kernelSet) dotBF16(row []byte, x *BF16Row) float32 {
	n := x.Len()
	if len(row) < 2*n {
		panic(fmt.Sprintf("kernels: DotBF16: %d activations, %d row bytes", n, len(row)))
	}
	if k.bf16dot != nil && n > 0 && x.padded() {
		if r, ok := k.bf16dot(row[:2*n], x); ok {
			return r
		}
	}
	var l [64]float32
	bf16DotTail(row, x, 0, &l)
	return foldBF16Lanes(&l)
}

// foldBF16Lanes is the fold of the 64 lanes above.
func foldBF16Lanes(l *[64]float32) float32 {
	var t [8]float32
	for j := range t {
		lo := (l[j] + l[16+j]) + (l[32+j] + l[48+j])
		hi := (l[8+j] + l[24+j]) + (l[40+j] + l[56+j])
		t[j] = lo + hi
	}
	return foldLanes(&t)
}

// bf16DotTail runs chunks c0.. of the row portably; elements past the row
// are +0 on both sides.
func bf16DotTail(row []byte, x *BF16Row, c0 int, l *[64]float32) {
	n := x.Len()
	at := func(i int) (w, hi, lo uint16) {
		if i >= n {
			return 0, 0, 0
		}
		hi, lo = x.hiLo(i)
		return binary.LittleEndian.Uint16(row[2*i:]), hi, lo
	}
	for c := c0; c*bf16Chunk < n; c++ {
		for k := range l {
			i := c*bf16Chunk + 2*k
			w0, h0, lo0 := at(i)
			w1, h1, lo1 := at(i + 1)
			a := bf16Step(bf16Step(l[k], w1, h1), w0, h0)
			l[k] = bf16Step(bf16Step(a, w1, lo1), w0, lo0)
		}
	}
}

// bf16DAZ is h read as VDPBF16PS reads it: a subnormal is a zero of its sign.
func bf16DAZ(h uint16) float64 {
	if h&0x7f80 == 0 {
		h &= 0x8000
	}
	return float64(quant.BF16ToFloat32(h))
}

// bf16Step is one step of the order above: acc + w*x, the product exact,
// one rounding, subnormal inputs read as zero and a tiny result flushed.
// acc is never subnormal (every step's result is flushed).
func bf16Step(acc float32, w, x uint16) float32 {
	p := bf16DAZ(w) * bf16DAZ(x) // exact: 8-bit significands, float64's range
	a := math.Abs(p)
	switch {
	case a == 0 || (a >= 0x1p-126 && a < 0x1p128):
		// The product is a float32, so Go's rounded add is the fused one,
		// and a sum below 2^-126 is exact (a multiple of 2^-149).
		r := acc + float32(p)
		if r != 0 && math.Abs(float64(r)) < 0x1p-126 {
			return float32(math.Copysign(0, float64(r)))
		}
		return r
	case math.IsInf(p, 0) || math.IsNaN(p) || math.IsInf(float64(acc), 0) || math.IsNaN(float64(acc)):
		// An infinite or NaN operand decides the result; a finite product
		// beyond float32 against an infinite lane leaves the lane.
		return float32(float64(acc) + p)
	}
	return bf16StepExact(acc, p)
}

// bf16StepExact is bf16Step for a finite product outside float32's normal
// range (rare: tiny or huge weights and activations), in exact arithmetic.
func bf16StepExact(acc float32, p float64) float32 {
	const prec = 1024 // covers 2^128 down to 2^-252 and below
	s := new(big.Float).SetPrec(prec).SetFloat64(float64(acc))
	s.Add(s, new(big.Float).SetPrec(prec).SetFloat64(p))
	if s.Sign() == 0 {
		// acc is not zero here (p is not), so an exact zero is +0.
		return 0
	}
	r24, _ := new(big.Float).SetPrec(24).SetMode(big.ToNearestEven).Set(s).Float64()
	if math.Abs(r24) < 0x1p-126 {
		return float32(math.Copysign(0, r24))
	}
	f, _ := s.Float32()
	return f
}

// checkBF16 panics unless m takes x in the fast mode.
func (m *Matrix) checkBF16(op string, x *BF16Row) {
	if !m.CanDotBF16() || x.Len() != m.Cols {
		panic(fmt.Sprintf("kernels: %s on %s, %d x %d, with %d activations", op, m.Type, m.Rows, m.Cols, x.Len()))
	}
}

// MatVecBF16 sets out[r] = DotBF16(row r, x) for every row, at any thread
// count with DotBF16's bits.
func (p *Pool) MatVecBF16(m *Matrix, x *BF16Row, out []float32) {
	p.MatMulBF16(m, []*BF16Row{x}, out)
}

// MatMulBF16 sets out[t*Rows+r] = DotBF16(row r, xs[t]) for every row and
// input; each weight row meets all the inputs while it is in cache (the
// tile kernel where the host has one).
func (p *Pool) MatMulBF16(m *Matrix, xs []*BF16Row, out []float32) {
	for _, x := range xs {
		m.checkBF16("MatMulBF16", x)
	}
	ntok, rows := len(xs), m.Rows
	out = out[:ntok*rows]
	p.Parallel(rows, m.Cols*ntok, func(lo, hi int) { host.matBF16(m, lo, hi, xs, out) })
}

// MatMulsBF16 is MatMulBF16 of several matrices of the same columns
// against the same inputs, outs[i][t*Rows_i+r] = DotBF16(row r of ms[i],
// xs[t]), in one parallel pass over all their rows (contiguous ranges cut
// at the matrices' ends), with MatMulBF16's bits.
func (p *Pool) MatMulsBF16(ms []*Matrix, xs []*BF16Row, outs [][]float32) {
	if len(outs) != len(ms) {
		panic(fmt.Sprintf("kernels: MatMulsBF16 of %d matrices into %d outputs", len(ms), len(outs)))
	}
	if len(ms) == 0 || len(xs) == 0 {
		return
	}
	ntok, cols := len(xs), ms[0].Cols
	for i, m := range ms {
		if m.Cols != cols || len(outs[i]) < ntok*m.Rows {
			panic(fmt.Sprintf("kernels: MatMulsBF16: matrix %d is %d x %d (matrix 0 has %d columns), %d inputs, len(out)=%d", i, m.Rows, m.Cols, cols, ntok, len(outs[i])))
		}
		for _, x := range xs {
			m.checkBF16("MatMulsBF16", x)
		}
	}
	// The arguments in a recycled task, so that the callers' lists do
	// not escape.
	t := p.task()
	t.ms, t.outs = append(t.ms, ms...), append(t.outs, outs...)
	t.bx = append(t.bx, xs...)
	t.rowStarts()
	p.Parallel(t.start[len(ms)], cols*ntok, t.matMulsBF16)
	p.putTask(t)
}

// runMatMulsBF16 runs MatMulsBF16's global rows [lo, hi).
func (t *task) runMatMulsBF16(lo, hi int) {
	ntok := len(t.bx)
	for i := 0; lo < hi; i++ {
		if lo >= t.start[i+1] {
			continue
		}
		e := min(hi, t.start[i+1])
		m := t.ms[i]
		host.matBF16(m, lo-t.start[i], e-t.start[i], t.bx, t.outs[i][:ntok*m.Rows])
		lo = e
	}
}

// matBF16 is MatMulBF16 on rows [lo, hi): one input by k.bf16rows, several
// by k.bf16tiles, else (or where they do not take the rows) row by row.
func (k *kernelSet) matBF16(m *Matrix, lo, hi int, xs []*BF16Row, out []float32) {
	rows := m.Rows
	if len(xs) == 1 && k.bf16rows != nil && k.bf16rows(m, lo, hi, xs[0], out[:rows]) {
		return
	}
	if len(xs) > 1 && k.bf16tiles != nil && k.bf16tiles(m, lo, hi, xs, out) {
		return
	}
	for r := lo; r < hi; r++ {
		row := m.Row(r)
		for t, x := range xs {
			out[t*rows+r] = k.dotBF16(row, x)
		}
	}
}

// MatVecsBF16 sets outs[i][r] = DotBF16(row r of ms[i], xs[i]) for several
// matrices in one parallel pass over all their rows (as MatVecsQ8), with
// MatVecBF16's bits.
func (p *Pool) MatVecsBF16(ms []*Matrix, xs []*BF16Row, outs [][]float32) {
	for i, m := range ms {
		m.checkBF16("MatVecsBF16", xs[i])
		if len(outs[i]) < m.Rows {
			panic(fmt.Sprintf("kernels: MatVecsBF16: matrix %d has %d rows, len(out)=%d", i, m.Rows, len(outs[i])))
		}
	}
	p.eachRows(ms, func(i, lo, hi int) { host.matBF16(ms[i], lo, hi, xs[i:i+1], outs[i]) })
}

// eachRows runs fn(i, lo, hi) for rows [lo, hi) of matrix ms[i], over every
// row of every matrix, in one parallel pass over all the rows (contiguous
// ranges, in order, cut at the matrices' ends).
func (p *Pool) eachRows(ms []*Matrix, fn func(i, lo, hi int)) {
	start := make([]int, len(ms)+1)
	work := 0
	for i, m := range ms {
		start[i+1] = start[i] + m.Rows
		work = max(work, m.Cols)
	}
	p.Parallel(start[len(ms)], work, func(lo, hi int) {
		for i := 0; lo < hi; i++ {
			if lo >= start[i+1] {
				continue
			}
			e := min(hi, start[i+1])
			fn(i, lo-start[i], e-start[i])
			lo = e
		}
	})
}

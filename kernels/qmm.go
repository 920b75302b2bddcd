package kernels

import (
	"fmt"
	"sync"

	"github.com/stratactl/stratactl/quant"
)

// Tiled quantized matrix products, the fast mode's batched prefill
// (MatMulQ8, DotQ8Rows). A tile is qmmRows weight rows against every
// activation row of the call, taken in chunks of decodedGroups groups of 8
// sub-blocks (2048 weights): each weight row's chunk is decoded once into
// integer weights, multipliers and scales (q8Decoded), then multiplied
// with the activation rows two at a time, so the decoded chunks of the
// tile's rows and the two activation rows' chunk stay in L1 while every
// weight byte is read once per call, not once per token. Each output
// element's lanes get their terms in qdot.go's order, so every result is
// DotQ8's bits whatever the tiling, the thread count or the batch.
//
// A last partial group (a row of 640 weights has 20 sub-blocks: two whole
// groups and 4 more) is decoded with zero weights and scales after the
// row's end, against the zero padding QuantizeQ8Row leaves, so its padded
// terms are +0 and leave the lanes as they are (a lane starts at +0 and is
// never -0).

// qmmRows is how many weight rows one tile decodes at a time.
const qmmRows = 16

// tiledQ8 reports whether the tiled path takes weights of type t: the types
// whose DotQ8 is qdot.go's term per 32-weight sub-block of weightSub's
// integers, multiplier and scale, the IQ types with one factor per
// sub-block (IQ4_XS, IQ3_XXS, IQ2_XXS, IQ1_S, MXFP4: iqWeightSub) among
// them, and those with a multiplier per 16-weight half (tileHalves). The
// K-quants with a min take qmm_k.go's tiles; types tiled by neither run
// their row kernels or one DotQ8 per element (dotsRows).
func tiledQ8(t quant.Type) bool {
	switch t {
	case quant.Q8_0, quant.Q4_0, quant.IQ4_NL, quant.Q2_0, quant.IQ3_S,
		quant.IQ4_XS, quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ1_S, quant.MXFP4:
		return true
	}
	return tileHalves(t) || kMinTiled(t)
}

// tileHalves reports whether the tiles take t with a multiplier per
// 16-weight half (q8Decoded.mh): IQ2_XS, IQ2_S and IQ1_M (iqHalvesSub), and
// Q6_K and Q3_K, whose term float32(sc_0*sumi_lo + sc_1*sumi_hi) * (d*dx)
// (kSub's codes and signed scales, no min) is the same form. (Q2_K, Q4_K
// and Q5_K have a min: qmm_k.go's tiles; there too Q6_K where k binds a
// kernel for it, kernelSet.kTiled.)
func tileHalves(t quant.Type) bool {
	return isIQHalves(t) || t == quant.Q6_K || t == quant.Q3_K
}

// tileMinInputs is how many inputs a call needs for the tiled path on
// type t with k's kernels, rows of cols weights: any number where a vector
// decoder decodes the chunks; 2 for rows of one block on the one-group
// tiles (kminTile1G: BenchmarkMatMulQ8K at 256 x 256 and 2 inputs, Q4_K
// 42.2-42.6 against 10.8-11.6 GMAC/s one DotQ8 per element, Q6_K 38.7-39.9
// against 8.9-9.1); 3 for Q6_K's and Q3_K's (with an odd last input
// paired with itself, the tiles beat one DotQ8 per element at 3 inputs,
// one thread: Q6_K 768 x 1024 123 against 146 us, 640 x 2560 247 against
// 262; Q3_K 130 against 147 and 244 against 270; at 2 Q3_K's 768 x 1024
// lost, 101 against 96; Q6_K on the min tiles' VNNI kernel likewise); 16
// where they decode in Go, which costs about as much per weight as 10 to
// 17 inputs' single-row vector dots (BenchmarkMatMulQ8 at 2 and 64 inputs;
// the bits are the same either way).
func (k *kernelSet) tileMinInputs(t quant.Type, cols int) int {
	switch {
	case k.q8decode[t] != nil:
		return 1
	case cols == 256 && k.kminTile1G[t] != nil:
		return 2
	case k.kminTile2[t] != nil && !kHasMin(t):
		return 3
	case k.q8decodeHalves[t] != nil:
		return 3
	case k.kminDecode[t] != nil:
		return k.kminTileMinInputs()
	}
	return 16
}

// dotsPath reports whether MatMulQ8 runs ntok inputs against m by the row
// kernels (or one DotQ8 per element, dotsRows) rather than the tiles: a
// type without tiles, too few inputs for them, inputs the row kernels run
// faster (rowsBeatTiles), or inputs not padded to whole groups.
func (k *kernelSet) dotsPath(m *Matrix, ntok int, padded bool) bool {
	return !tiledQ8(m.Type) || ntok < k.tileMinInputs(m.Type, m.Cols) || k.rowsBeatTiles(m, ntok) || !padded
}

// rowsBeatTiles reports whether ntok inputs against m run faster by k's
// multi-row kernel, one input at a time over chunks of rows
// (runMatMulQ8Dots), than by the tiles (the bits are the same either
// way). The tiles run the inputs in pairs and decode every weight row
// once per call, which pays from 4 inputs on, and pad a row shorter than
// one group (8 sub-blocks) to a whole group, which costs them more than
// 7 inputs' worth of row kernels (where packRows does not pack such rows:
// in MatMulsQ8, or a row count that the packing does not divide); the halves tiles (a multiplier per
// half: Q3_K's) lose up to 5 inputs; the K tiles (kTiled: the min tiles,
// and Q6_K's on AVX-512 VNNI) win from tileMinInputs on, and so do the IQ
// halves types' (IQ2_XS, IQ2_S, IQ1_M: their rows decode every gathered
// block once per input; tiny IQ1_M's 64-token prefill 2849-2850 against
// 2982-2993 tokens per CPU-s, the others within noise).
// BenchmarkMatMulQ8Small, one thread, cpu-GMAC/s, tiles against rows:
// IQ4_NL 64 x 256 at 3 inputs 28.2 / 38.6, at 4 37.4 / 38.4, at 6 44.6 /
// 39.4; 256 x 64 at 6 8.8 / 9.1, at 8 10.2 / 9.1; 640 x 2560 at 3 40.1 /
// 42.6, at 4 51.9 / 42.9; Q6_K 256 x 256 at 4 20.4 / 29.9, 640 x 2560 at
// 4 28.6 / 30.7, at 6 31.7 / 31.3. (Q6_K's rows beat its tiles up to 16
// inputs on 256 x 256 too, 31.0 against 26.8 at 8, but taking them there
// made tiny Q4_K_M's prefill no faster; those figures are from before
// Q6_K's plane tiles.)
func (k *kernelSet) rowsBeatTiles(m *Matrix, ntok int) bool {
	switch {
	case k.q8rows[m.Type] == nil || k.kTiled(m.Type) || isIQHalves(m.Type):
		return false
	case tileHalves(m.Type):
		return ntok < 6
	}
	return ntok < 4 || m.Cols < 8*32 && ntok < 8
}

// qmmScratch is one worker's tile: the decoded chunks of its rows and the
// lanes of every (row, activation row) output of the tile.
type qmmScratch struct {
	d     [qmmRows]q8Decoded
	pad   [q8GroupBytesMax]byte
	lanes [][8]float32
	// planes and sums: the block's inputs' codes in plane order
	// (tilePlanes) and -128 x their sums.
	planes []int8
	sums   []int32
}

// planeInput is an input of q8dotTilePlanes from a group g0 on: its codes
// in plane order, -128 x their sums per sub-block (VPDPBUSD's bias), and
// the row for its scales.
type planeInput struct {
	q []int8
	s []int32
	x *Q8Row
}

// qmmScratchPool keeps the workers' tiles between calls.
var qmmScratchPool sync.Pool

func getQmmScratch() *qmmScratch {
	if sc, ok := qmmScratchPool.Get().(*qmmScratch); ok {
		return sc
	}
	return new(qmmScratch)
}

// tilePadded reports whether every activation row is zero-padded to whole
// groups (QuantizeQ8Row's rows are), as the tiled path needs.
func tilePadded(xs []*Q8Row, nsub int) bool {
	last := (nsub - 1) / 8 * 8
	for _, x := range xs {
		if !x.padded(last) {
			return false
		}
	}
	return true
}

// MatMulQ8 sets out[t*Rows+r] = DotQ8(m.Type, row r, xs[t]) for every row
// and input: the fast mode's batched prefill. The rows are split over the
// pool in tiles of qmmRows: each weight chunk is decoded once and
// multiplied with every input while it is in L1; rows shorter than a group
// packed several to a tile row (packRows); few inputs, or a type without
// tiles, by the row kernels one input at a time (dotsPath). Every path has
// the bits of MatVecQ8 per input at any thread count and any batching.
func (p *Pool) MatMulQ8(m *Matrix, xs []*Q8Row, out []float32) {
	checkMatMulQ8(m, xs, out)
	// The output rows' list in a recycled task (no allocation once warm).
	t := p.task()
	for i := range xs {
		t.us = append(t.us, out[i*m.Rows:(i+1)*m.Rows])
	}
	p.MatMulQ8To(m, xs, t.us)
	p.putTask(t)
}

// MatMulQ8To is MatMulQ8 with input t's outputs in outs[t] (each at least
// m.Rows long): the rows of an expert's routed tokens written in place.
func (p *Pool) MatMulQ8To(m *Matrix, xs []*Q8Row, outs [][]float32) {
	for _, x := range xs {
		m.checkQ8("MatMulQ8", x)
	}
	ntok, rows := len(xs), m.Rows
	if len(outs) != ntok {
		panic(fmt.Sprintf("kernels: MatMulQ8 of %d inputs into %d outputs", ntok, len(outs)))
	}
	for t, o := range outs {
		if len(o) < rows {
			panic(fmt.Sprintf("kernels: MatMulQ8 of %d rows: output %d has %d", rows, t, len(o)))
		}
	}
	if ntok == 0 {
		return
	}
	t := p.task()
	t.m, t.q8, t.outs = m, append(t.q8, xs...), append(t.outs, outs...)
	if q := host.packRows(m); q > 1 {
		// Rows shorter than a group, q of them to a group: each input
		// repeated q times, the tiles over q rows at a time.
		t.reps = reuseQ8Rows(t.reps, ntok)
		for i, x := range xs {
			repeatQ8Row(t.reps[i], x, q)
		}
		p.Parallel((m.Rows/q+qmmRows-1)/qmmRows, qmmRows*256*ntok, t.matMulQ8Packed)
		p.putTask(t)
		return
	}
	if host.dotsPath(m, ntok, tilePadded(xs, m.Cols/32)) {
		p.Parallel(rows, m.Cols*ntok, t.matMulQ8Dots)
	} else {
		tiles := (rows + qmmRows - 1) / qmmRows
		p.Parallel(tiles, qmmRows*m.Cols*ntok, t.matMulQ8Tiles)
	}
	p.putTask(t)
}

// MatMulsQ8 is MatMulQ8 of several matrices of the same columns against
// the same inputs, out[i][t*Rows_i+r] = DotQ8(row r of ms[i], xs[t]), in
// one parallel pass over all their rows in tiles of qmmRows (the
// attention's Q, K and V; a delta net's projections): each matrix takes
// the tiles or the row kernels as MatMulQ8 would (dotsPath; short rows are
// not packed here, they take the plain tiles), so the bits are MatMulQ8's
// at any thread count.
func (p *Pool) MatMulsQ8(ms []*Matrix, xs []*Q8Row, outs [][]float32) {
	ntok := len(xs)
	if len(outs) != len(ms) {
		panic(fmt.Sprintf("kernels: MatMulsQ8 of %d matrices into %d outputs", len(ms), len(outs)))
	}
	if ntok == 0 || len(ms) == 0 {
		return
	}
	cols := ms[0].Cols
	for i, m := range ms {
		if m.Cols != cols {
			panic(fmt.Sprintf("kernels: MatMulsQ8: matrix %d has %d columns, matrix 0 %d", i, m.Cols, cols))
		}
		checkMatMulQ8(m, xs, outs[i])
		for _, x := range xs {
			m.checkQ8("MatMulsQ8", x)
		}
	}
	t := p.task()
	t.ms, t.q8 = append(t.ms, ms...), append(t.q8, xs...)
	// Per matrix its inputs' output rows, and its first tile.
	t.start = append(t.start[:0], 0)
	for i, m := range ms {
		for k := 0; k < ntok; k++ {
			t.us = append(t.us, outs[i][k*m.Rows:(k+1)*m.Rows])
		}
		t.start = append(t.start, t.start[i]+(m.Rows+qmmRows-1)/qmmRows)
	}
	t.padded = tilePadded(xs, cols/32)
	p.Parallel(t.start[len(ms)], qmmRows*cols*ntok, t.matMulsQ8)
	p.putTask(t)
}

// runMatMulsQ8 runs MatMulsQ8's tiles [lo, hi): each matrix's part by
// its MatMulQ8 path.
func (t *task) runMatMulsQ8(lo, hi int) {
	ntok := len(t.q8)
	var sc *qmmScratch
	for i, m := range t.ms {
		a, b := max(lo, t.start[i]), min(hi, t.start[i+1])
		if a >= b {
			continue
		}
		r0, r1 := (a-t.start[i])*qmmRows, min((b-t.start[i])*qmmRows, m.Rows)
		outs := t.us[i*ntok : (i+1)*ntok]
		if host.dotsPath(m, ntok, t.padded) {
			dotsRows(m, t.q8, outs, r0, r1)
			continue
		}
		if sc == nil {
			sc = getQmmScratch()
		}
		host.matMulQ8Tiles(m, t.q8, outs, r0, r1, sc)
	}
	if sc != nil {
		qmmScratchPool.Put(sc)
	}
}

// runMatMulQ8Dots runs MatMulQ8To's rows [lo, hi) one DotQ8 per output:
// in chunks of about dotsChunkBytes of weights, each chunk against every
// input by the type's multi-row kernel (dotQ8Range), so that a chunk
// stays in L1 while the inputs pass over it.
func (t *task) runMatMulQ8Dots(lo, hi int) { dotsRows(t.m, t.q8, t.outs, lo, hi) }

// dotsRows sets outs[i][r] = DotQ8(row r of m, xs[i]) for rows [lo, hi)
// as runMatMulQ8Dots says.
func dotsRows(m *Matrix, xs []*Q8Row, outs [][]float32, lo, hi int) {
	step := max(1, dotsChunkBytes/m.RowBytes)
	for r := lo; r < hi; r += step {
		r1 := min(r+step, hi)
		for i, x := range xs {
			host.dotQ8Range(m, r, r1, x, outs[i])
		}
	}
}

// dotsChunkBytes is the weight bytes runMatMulQ8Dots runs every input
// over before it moves on.
const dotsChunkBytes = 16 << 10

// packRows is how many rows of m the packed tiles take as one group of
// 8 sub-blocks (matMulQ8Packed): 8/nsub for rows of nsub = 1, 2 or 4
// sub-blocks whose count divides the rows, on k's plane tiles for a type
// of 32-weight blocks they take (not the K-quants' or the IQ halves
// types' 256); 0 otherwise. (The tiles pad a shorter row to a whole group:
// 256 x 64 IQ4_NL ran at 9 GMAC/s on either path.)
func (k *kernelSet) packRows(m *Matrix) int {
	nsub := m.Cols / 32
	if k.q8dotTilePlanes == nil || !tiledQ8(m.Type) || (nsub != 1 && nsub != 2 && nsub != 4) {
		return 0
	}
	if ti, ok := quant.Info(m.Type); !ok || ti.BlockElements != 32 || m.RowBytes != nsub*ti.BlockBytes {
		return 0
	}
	q := 8 / nsub
	if m.Rows%q != 0 {
		return 0
	}
	return q
}

// repeatQ8Row sets r's codes, scales and sums to x's blocks repeated
// times times, a whole number of groups (the row QuantizeQ8Row makes of
// x's values repeated, each block's codes, scale and sum its own), for
// the packed tiles alone: its Q2_0 planes are left empty.
func repeatQ8Row(r, x *Q8Row, times int) {
	nx, bx := len(x.qs), len(x.d)
	n, nb := nx*times, bx*times
	if cap(r.d) < nb {
		r.qs = make([]int8, n)
		r.d = make([]float32, nb)
		r.sums = make([]int32, nb)
	}
	r.qs, r.d, r.sums, r.q2, r.q2t = r.qs[:n], r.d[:nb], r.sums[:nb], r.q2[:0], r.q2t[:0]
	for i := 0; i < times; i++ {
		copy(r.qs[i*nx:(i+1)*nx], x.qs)
		copy(r.d[i*bx:(i+1)*bx], x.d)
		copy(r.sums[i*bx:(i+1)*bx], x.sums)
	}
}

// reuseQ8Rows is n rows, rows' where it has them.
func reuseQ8Rows(rows []*Q8Row, n int) []*Q8Row {
	for len(rows) < n {
		rows = append(rows, new(Q8Row))
	}
	return rows[:n]
}

// runMatMulQ8Packed runs MatMulQ8To's packed tiles [lo, hi)
// (matMulQ8Packed).
func (t *task) runMatMulQ8Packed(lo, hi int) {
	q := host.packRows(t.m)
	sc := getQmmScratch()
	host.matMulQ8Packed(t.m, q, t.reps, t.outs, lo*qmmRows, min(hi*qmmRows, t.m.Rows/q), sc)
	qmmScratchPool.Put(sc)
}

// matMulQ8Packed computes outs[t][r] = DotQ8(row r of m, x_t) for the rows
// of groups [g0, g1) of q rows each (q = packRows(m)), with xr[t] x_t's
// blocks repeated q times: each group of q rows is one row of a whole
// group of 8 sub-blocks, each row's 8/q sub-blocks in consecutive lanes, run by the plane
// tiles against xr, and each row's output the fold of its lanes with the
// others +0, as DotQ8 has them for a row of 8/q sub-blocks (lane s its
// sub-block s, the rest never touched).
func (k *kernelSet) matMulQ8Packed(m *Matrix, q int, xr []*Q8Row, outs [][]float32, g0, g1 int, sc *qmmScratch) {
	// Inputs in blocks of qmmInputBlock, as matMulQ8Tiles takes them, so the
	// scratch stays the size of a block whatever the prompt.
	for t0 := 0; t0 < len(xr); t0 += qmmInputBlock {
		t1 := min(t0+qmmInputBlock, len(xr))
		k.matMulQ8PackedBlock(m, q, xr[t0:t1], outs[t0:t1], g0, g1, sc)
	}
}

// matMulQ8PackedBlock is matMulQ8Packed over one block of inputs.
func (k *kernelSet) matMulQ8PackedBlock(m *Matrix, q int, xr []*Q8Row, outs [][]float32, g0, g1 int, sc *qmmScratch) {
	pm := Matrix{Type: m.Type, Data: m.Data, Rows: m.Rows / q, Cols: 256, RowBytes: q * m.RowBytes}
	ntok := len(xr)
	if cap(sc.planes) < 256*ntok {
		sc.planes = make([]int8, 256*ntok)
		sc.sums = make([]int32, 8*ntok)
	}
	for t, x := range xr {
		k.tilePlanes(sc.planes[256*t:256*(t+1)], x.qs[:256], 0)
		s := sc.sums[8*t : 8*(t+1)]
		for i, v := range x.sums[:8] {
			s[i] = -128 * v
		}
	}
	if cap(sc.lanes) < qmmRows*ntok {
		sc.lanes = make([][8]float32, qmmRows*ntok)
	}
	lanes := sc.lanes[:qmmRows*ntok]
	for rt := g0; rt < g1; rt += qmmRows {
		nr := min(qmmRows, g1-rt)
		for i := 0; i < nr; i++ {
			k.decodeChunkPlanes(pm.Type, pm.Row(rt+i), 8, 0, 1, &sc.d[i], &sc.pad)
		}
		k.planesChunk(pm.Type, sc, nr, 1, 1, xr, 0, lanes, nil, rt, false)
		for t := range xr {
			foldPacked(outs[t][rt*q:(rt+nr)*q], lanes[t*qmmRows:t*qmmRows+nr], 8/q)
		}
	}
}

// foldPacked sets o[i*(8/per)+j] to foldLanes of lanes[i][j*per:(j+1)*per]
// in lanes 0..per-1 and +0 in the others: ((l0+l4)+(l2+l6)) +
// ((l1+l5)+(l3+l7)) with the +0 lanes written out (x + 0 is not x for
// x = -0, so they stay).
func foldPacked(o []float32, lanes [][8]float32, per int) {
	switch per {
	case 4:
		for i := range lanes {
			l := &lanes[i]
			o[2*i] = ((l[0] + 0) + (l[2] + 0)) + ((l[1] + 0) + (l[3] + 0))
			o[2*i+1] = ((l[4] + 0) + (l[6] + 0)) + ((l[5] + 0) + (l[7] + 0))
		}
	case 2:
		for i := range lanes {
			l := &lanes[i]
			for j := 0; j < 4; j++ {
				o[4*i+j] = ((l[2*j] + 0) + (0 + 0)) + ((l[2*j+1] + 0) + (0 + 0))
			}
		}
	default: // 1
		for i := range lanes {
			l := &lanes[i]
			for j := 0; j < 8; j++ {
				o[8*i+j] = ((l[j] + 0) + (0 + 0)) + ((0 + 0) + (0 + 0))
			}
		}
	}
}

// runMatMulQ8Tiles runs MatMulQ8To's tiles [lo, hi).
func (t *task) runMatMulQ8Tiles(lo, hi int) {
	sc := getQmmScratch()
	host.matMulQ8Tiles(t.m, t.q8, t.outs, lo*qmmRows, min(hi*qmmRows, t.m.Rows), sc)
	qmmScratchPool.Put(sc)
}

// matMulQ8Tiles computes outs[t][r] = DotQ8(t, row r of m, xs[t]) for the
// rows r0 <= r < r1 (m.Cols a positive multiple of 32; xs padded), with
// k's kernels. The lanes are token-major, lanes[t*qmmRows+i] for row
// rt+i of the tile, so one kernel call runs a token pair against every row
// of the tile.
func (k *kernelSet) matMulQ8Tiles(m *Matrix, xs []*Q8Row, outs [][]float32, r0, r1 int, sc *qmmScratch) {
	// Inputs in blocks of qmmInputBlock, each block over all the rows:
	// a block's activations stay in L2 while every row tile reads them
	// (all 512 of a prompt's do not), for one more decode of each chunk
	// per block.
	for t0 := 0; t0 < len(xs); t0 += qmmInputBlock {
		t1 := min(t0+qmmInputBlock, len(xs))
		k.matMulQ8Block(m, xs[t0:t1], outs[t0:t1], r0, r1, sc)
	}
}

// qmmInputBlock is how many inputs a tile pass takes (at n_embd 2560, 128
// quantized rows are 370 KB).
const qmmInputBlock = 128

// matMulQ8Block is matMulQ8Tiles on one block of inputs.
func (k *kernelSet) matMulQ8Block(m *Matrix, xs []*Q8Row, outs [][]float32, r0, r1 int, sc *qmmScratch) {
	if k.kTiled(m.Type) {
		k.matMulKMinBlock(m, xs, outs, r0, r1) // qmm_k.go
		return
	}
	ntok := len(xs)
	nsub := m.Cols / 32
	groups := (nsub + 7) / 8
	// A last group of at most 4 sub-blocks runs as a half group.
	halfLast := nsub%8 != 0 && nsub%8 <= 4
	planes := k.q8dotTilePlanes != nil && !tileHalves(m.Type)
	if planes {
		if cap(sc.planes) < 256*groups*ntok {
			sc.planes = make([]int8, 256*groups*ntok)
			sc.sums = make([]int32, 8*groups*ntok)
		}
		for t, x := range xs {
			k.tilePlanes(sc.planes[256*groups*t:256*groups*(t+1)], x.qs[:256*groups], 0)
			s := sc.sums[8*groups*t : 8*groups*(t+1)]
			for i, v := range x.sums[:8*groups] {
				s[i] = -128 * v
			}
		}
	}
	if cap(sc.lanes) < qmmRows*ntok {
		sc.lanes = make([][8]float32, qmmRows*ntok)
	}
	lanes := sc.lanes[:qmmRows*ntok]
	for rt := r0; rt < r1; rt += qmmRows {
		nr := min(qmmRows, r1-rt)
		if !planes {
			clear(lanes) // the plane tiles start a row's lanes at +0 themselves
		}
		for g0 := 0; g0 < groups; g0 += decodedGroups {
			ng := min(decodedGroups, groups-g0)
			for i := 0; i < nr; i++ {
				if planes {
					k.decodeChunkPlanes(m.Type, m.Row(rt+i), nsub, g0, ng, &sc.d[i], &sc.pad)
				} else {
					k.decodeChunk(m.Type, m.Row(rt+i), nsub, g0, ng, &sc.d[i], &sc.pad)
				}
			}
			whole, half := ng, 0
			if halfLast && g0+ng == groups {
				whole, half = ng-1, 1
			}
			last := g0+ng == groups
			if tileHalves(m.Type) {
				k.halvesChunk(&sc.d, nr, ng, xs, g0, lanes, outs, rt, last)
				continue
			}
			if planes {
				k.planesChunk(m.Type, sc, nr, ng, groups, xs, g0, lanes, outs, rt, last)
				continue
			}
			t := 0
			for ; t+1 < ntok; t += 2 {
				var o0, o1 []float32
				if last {
					o0, o1 = outs[t][rt:rt+nr], outs[t+1][rt:rt+nr]
				}
				k.tileDot2(&sc.d, nr, whole, half, xs[t], xs[t+1], g0, lanes[t*qmmRows:(t+1)*qmmRows], lanes[(t+1)*qmmRows:(t+2)*qmmRows], o0, o1)
			}
			if t < ntok {
				l := lanes[t*qmmRows : t*qmmRows+nr]
				for i := range l {
					k.tileDot1(&sc.d[i], ng, xs[t], g0, &l[i])
				}
				if last {
					o := outs[t][rt : rt+nr]
					for i := range o {
						o[i] = foldLanes(&l[i])
					}
				}
			}
		}
	}
}

// planesChunk is the token loop of matMulQ8Block on k.q8dotTilePlanes:
// the inputs by pairs against the rows' chunks (decodeChunkPlanes'), an
// odd last one paired with itself, its lanes and outputs given twice (both
// halves compute the same bits, so the second stores equal the first).
// sc.planes holds the inputs' codes in plane order, groups groups each.
func (k *kernelSet) planesChunk(typ quant.Type, sc *qmmScratch, nr, ng, groups int, xs []*Q8Row, g0 int, lanes [][8]float32, outs [][]float32, rt int, last bool) {
	p := func(t int) planeInput {
		i := groups*t + g0
		return planeInput{sc.planes[256*i : 256*(i+ng)], sc.sums[8*i : 8*(i+ng)], xs[t]}
	}
	mul := typ == quant.IQ3_S // weightSub's multipliers are 1 for the others
	for t := 0; t < len(xs); t += 2 {
		u := min(t+1, len(xs)-1)
		var o0, o1 []float32
		if last {
			o0, o1 = outs[t][rt:rt+nr], outs[u][rt:rt+nr]
		}
		k.q8dotTilePlanes(&sc.d, nr, ng, p(t), p(u), g0, mul, lanes[t*qmmRows:(t+1)*qmmRows], lanes[u*qmmRows:(u+1)*qmmRows], o0, o1)
	}
}

// halvesChunk is the token loop of matMulQ8Block for the types with a
// multiplier per half (d's mh): token pairs by k's kernel, an odd last
// token paired with itself as planesChunk does; every token portably
// without one; on the last chunk the lanes are folded into outs[t][rt+i].
func (k *kernelSet) halvesChunk(d *[qmmRows]q8Decoded, nr, ng int, xs []*Q8Row, g0 int, lanes [][8]float32, outs [][]float32, rt int, last bool) {
	t := 0
	if k.q8dotTile2H != nil {
		for ; t < len(xs); t += 2 {
			u := min(t+1, len(xs)-1)
			var o0, o1 []float32
			if last {
				o0, o1 = outs[t][rt:rt+nr], outs[u][rt:rt+nr]
			}
			k.q8dotTile2H(d, nr, ng, xs[t], xs[u], g0, lanes[t*qmmRows:(t+1)*qmmRows], lanes[u*qmmRows:(u+1)*qmmRows], o0, o1)
		}
	}
	for ; t < len(xs); t++ {
		l := lanes[t*qmmRows : t*qmmRows+nr]
		for i := range l {
			halvesDot1(&d[i], ng, xs[t], g0, &l[i])
		}
		if last {
			o := outs[t][rt : rt+nr]
			for i := range o {
				o[i] = foldLanes(&l[i])
			}
		}
	}
}

// halvesSub is sub-block s of a tileHalves row: its integer weights to w,
// the multipliers of its halves and its factor.
func halvesSub(t quant.Type, row []byte, s int, w *[32]int8) (m0, m1 int32, dw float32) {
	if isIQHalves(t) {
		return iqHalvesSub(t, row, s, w)
	}
	var k kSubBlock
	kSub(t, row, s, &k)
	*w = k.q
	return k.sc[0], k.sc[1], k.d
}

// halvesDot1 adds the terms of d's ng groups (multipliers per half)
// against x (its groups g0..) to l, as iqHalvesDotTail does.
func halvesDot1(d *q8Decoded, ng int, x *Q8Row, g0 int, l *[8]float32) {
	xq, xd := x.qs[:cap(x.qs)], x.d[:cap(x.d)]
	for i := 0; i < 8*ng; i++ {
		s := 8*g0 + i
		w := d.w[32*i : 32*i+32]
		xs := xq[32*s : 32*s+32]
		var lo, hi int32
		for j := 0; j < 16; j++ {
			lo += int32(w[j]) * int32(xs[j])
			hi += int32(w[16+j]) * int32(xs[16+j])
		}
		scale := float32(d.dw[i] * xd[s])
		l[i%8] += float32(float32(int32(d.mh[2*i])*lo+int32(d.mh[2*i+1])*hi) * scale)
	}
}

// q8GroupBytesMax is the most bytes a group of 8 sub-blocks takes among the
// types with a vector decoder (Q8_0's 8 blocks of 34).
const q8GroupBytesMax = 8 * 34

// decodeChunk decodes groups g0..g0+ng-1 of a row of nsub sub-blocks into
// d, the sub-blocks past nsub as zero weights with multiplier and scale 0;
// pad is room for a partial last group beside zero blocks.
func (k *kernelSet) decodeChunk(t quant.Type, row []byte, nsub, g0, ng int, d *q8Decoded, pad *[q8GroupBytesMax]byte) {
	if tileHalves(t) {
		done := 0
		if dec := k.q8decodeHalves[t]; dec != nil {
			done = min(ng, nsub/8-g0)
			if done > 0 {
				dec(row, g0, done, d)
			}
		}
		for i := 8 * max(done, 0); i < 8*ng; i++ {
			w := (*[32]int8)(d.w[32*i:])
			s := 8*g0 + i
			if s >= nsub {
				*w = [32]int8{}
				d.mh[2*i], d.mh[2*i+1], d.dw[i] = 0, 0, 0
				continue
			}
			m0, m1, dw := halvesSub(t, row, s, w)
			d.mh[2*i], d.mh[2*i+1], d.dw[i] = int16(m0), int16(m1), dw
		}
		clear(d.m[:8*ng])
		return
	}
	whole := min(ng, nsub/8-g0)
	s := 8 * g0
	if dec := k.q8decode[t]; dec != nil {
		if whole > 0 {
			dec(row, g0, whole, d, 0)
			s += 8 * whole
		}
		// The row's last group, when partial (a 640-wide row's last 4
		// sub-blocks): its blocks copied beside zero blocks and decoded as
		// a whole group; the sub-blocks past the row are cleared below.
		if rest := nsub - s; whole < ng && rest > 0 {
			ti, _ := quant.Info(t)
			if gb := 256 / ti.BlockElements * ti.BlockBytes; gb <= len(pad) && 32*rest%ti.BlockElements == 0 {
				at := gb * (g0 + whole)
				dec(padGroup(row[at:at+32*rest/ti.BlockElements*ti.BlockBytes], gb, pad), 0, 1, d, whole)
				s = nsub
			}
		}
	}
	for ; s < 8*(g0+ng); s++ {
		i := s - 8*g0
		w := (*[32]int8)(d.w[32*i:])
		if s >= nsub {
			*w = [32]int8{}
			d.m[i], d.dw[i] = 0, 0
			continue
		}
		m, dw := weightSub(t, row, s, w)
		d.m[i], d.dw[i] = int16(m), dw
	}
}

// decodeChunkPlanes is decodeChunk for q8dotTilePlanes: the weights biased
// and in plane order, by k's plane decoder for t where it has one (a
// partial last group from pad, its blocks beside zero blocks: the
// sub-blocks past the row get scale 0, and their terms are +0 against the
// inputs' zero padding whatever their weights), else
// by decodeChunk and tilePlanes.
func (k *kernelSet) decodeChunkPlanes(t quant.Type, row []byte, nsub, g0, ng int, d *q8Decoded, pad *[q8GroupBytesMax]byte) {
	dec := k.q8decodePlanes[t]
	if dec == nil {
		k.decodeChunk(t, row, nsub, g0, ng, d, pad)
		w := d.w[:256*ng]
		k.tilePlanes(w, w, 0x80)
		return
	}
	whole := min(ng, nsub/8-g0)
	if whole > 0 {
		dec(row, g0, whole, d, 0)
	}
	if whole < ng {
		ti, _ := quant.Info(t) // blocks of 32 weights
		gb := 8 * ti.BlockBytes
		dec(padGroup(row[gb*(g0+whole):], gb, pad), 0, 1, d, whole)
		// A zero block's scale is 0 but for MXFP4, whose exponent 0 is
		// 2^-128: the padded sub-blocks' scales set to 0 as decodeChunk's.
		clear(d.dw[8*whole+nsub-8*(g0+whole) : 8*(whole+1)])
	}
}

// padGroup is a group of gb bytes in pad: the blocks of src (a row's last,
// partial group) beside zero blocks.
func padGroup(src []byte, gb int, pad *[q8GroupBytesMax]byte) []byte {
	n := copy(pad[:gb], src)
	clear(pad[n:gb])
	return pad[:gb]
}

// tileDot2 adds, for each of the first nr rows' decoded chunks d[i], the
// terms of its whole groups and, when half is 1, the first 4 sub-blocks of
// one more (its other 4 decoded as zeros) against x0 and x1 (their groups
// g0..) to l0[i] and l1[i]. The padded sub-blocks' terms are +0, so the
// lanes are those of running the whole padded group. With o0 and o1 (the
// row's last chunk) it stores the folded lanes there instead, o0[i] and
// o1[i]: the kernel's stores then overlap its arithmetic, where a separate
// fold's stores to rows far apart waited on the cache.
func (k *kernelSet) tileDot2(d *[qmmRows]q8Decoded, nr, whole, half int, x0, x1 *Q8Row, g0 int, l0, l1 [][8]float32, o0, o1 []float32) {
	if k.q8dotTile2 != nil {
		k.q8dotTile2(d, nr, whole, half, x0, x1, g0, l0, l1, o0, o1)
		return
	}
	for i := 0; i < nr; i++ {
		k.tileDot1(&d[i], whole+half, x0, g0, &l0[i])
		k.tileDot1(&d[i], whole+half, x1, g0, &l1[i])
		if o0 != nil {
			o0[i], o1[i] = foldLanes(&l0[i]), foldLanes(&l1[i])
		}
	}
}

// tileDot1 adds the terms of d's ng groups against x (its groups g0..) to l.
func (k *kernelSet) tileDot1(d *q8Decoded, ng int, x *Q8Row, g0 int, l *[8]float32) {
	if k.q8dotDecoded != nil {
		k.q8dotDecoded(d, ng, x, g0, l)
		return
	}
	xq, xd := x.qs[:cap(x.qs)], x.d[:cap(x.d)]
	for g := 0; g < ng; g++ {
		for j := 0; j < 8; j++ {
			s := 8*(g0+g) + j
			w := d.w[256*g+32*j : 256*g+32*j+32]
			xs := xq[32*s : 32*s+32]
			var sumi int32
			for e, v := range w {
				sumi += int32(v) * int32(xs[e])
			}
			scale := float32(d.dw[8*g+j] * xd[s])
			l[j] += float32(float32(int32(d.m[8*g+j])*sumi) * scale)
		}
	}
}

// checkMatMulQ8 panics on shapes no caller may pass (the engine checks its
// matrices once, at load).
func checkMatMulQ8(m *Matrix, xs []*Q8Row, out []float32) {
	if len(out) < len(xs)*m.Rows {
		panic(fmt.Sprintf("kernels: MatMulQ8 of %d rows and %d inputs into %d outputs", m.Rows, len(xs), len(out)))
	}
}

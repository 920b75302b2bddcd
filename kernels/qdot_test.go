package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

var q8Types = append(append([]quant.Type{quant.Q8_0, quant.Q4_0, quant.IQ4_NL, quant.Q2_0, quant.IQ3_S}, kQuantTypes...), iqTypes...)

func gaussians(rng *rand.Rand, n int, sigma float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * sigma)
	}
	return x
}

// TestQ8RowMatchesQuant: the split activations are quant's Q8_0 blocks: code
// times scale gives quant's decoding bit for bit, the block sums add up, and
// no code is -128.
func TestQ8RowMatchesQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var r Q8Row
	for _, n := range []int{0, 32, 96, 4096} {
		for _, sigma := range []float64{1e-6, 1e-3, 1, 1e4} {
			x := gaussians(rng, n, sigma)
			if n > 0 {
				x[rng.IntN(n)] = 0
			}
			if err := QuantizeQ8Row(x, &r); err != nil {
				t.Fatal(err)
			}
			blocks := make([]byte, n/32*34)
			if err := quant.Quantize(quant.Q8_0, x, blocks, nil); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, n)
			if err := quant.Dequantize(quant.Q8_0, blocks, want); err != nil {
				t.Fatal(err)
			}
			if r.Len() != n {
				t.Fatalf("Len %d, want %d", r.Len(), n)
			}
			for b := 0; b < n/32; b++ {
				var sum int32
				for j := 0; j < 32; j++ {
					q := r.qs[32*b+j]
					if q == -128 {
						t.Fatalf("n=%d: code -128", n)
					}
					sum += int32(q)
					if got := float32(q) * r.d[b]; math.Float32bits(got) != math.Float32bits(want[32*b+j]) {
						t.Fatalf("n=%d sigma=%g element %d: %g, quant %g", n, sigma, 32*b+j, got, want[32*b+j])
					}
				}
				if sum != r.sums[b] {
					t.Fatalf("block %d: sum %d, stored %d", b, sum, r.sums[b])
				}
			}
		}
	}
	// A shorter row in the same buffers is zero-padded to its group's end.
	if err := QuantizeQ8Row(gaussians(rng, 4096, 1), &r); err != nil {
		t.Fatal(err)
	}
	if err := QuantizeQ8Row(gaussians(rng, 96, 1), &r); err != nil {
		t.Fatal(err)
	}
	if !r.padded(0) {
		t.Fatal("3 blocks not padded to 8")
	}
	for i, q := range r.qs[96:256] {
		if q != 0 {
			t.Fatalf("padding code %d is %d", i, q)
		}
	}
	for b := 3; b < 8; b++ {
		if r.d[:8][b] != 0 || r.sums[:8][b] != 0 {
			t.Fatalf("padding block %d: d %g sum %d", b, r.d[:8][b], r.sums[:8][b])
		}
	}
	if err := QuantizeQ8Row(make([]float32, 33), &r); err == nil {
		t.Fatal("33 activations accepted")
	}
}

// TestWeightSubMatchesQuant: the integer weights and scale of every
// sub-block give quant's decoding bit for bit, on raw random blocks (NaN,
// infinite and subnormal scales included).
func TestWeightSubMatchesQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, typ := range q8Types {
		if isKQuant(typ) || isIQHalves(typ) {
			continue // TestKSubMatchesQuant, TestIQHalvesSubMatchesQuant
		}
		ti, _ := quant.Info(typ)
		row := randomBlocks(rng, typ, 64)
		n := 64 * ti.BlockElements
		want := make([]float32, n)
		if err := quant.Dequantize(typ, row, want); err != nil {
			t.Fatal(err)
		}
		var w [32]int8
		for s := 0; s < n/32; s++ {
			m, d := weightSub(typ, row, s, &w)
			for j := range w {
				got := float32(m*int32(w[j])) * d
				if math.Float32bits(got) != math.Float32bits(want[32*s+j]) && !(got != got && want[32*s+j] != want[32*s+j]) {
					t.Fatalf("%s sub-block %d element %d: %d x %d x %g = %g, quant %g", typ, s, j, m, w[j], d, got, want[32*s+j])
				}
			}
		}
	}
}

// guardedQ8Row copies r into buffers with guard values on both sides (codes
// 127, NaN scales, huge sums), so a kernel reading past the row shows. With
// pad, the row is zero-padded to whole groups of 8 blocks before the guard,
// as QuantizeQ8Row leaves it (the vector kernels then run the last partial
// group); without, the guard follows the row at once.
func guardedQ8Row(r *Q8Row, shift int, pad bool) *Q8Row {
	const band = 64
	nb := len(r.d)
	pb := nb
	if pad {
		pb = (nb + 7) / 8 * 8
	}
	g := &Q8Row{}
	qs := make([]int8, band+shift+32*pb+band)
	for i := range qs {
		qs[i] = 127
	}
	d := make([]float32, band+pb+band)
	sums := make([]int32, band+pb+band)
	for i := range d {
		d[i] = float32(math.NaN())
		sums[i] = 1 << 30
	}
	lo := band + shift
	g.qs = qs[lo : lo+32*nb : lo+32*pb]
	g.d = d[band : band+nb : band+pb]
	g.sums = sums[band : band+nb : band+pb]
	clear(g.qs[:32*pb])
	clear(g.d[:pb])
	clear(g.sums[:pb])
	copy(g.qs, r.qs)
	copy(g.d, r.d)
	copy(g.sums, r.sums)
	return g
}

// sameFloat is bit equality, any NaN equal to any NaN.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestDotQ8LengthsGuarded: every kernel set gives the portable path's bits
// over every whole number of blocks up to 4096 weights, on unaligned rows
// and activations between guard bands, with random raw weight blocks.
func TestDotQ8LengthsGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	var r Q8Row
	sets := testSets()
	for _, typ := range q8Types {
		ti, _ := quant.Info(typ)
		ns := []int{}
		for n := 0; n <= 4096; n += ti.BlockElements {
			ns = append(ns, n)
		}
		// Past one batch of 16 groups (q8dotIQGroups' iqBatch): the kernels
		// carrying lanes in from the batch before.
		ns = append(ns, 4352, 8192, 8448)
		for _, n := range ns {
			raw := randomRow(rng, typ, n)
			if rng.IntN(4) == 0 {
				raw = randomBlocks(rng, typ, n/ti.BlockElements) // special scales too
			}
			row := guardedBytes(raw, rng.IntN(8))
			if err := QuantizeQ8Row(gaussians(rng, n, 1), &r); err != nil {
				t.Fatal(err)
			}
			x := guardedQ8Row(&r, rng.IntN(8), rng.IntN(2) == 0)
			want := portable.dotQ8(typ, row, x)
			for _, s := range sets {
				if got := s.k.dotQ8(typ, row, x); !sameFloat(got, want) {
					t.Fatalf("%s n=%d on %s: %g (%#08x), portable %g (%#08x)", typ, n, s.name, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestDotQ8ErrorBound: the fast mode's error against the exact mode (Dot
// on the float32 activations) stays within what quantizing the activations
// allows: |x - x^| <= d0*(1/2 + 127/2048) per element (rounding to the
// unrounded scale d0, then d0 rounded to fp16), times sum |w| per block, plus
// float32 rounding.
func TestDotQ8ErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	var r Q8Row
	for _, typ := range q8Types {
		for trial := 0; trial < 20; trial++ {
			n := 4096
			row := randomRow(rng, typ, n)
			x := gaussians(rng, n, 1)
			if err := QuantizeQ8Row(x, &r); err != nil {
				t.Fatal(err)
			}
			w := make([]float32, n)
			if err := quant.Dequantize(typ, row, w); err != nil {
				t.Fatal(err)
			}
			exact := Dot(typ, row, x, make([]float32, n))
			fast := DotQ8(typ, row, &r)
			bound := q8ErrorBound(w, x)
			if e := math.Abs(float64(fast) - float64(exact)); e > bound {
				t.Fatalf("%s trial %d: fast %g exact %g, error %g over the bound %g", typ, trial, fast, exact, e, bound)
			}
		}
	}
}

// q8ErrorBound is TestDotQ8ErrorBound's bound on |DotQ8 - Dot| for the
// decoded weights w and the float32 activations x.
func q8ErrorBound(w, x []float32) float64 {
	var bound, mag float64
	for b := 0; b < len(x)/32; b++ {
		var amax, sw float64
		for j := 32 * b; j < 32*b+32; j++ {
			amax = math.Max(amax, math.Abs(float64(x[j])))
			sw += math.Abs(float64(w[j]))
			mag += math.Abs(float64(w[j]) * float64(x[j]))
		}
		bound += amax / 127 * (0.5 + 127.0/2048) * sw
	}
	return bound + 1e-5*mag
}

// TestDotQ8RejectsShapes: a row too short or a length that is not whole
// blocks panics instead of reading past the row.
func TestDotQ8RejectsShapes(t *testing.T) {
	var r Q8Row
	if err := QuantizeQ8Row(make([]float32, 96), &r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ quant.Type
		row int
	}{{quant.Q8_0, 3*34 - 1}, {quant.Q2_0, 100}, {quant.F32, 1000}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with %d row bytes for 96 weights: no panic", c.typ, c.row)
				}
			}()
			DotQ8(c.typ, make([]byte, c.row), &r)
		}()
	}
}

// BenchmarkDotQ8: one row of 2560 or 640 weights (the field expert shape's
// gate/up and down rows) against activations quantized once, beside Dot on
// float32 activations; and 768, the shortest row of whole 256-weight blocks
// above 640, for the K-quants (a 640-wide row is not whole blocks of
// theirs). Bytes are the weight bytes read.
func BenchmarkDotQ8(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{2560, 640, 768} {
		x := gaussians(rng, n, 1)
		var r Q8Row
		if err := QuantizeQ8Row(x, &r); err != nil {
			b.Fatal(err)
		}
		scratch := make([]float32, n)
		for _, typ := range q8Types {
			ti, _ := quant.Info(typ)
			if n%ti.BlockElements != 0 {
				continue
			}
			row, err := SampleBlocks(typ, n/ti.BlockElements, 3)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/%d/q8", typ, n), func(b *testing.B) {
				b.SetBytes(int64(len(row)))
				for b.Loop() {
					DotQ8(typ, row, &r)
				}
			})
			b.Run(fmt.Sprintf("%s/%d/f32", typ, n), func(b *testing.B) {
				b.SetBytes(int64(len(row)))
				for b.Loop() {
					Dot(typ, row, x, scratch)
				}
			})
		}
		b.Run(fmt.Sprintf("quantize-activations/%d", n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				QuantizeQ8Row(x, &r)
			}
		})
	}
}

// TestQ8DecodersMatchPortable: each vector decoder writes exactly the
// portable decoder's weights, multipliers and scales, and only for the
// groups asked, at the place asked.
func TestQ8DecodersMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	for _, typ := range q8Types {
		dec := host.q8decode[typ]
		if dec == nil {
			continue
		}
		ti, _ := quant.Info(typ)
		const groups = 20
		row := randomBlocks(rng, typ, groups*256/ti.BlockElements)
		for g0 := 0; g0 < groups; g0 += 3 {
			for ng := 1; ng <= min(decodedGroups, groups-g0); ng++ {
				at := (g0 + ng) % (decodedGroups - ng + 1)
				var p, want, got q8Decoded
				for i := range got.w {
					got.w[i], want.w[i] = 0x55, 0x55
				}
				for i := range got.m {
					got.m[i], want.m[i], got.dw[i], want.dw[i] = 0x77, 0x77, 3, 3
				}
				decodeGroupsPortable(typ, row, g0, ng, &p)
				copy(want.w[256*at:256*(at+ng)], p.w[:])
				copy(want.m[8*at:8*(at+ng)], p.m[:])
				copy(want.dw[8*at:8*(at+ng)], p.dw[:])
				dec(row, g0, ng, &got, at)
				for i := range want.w {
					if got.w[i] != want.w[i] {
						t.Fatalf("%s groups %d+%d at %d: weight %d is %d, want %d", typ, g0, ng, at, i, got.w[i], want.w[i])
					}
				}
				for i := range want.m {
					if got.m[i] != want.m[i] || !sameFloat(got.dw[i], want.dw[i]) {
						t.Fatalf("%s groups %d+%d at %d: sub-block %d: m %d dw %g, want %d %g", typ, g0, ng, at, i, got.m[i], got.dw[i], want.m[i], want.dw[i])
					}
				}
			}
		}
	}
}

// TestDotQ8RowsEqualsDotQ8: every activation row's result is DotQ8's bits,
// over every whole-block length 0..4096 and several row counts, on every
// kernel set; and the decoded-weights kernel, fed by the portable decoder,
// gives them for every type (so each type's decoder only has to match
// decodeGroupsPortable).
func TestDotQ8RowsEqualsDotQ8(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	sets := testSets()
	if host.q8dotDecoded != nil {
		k := host
		for _, typ := range q8Types {
			if isKQuant(typ) || isIQHalves(typ) {
				continue // no q8Decoded form (scales and mins per 16)
			}
			k.q8decode[typ] = func(row []byte, g0, ng int, d *q8Decoded, at int) {
				var p q8Decoded
				decodeGroupsPortable(typ, row, g0, ng, &p)
				copy(d.w[256*at:256*(at+ng)], p.w[:])
				copy(d.m[8*at:8*(at+ng)], p.m[:])
				copy(d.dw[8*at:8*(at+ng)], p.dw[:])
			}
		}
		sets = append(sets, namedSet{"portable decoders", &k})
	}
	for _, typ := range q8Types {
		ti, _ := quant.Info(typ)
		for n := 0; n <= 4096; n += ti.BlockElements {
			raw := randomRow(rng, typ, n)
			if rng.IntN(4) == 0 {
				raw = randomBlocks(rng, typ, n/ti.BlockElements)
			}
			row := guardedBytes(raw, rng.IntN(8))
			nrows := []int{1, 2, 3, 17}[rng.IntN(4)]
			xs := make([]*Q8Row, nrows)
			for r := range xs {
				var q Q8Row
				if err := QuantizeQ8Row(gaussians(rng, n, 1), &q); err != nil {
					t.Fatal(err)
				}
				xs[r] = guardedQ8Row(&q, rng.IntN(8), rng.IntN(2) == 0)
			}
			for _, s := range sets {
				out, outOK := guardedFloats(nrows, rng.IntN(4))
				s.k.dotQ8Rows(typ, row, xs, out)
				for r, x := range xs {
					if want := portable.dotQ8(typ, row, x); !sameFloat(out[r], want) {
						t.Fatalf("%s n=%d rows=%d on %s: row %d is %g, DotQ8 %g", typ, n, nrows, s.name, r, out[r], want)
					}
				}
				if !outOK() {
					t.Fatalf("%s n=%d on %s: wrote outside out", typ, n, s.name)
				}
			}
		}
	}
}

// BenchmarkDotQ8Rows: one row of 2560 weights against 8 activation rows at
// once, beside 8 DotQ8 calls. Bytes are the weight bytes read (once).
func BenchmarkDotQ8Rows(b *testing.B) {
	const n, rows = 2560, 8
	rng := rand.New(rand.NewPCG(9, 9))
	xs := make([]*Q8Row, rows)
	for r := range xs {
		xs[r] = &Q8Row{}
		if err := QuantizeQ8Row(gaussians(rng, n, 1), xs[r]); err != nil {
			b.Fatal(err)
		}
	}
	out := make([]float32, rows)
	for _, typ := range q8Types {
		ti, _ := quant.Info(typ)
		row, err := SampleBlocks(typ, n/ti.BlockElements, 3)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/rows", typ), func(b *testing.B) {
			b.SetBytes(int64(len(row)))
			for b.Loop() {
				DotQ8Rows(typ, row, xs, out)
			}
		})
		b.Run(fmt.Sprintf("%s/each", typ), func(b *testing.B) {
			b.SetBytes(int64(len(row)))
			for b.Loop() {
				for r, x := range xs {
					out[r] = DotQ8(typ, row, x)
				}
			}
		})
	}
}

// TestMatQ8ThreadsAndBatch: MatVecQ8, MatMulQ8 and MatVecsQ8 give DotQ8's
// bits for every row and input at any thread count.
func TestMatQ8ThreadsAndBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	const cols, rows, ntok = 512, 300, 5
	for _, typ := range q8Types {
		var data []byte
		for r := 0; r < rows; r++ {
			data = append(data, randomRow(rng, typ, cols)...)
		}
		m, err := NewMatrix(typ, data, cols, rows)
		if err != nil {
			t.Fatal(err)
		}
		if !m.CanDotQ8() {
			t.Fatalf("%s: CanDotQ8 false", typ)
		}
		xs := make([]*Q8Row, ntok)
		for i := range xs {
			xs[i] = &Q8Row{}
			if err := QuantizeQ8Row(gaussians(rng, cols, 1), xs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, th := range []int{1, 2, 3, 8} {
			p := NewPool(th)
			out := make([]float32, ntok*rows)
			p.MatMulQ8(&m, xs, out)
			one := make([]float32, rows)
			for i, x := range xs {
				p.MatVecQ8(&m, x, one)
				for r := 0; r < rows; r++ {
					want := DotQ8(typ, data[r*int(m.RowBytes):], x)
					if !sameFloat(out[i*rows+r], want) || !sameFloat(one[r], want) {
						t.Fatalf("%s threads=%d input %d row %d: MatMulQ8 %g MatVecQ8 %g DotQ8 %g", typ, th, i, r, out[i*rows+r], one[r], want)
					}
				}
			}
		}
	}
	// MatVecsQ8 over matrices of every type at once gives MatVecQ8's bits.
	var ms []*Matrix
	var xs []*Q8Row
	var outs [][]float32
	for i, typ := range q8Types {
		cols, rows := 256*(i+1), 40+i*17
		var data []byte
		for r := 0; r < rows; r++ {
			data = append(data, randomRow(rng, typ, cols)...)
		}
		m, err := NewMatrix(typ, data, cols, rows)
		if err != nil {
			t.Fatal(err)
		}
		x := &Q8Row{}
		if err := QuantizeQ8Row(gaussians(rng, cols, 1), x); err != nil {
			t.Fatal(err)
		}
		ms, xs, outs = append(ms, &m), append(xs, x), append(outs, make([]float32, rows))
	}
	NewPool(3).MatVecsQ8(ms, xs, outs)
	for i, m := range ms {
		want := make([]float32, m.Rows)
		NewPool(1).MatVecQ8(m, xs[i], want)
		for r := range want {
			if !sameFloat(outs[i][r], want[r]) {
				t.Fatalf("MatVecsQ8 matrix %d row %d: %g, MatVecQ8 %g", i, r, outs[i][r], want[r])
			}
		}
	}
	// MatVecsQ8GLU over pairs of them (gate: a matrix less its last row, up:
	// the same less its first) gives MatVecQ8's bits, and glu sees each row
	// once, after both of its products.
	for _, th := range []int{1, 2, 3} {
		var gates, ups []*Matrix
		var gx []*Q8Row
		var gs, us [][]float32
		for i, m := range ms {
			g, u := *m, *m
			g.Rows, u.Rows = m.Rows-1, m.Rows-1
			g.Data, u.Data = m.Data[:g.Rows*m.RowBytes], m.Data[m.RowBytes:]
			gates, ups, gx = append(gates, &g), append(ups, &u), append(gx, xs[i])
			gs, us = append(gs, make([]float32, g.Rows)), append(us, make([]float32, u.Rows))
		}
		seen := make([][]int32, len(gates))
		for i := range seen {
			seen[i] = make([]int32, gates[i].Rows)
		}
		var mu sync.Mutex
		NewPool(th).MatVecsQ8GLU(gates, ups, gx, gs, us, func(i, lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			for r := lo; r < hi; r++ {
				if !sameFloat(gs[i][r], DotQ8(gates[i].Type, gates[i].Row(r), gx[i])) || !sameFloat(us[i][r], DotQ8(ups[i].Type, ups[i].Row(r), gx[i])) {
					t.Errorf("threads %d pair %d row %d: glu before its products", th, i, r)
				}
				seen[i][r]++
			}
		})
		for i := range gates {
			wg, wu := make([]float32, gates[i].Rows), make([]float32, ups[i].Rows)
			NewPool(1).MatVecQ8(gates[i], gx[i], wg)
			NewPool(1).MatVecQ8(ups[i], gx[i], wu)
			for r := range wg {
				if !sameFloat(gs[i][r], wg[r]) || !sameFloat(us[i][r], wu[r]) || seen[i][r] != 1 {
					t.Fatalf("MatVecsQ8GLU threads %d pair %d row %d: %g %g, MatVecQ8 %g %g, glu saw it %d times", th, i, r, gs[i][r], us[i][r], wg[r], wu[r], seen[i][r])
				}
			}
		}
	}
	m, _ := NewMatrix(quant.BF16, make([]byte, 2*64), 64, 1)
	if m.CanDotQ8() {
		t.Fatal("BF16 matrix accepted for DotQ8")
	}
}

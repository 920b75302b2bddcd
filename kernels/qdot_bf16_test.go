package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestQuantizeBF16Row: every activation's hi is quant's Float32ToBF16 of
// the float32 and its lo that of the exact remainder, hi + lo within 2^-17
// of x, the buffer zero to the end of its chunk, also when a shorter row
// reuses a longer row's buffer.
func TestQuantizeBF16Row(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	var r BF16Row
	for _, n := range []int{0, 1, 127, 128, 129, 4096, 3} {
		x := gaussians(rng, n, 1)
		for i := range x {
			if rng.IntN(8) == 0 {
				x[i] = math.Float32frombits(rng.Uint32())
			}
		}
		QuantizeBF16Row(x, &r)
		if r.Len() != n || !r.padded() {
			t.Fatalf("n=%d: Len %d padded %v", n, r.Len(), r.padded())
		}
		for i, f := range x {
			hi, lo := r.hiLo(i)
			fh := quant.BF16ToFloat32(hi)
			rem := f - fh
			if hi != quant.Float32ToBF16(f) || lo != quant.Float32ToBF16(rem) {
				t.Fatalf("n=%d element %d (%g): hi %#04x lo %#04x, quant %#04x %#04x", n, i, f, hi, lo, quant.Float32ToBF16(f), quant.Float32ToBF16(rem))
			}
			if a := math.Abs(float64(f)); a < 0x1p100 && a > 0x1p-100 {
				if float64(rem) != float64(f)-float64(fh) {
					t.Fatalf("n=%d element %d: remainder %g not exact", n, i, rem)
				}
				if e := math.Abs(float64(f) - float64(fh) - float64(quant.BF16ToFloat32(lo))); e > 0x1p-17*a {
					t.Fatalf("n=%d element %d: hi+lo off %g by %g", n, i, f, e)
				}
			}
		}
		for i := n; i < (n+bf16Chunk-1)/bf16Chunk*bf16Chunk; i++ {
			if hi, lo := r.hiLo(i); hi != 0 || lo != 0 {
				t.Fatalf("n=%d: padding %d is %#04x %#04x", n, i, hi, lo)
			}
		}
	}
}

// bf16StepBig is bf16Step's definition in exact arithmetic for every case:
// DAZ inputs, the exact sum rounded once to nearest even, a result below
// 2^-126 at 24 bits flushed to a zero of its sign.
func bf16StepBig(acc float32, w, x uint16) float32 {
	p := bf16DAZ(w) * bf16DAZ(x)
	if math.IsInf(p, 0) || math.IsNaN(p) || math.IsInf(float64(acc), 0) || math.IsNaN(float64(acc)) {
		return float32(float64(acc) + p)
	}
	if p == 0 {
		return acc + float32(p) // IEEE's signed zeros
	}
	s := new(big.Float).SetPrec(2000).SetFloat64(float64(acc))
	s.Add(s, new(big.Float).SetPrec(2000).SetFloat64(p))
	if s.Sign() == 0 {
		return 0
	}
	r24, _ := new(big.Float).SetPrec(24).Set(s).Float64()
	if math.Abs(r24) < 0x1p-126 {
		return float32(math.Copysign(0, r24))
	}
	f, _ := s.Float32()
	return f
}

// adversarialBF16 is a bfloat16 drawn to reach every case of a step: raw
// bits (NaN, infinities, subnormals), exponents near the bottom and the top
// of the range, and ordinary values.
func adversarialBF16(rng *rand.Rand) uint16 {
	sign := uint16(rng.IntN(2)) << 15
	m := uint16(rng.IntN(128))
	switch rng.IntN(6) {
	case 0:
		return uint16(rng.Uint32())
	case 1:
		return sign | uint16(rng.IntN(8))<<7 | m
	case 2:
		return sign | uint16(248+rng.IntN(8))<<7 | m
	case 3:
		return sign | uint16(60+rng.IntN(8))<<7 | m
	}
	return sign | uint16(120+rng.IntN(12))<<7 | m
}

// TestBF16StepExact: the step's fast branches give the exact definition's
// bits, on adversarial operands and lanes.
func TestBF16StepExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for i := 0; i < 200000; i++ {
		var acc float32
		switch rng.IntN(4) {
		case 0:
			acc = math.Float32frombits(rng.Uint32())
		case 1:
			acc = float32(rng.NormFloat64()) * 0x1p-120
		default:
			acc = float32(rng.NormFloat64())
		}
		if acc != 0 && math.Abs(float64(acc)) < 0x1p-126 {
			acc = 0x1p-126 // a lane is never subnormal
		}
		w, x := adversarialBF16(rng), adversarialBF16(rng)
		got, want := bf16Step(acc, w, x), bf16StepBig(acc, w, x)
		if !sameFloat(got, want) {
			t.Fatalf("acc %g (%#08x) w %#04x x %#04x: step %g (%#08x), exact %g (%#08x)", acc, math.Float32bits(acc), w, x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// bf16TestRow is a row of n BF16 weights and activations of one of several
// kinds: ordinary values, raw bits, or adversarial exponents (products that
// underflow or overflow, subnormals), so that every kernel's fallback runs.
func bf16TestRow(rng *rand.Rand, n int) ([]byte, []float32) {
	row := make([]byte, 2*n)
	x := gaussians(rng, n, 1)
	kind := rng.IntN(6)
	for i := 0; i < n; i++ {
		var w uint16
		switch kind {
		case 0:
			w = uint16(rng.Uint32())
		case 1:
			w = adversarialBF16(rng)
			x[i] = quant.BF16ToFloat32(adversarialBF16(rng))
		default:
			w = quant.Float32ToBF16(float32(rng.NormFloat64()))
		}
		binary.LittleEndian.PutUint16(row[2*i:], w)
	}
	if kind == 2 && n > 0 {
		// One underflowing product in an ordinary row.
		binary.LittleEndian.PutUint16(row[2*rng.IntN(n):], 0x0123)
		x[rng.IntN(n)] = 0x1p-100
	}
	return row, x
}

// guardedBF16Row copies r into a buffer with NaN guards before and after
// it, at a shift of the start.
func guardedBF16Row(r *BF16Row, shift int) *BF16Row {
	const band = 64
	buf := make([]uint16, band+shift+len(r.v)+band)
	for i := range buf {
		buf[i] = 0x7fc1
	}
	lo, hi := band+shift, band+shift+len(r.v)
	copy(buf[lo:hi], r.v)
	return &BF16Row{n: r.n, v: buf[lo:hi:hi]}
}

// TestDotBF16LengthsGuarded: every kernel set gives the portable path's
// bits over every length 0..4096, rows and activations unaligned between
// guard bands, on ordinary, raw and adversarial values.
func TestDotBF16LengthsGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	sets := testSets()
	var r BF16Row
	for n := 0; n <= 4096; n++ {
		raw, xf := bf16TestRow(rng, n)
		row := guardedBytes(raw, rng.IntN(8))
		QuantizeBF16Row(xf, &r)
		x := guardedBF16Row(&r, rng.IntN(8))
		want := portable.dotBF16(row, x)
		for _, s := range sets {
			if got := s.k.dotBF16(row, x); !sameFloat(got, want) {
				t.Fatalf("n=%d on %s: %g (%#08x), portable %g (%#08x)", n, s.name, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	}
}

// bf16Ordinary is a row of n ordinary BF16 weights, its decoding and
// activations.
func bf16Ordinary(rng *rand.Rand, n int) ([]byte, []float32, []float32) {
	row := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(row[2*i:], quant.Float32ToBF16(float32(rng.NormFloat64())))
	}
	w := make([]float32, n)
	if err := quant.Dequantize(quant.BF16, row, w); err != nil {
		panic(err)
	}
	return row, w, gaussians(rng, n, 1)
}

// TestDotBF16Truth: the portable path against a float64 dot of quant's
// decoded weights and the rounded activations hi + lo, within the float32
// summation bound: each lane adds 2n/64 products, the fold 4 levels, so the
// error is at most (2n/64+4) * 2^-24 * sum (|w hi| + |w lo|) (to first
// order).
func TestDotBF16Truth(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	var r BF16Row
	for _, n := range []int{1, 64, 127, 640, 2560, 4096} {
		for trial := 0; trial < 10; trial++ {
			row, w, x := bf16Ordinary(rng, n)
			QuantizeBF16Row(x, &r)
			var sum, mag float64
			for i := range w {
				hi, lo := r.hiLo(i)
				ph := float64(w[i]) * float64(quant.BF16ToFloat32(hi))
				pl := float64(w[i]) * float64(quant.BF16ToFloat32(lo))
				sum += ph + pl
				mag += math.Abs(ph) + math.Abs(pl)
			}
			got := portable.dotBF16(row, &r)
			bound := float64(2*n/64+5) * 0x1p-24 * mag * 1.01
			if e := math.Abs(float64(got) - sum); e > bound {
				t.Fatalf("n=%d: %g, float64 %g, error %g over %g", n, got, sum, e, bound)
			}
		}
	}
}

// TestDotBF16ErrorBound: the fast mode's error against the exact mode (Dot
// on the float32 activations): hi + lo is within 2^-18 of an activation
// (2^-9 of the remainder 2^-9 of it), plus both paths' float32 summation.
func TestDotBF16ErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 60))
	var r BF16Row
	for _, n := range []int{64, 640, 2560, 4096} {
		for trial := 0; trial < 20; trial++ {
			row, w, x := bf16Ordinary(rng, n)
			QuantizeBF16Row(x, &r)
			exact := Dot(quant.BF16, row, x, make([]float32, n))
			fast := DotBF16(row, &r)
			var mag float64
			for i := range w {
				mag += math.Abs(float64(w[i]) * float64(x[i]))
			}
			bound := 0x1p-18*mag + float64(2*n/64+n/32+16)*0x1p-24*mag
			if e := math.Abs(float64(fast) - float64(exact)); e > bound {
				t.Fatalf("n=%d: fast %g exact %g, error %g over %g", n, fast, exact, e, bound)
			}
		}
	}
}

// TestDotBF16RejectsShapes: a row shorter than the activations panics.
func TestDotBF16RejectsShapes(t *testing.T) {
	var r BF16Row
	QuantizeBF16Row(make([]float32, 100), &r)
	defer func() {
		if recover() == nil {
			t.Fatal("199-byte row for 100 weights: no panic")
		}
	}()
	DotBF16(make([]byte, 199), &r)
}

// TestMatBF16Threads: MatVecBF16, MatMulBF16 and MatVecsBF16 give
// DotBF16's bits for every row and input at any thread count.
func TestMatBF16Threads(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	const cols, rows, ntok = 300, 200, 5
	data, _, _ := bf16Ordinary(rng, cols*rows)
	m, err := NewMatrix(quant.BF16, data, cols, rows)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]*BF16Row, ntok)
	for i := range xs {
		xs[i] = &BF16Row{}
		QuantizeBF16Row(gaussians(rng, cols, 1), xs[i])
	}
	for _, th := range []int{1, 2, 3, 8} {
		p := NewPool(th)
		out := make([]float32, ntok*rows)
		p.MatMulBF16(&m, xs, out)
		one := make([]float32, rows)
		outs := make([][]float32, ntok)
		ms := make([]*Matrix, ntok)
		for i := range outs {
			outs[i], ms[i] = make([]float32, rows), &m
		}
		p.MatVecsBF16(ms, xs, outs)
		for i, x := range xs {
			p.MatVecBF16(&m, x, one)
			for r := 0; r < rows; r++ {
				want := DotBF16(m.Row(r), x)
				if !sameFloat(out[i*rows+r], want) || !sameFloat(one[r], want) || !sameFloat(outs[i][r], want) {
					t.Fatalf("threads=%d input %d row %d: MatMulBF16 %g MatVecBF16 %g MatVecsBF16 %g DotBF16 %g", th, i, r, out[i*rows+r], one[r], outs[i][r], want)
				}
			}
		}
	}
	if q, _ := NewMatrix(quant.Q8_0, make([]byte, 34), 32, 1); q.CanDotBF16() {
		t.Fatal("Q8_0 matrix accepted for DotBF16")
	}
}

// BenchmarkDotBF16: one BF16 row of 2560 or 640 weights against rounded
// activations, beside Dot on float32 activations (the exact mode).
func BenchmarkDotBF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{2560, 640} {
		row, _, x := bf16Ordinary(rng, n)
		var r BF16Row
		QuantizeBF16Row(x, &r)
		scratch := make([]float32, n)
		b.Run(fmt.Sprintf("BF16/%d/bf16", n), func(b *testing.B) {
			b.SetBytes(int64(len(row)))
			for b.Loop() {
				DotBF16(row, &r)
			}
		})
		b.Run(fmt.Sprintf("BF16/%d/f32", n), func(b *testing.B) {
			b.SetBytes(int64(len(row)))
			for b.Loop() {
				Dot(quant.BF16, row, x, scratch)
			}
		})
		b.Run(fmt.Sprintf("round-activations/%d", n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				QuantizeBF16Row(x, &r)
			}
		})
	}
}

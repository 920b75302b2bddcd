package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// TestDecodeRowMatchesGGML decodes ggml's own quantized fixtures and compares
// with ggml's to_float output bit for bit: every type the engine can run,
// through its own decoders or the generic fallback.
func TestDecodeRowMatchesGGML(t *testing.T) {
	for _, name := range []string{"F16", "BF16", "Q8_0", "IQ4_NL", "Q2_0", "IQ3_S", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
		"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS", "IQ3_XXS", "IQ2_XS", "IQ2_XXS", "IQ2_S", "IQ1_S", "IQ1_M",
		"MXFP4", "Q1_0", "TQ1_0", "TQ2_0"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(testutil.Path(t, "fixtures", "ggml", name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			qi, ok := f.Tensor("q")
			ri, ok2 := f.Tensor("ref")
			if !ok || !ok2 {
				t.Fatal("fixture lacks q or ref")
			}
			q, err := f.ReadTensor(qi)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := f.ReadTensor(ri)
			if err != nil {
				t.Fatal(err)
			}
			ncol := int(qi.Dims[0])
			if !CanDecode(qi.Type) {
				t.Fatalf("no decoder for %s", qi.Type)
			}
			x := make([]float32, ncol)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			scratch := make([]float32, ncol)
			got := make([]float32, ncol)
			rowBytes := int(qi.RowBytes())
			for r := 0; r < int(qi.Rows()); r++ {
				if err := DecodeRow(qi.Type, q[r*rowBytes:(r+1)*rowBytes], got); err != nil {
					t.Fatal(err)
				}
				for j, g := range got {
					want := math.Float32frombits(binary.LittleEndian.Uint32(rb[4*(r*ncol+j):]))
					if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
						t.Fatalf("row %d col %d: got %g want %g", r, j, g, want)
					}
				}
				// Dot on the stored row is the ordered dot of the decoded one.
				want := dotF32Generic(got, x)
				if d := Dot(qi.Type, q[r*rowBytes:(r+1)*rowBytes], x, scratch); math.Float32bits(d) != math.Float32bits(want) && !(d != d && want != want) {
					t.Fatalf("row %d: Dot %g, decode then dot %g", r, d, want)
				}
			}
		})
	}
}

func randomRow(rng *rand.Rand, t quant.Type, n int) []byte {
	rb, _ := quant.RowBytes(t, int64(n))
	b := make([]byte, rb)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	// Keep scales and plain values finite: fp16/bf16 exponents below the top.
	switch t {
	case quant.F32:
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
	case quant.BF16, quant.F16:
		for i := 0; i < n; i++ {
			b[2*i+1] &= 0xbf
		}
	case quant.Q8_0, quant.IQ4_NL, quant.Q2_0:
		ti, _ := quant.Info(t)
		for o := 0; o < len(b); o += ti.BlockBytes {
			b[o+1] &= 0x3b
		}
	case quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K:
		finiteKScales(t, b)
	case quant.IQ4_XS, quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S:
		ti, _ := quant.Info(t)
		for o := 0; o < len(b); o += ti.BlockBytes {
			b[o+1] &= 0x3b
		}
	case quant.IQ1_M:
		// d's fp16 exponent takes bit 14 from the last scale word's top.
		for o := 0; o < len(b); o += 56 {
			b[o+55] &= 0xbf
		}
	case quant.MXFP4:
		for o := 0; o < len(b); o += 17 {
			b[o] = 118 + b[o]%20 // 2^-11 .. 2^8
		}
	}
	return b
}

// TestDotEqualsDecodeThenDot: every path (fused asm, decode + asm, portable)
// gives the bits of the portable DotF32 of the decoded row.
func TestDotEqualsDecodeThenDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []quant.Type{quant.F32, quant.BF16, quant.F16, quant.Q8_0, quant.IQ4_NL, quant.Q2_0} {
		for _, n := range []int{64, 256, 1024} {
			row := randomRow(rng, typ, n)
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			dec := make([]float32, n)
			if err := quant.Dequantize(typ, row, dec); err != nil {
				t.Fatal(err)
			}
			want := dotF32Generic(dec, x)
			var sum float64
			for i := range x {
				sum += float64(dec[i]) * float64(x[i])
			}
			if d := math.Abs(float64(want) - sum); d > 1e-4*(1+math.Abs(sum)) {
				t.Fatalf("%s n=%d: ordered dot %g far from float64 %g", typ, n, want, sum)
			}
			scratch := make([]float32, n)
			for _, s := range append(testSets(), namedSet{"portable", &portable}) {
				if got := s.k.dotRow(typ, row, x, scratch); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s n=%d on %s: got %g want %g", typ, n, s.name, got, want)
				}
			}
		}
	}
}

// guardedFloats returns a slice of n floats inside a buffer whose band
// floats on each side hold the guard NaN, and a check that they still do.
func guardedFloats(n, shift int) ([]float32, func() bool) {
	const band = 16
	buf := make([]float32, band+shift+n+band)
	for i := range buf {
		buf[i] = math.Float32frombits(guard)
	}
	lo, hi := band+shift, band+shift+n
	return buf[lo:hi:hi], func() bool {
		for i, v := range buf {
			if (i < lo || i >= hi) && math.Float32bits(v) != guard {
				return false
			}
		}
		return true
	}
}

// guardedBytes is guardedFloats for a row's bytes, the bands all 0xff (NaN
// scales and values in every type here, so a read past the row shows).
func guardedBytes(b []byte, shift int) []byte {
	const band = 64
	buf := make([]byte, band+shift+len(b)+band)
	for i := range buf {
		buf[i] = 0xff
	}
	lo, hi := band+shift, band+shift+len(b)
	copy(buf[lo:hi], b)
	return buf[lo:hi:hi]
}

// TestDotLengthsGuarded: Dot over every row length 0..1024 (every whole
// number of blocks), unaligned rows and activations between NaN guard bands,
// on every kernel set, equals DotF32 of quant's decoding, bit for bit, and
// writes nothing outside its scratch.
func TestDotLengthsGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, typ := range []quant.Type{quant.F32, quant.BF16, quant.F16, quant.Q8_0, quant.IQ4_NL, quant.Q2_0, quant.IQ3_S, quant.Q4_K} {
		ti, _ := quant.Info(typ)
		for n := 0; n <= 1024; n += ti.BlockElements {
			row := guardedBytes(randomRow(rng, typ, n), rng.IntN(8))
			x, xOK := guardedFloats(n, rng.IntN(8))
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			dec := make([]float32, n)
			if err := quant.Dequantize(typ, row, dec); err != nil {
				t.Fatal(err)
			}
			want := dotF32Generic(dec, x)
			for _, s := range append(testSets(), namedSet{"portable", &portable}) {
				scratch, scratchOK := guardedFloats(n, rng.IntN(8))
				got := s.k.dotRow(typ, row, x, scratch)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s n=%d on %s: got %g want %g", typ, n, s.name, got, want)
				}
				if !xOK() || !scratchOK() {
					t.Fatalf("%s n=%d on %s: wrote outside x or scratch", typ, n, s.name)
				}
			}
		}
	}
}

// TestDotF32AxpyLengthsGuarded: DotF32 and Axpy over every length 0..1024
// between NaN guard bands, on every kernel set, against the closed-form
// definitions (dot.go's order; y + round(a*x) per element).
func TestDotF32AxpyLengthsGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for n := 0; n <= 1024; n++ {
		w, wOK := guardedFloats(n, rng.IntN(8))
		x, xOK := guardedFloats(n, rng.IntN(8))
		y0 := make([]float32, n)
		for i := range x {
			w[i], x[i], y0[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		a := float32(rng.NormFloat64())
		want := dotF32Generic(w, x)
		for _, s := range append(testSets(), namedSet{"portable", &portable}) {
			if got := s.k.dotF32Slices(w, x); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("DotF32 n=%d on %s: got %g want %g", n, s.name, got, want)
			}
			y, yOK := guardedFloats(n, rng.IntN(8))
			copy(y, y0)
			s.k.axpySlices(y, a, x)
			for i := range y {
				if e := y0[i] + float32(a*x[i]); math.Float32bits(y[i]) != math.Float32bits(e) {
					t.Fatalf("Axpy n=%d on %s: y[%d] = %g want %g", n, s.name, i, y[i], e)
				}
			}
			if !wOK() || !xOK() || !yOK() {
				t.Fatalf("n=%d on %s: wrote outside its slices", n, s.name)
			}
		}
	}
}

// TestSignallingNaNScale: an fp16 value or block scale that is a signalling
// NaN decodes, on every path, to quant's bits: the NaN quieted with sign and
// payload kept, as F16C's VCVTPH2PS gives it (kernels once had its own
// portable decoders, which kept such a NaN signalling).
func TestSignallingNaNScale(t *testing.T) {
	for _, h := range []uint16{0x7c01, 0xfd55, 0x7dff} {
		wantF16 := uint32(h&0x8000)<<16 | 0x7fc00000 | uint32(h&0x3ff)<<13
		for _, typ := range []quant.Type{quant.F16, quant.Q8_0, quant.IQ4_NL, quant.Q2_0, quant.Q4_0} {
			ti, _ := quant.Info(typ)
			n := 64
			row := make([]byte, n/ti.BlockElements*ti.BlockBytes)
			for i := range row {
				row[i] = byte(i*7 + 1)
			}
			if typ == quant.F16 {
				for i := 0; i < n; i++ {
					binary.LittleEndian.PutUint16(row[2*i:], h)
				}
			} else {
				for o := 0; o < len(row); o += ti.BlockBytes {
					binary.LittleEndian.PutUint16(row[o:], h)
				}
			}
			want := make([]float32, n)
			if err := quant.Dequantize(typ, row, want); err != nil {
				t.Fatal(err)
			}
			for i, v := range want {
				if b := math.Float32bits(v); b&0x7fc00000 != 0x7fc00000 || (typ == quant.F16 && b != wantF16) {
					t.Fatalf("%s %#04x: quant gives %#08x at %d, not a quiet NaN (want %#08x for F16)", typ, h, b, i, wantF16)
				}
			}
			x := make([]float32, n)
			for i := range x {
				x[i] = 1
			}
			for _, s := range append(testSets(), namedSet{"portable", &portable}) {
				got := make([]float32, n)
				if err := s.k.decodeRow(typ, row, got); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %#04x on %s: element %d is %#08x, quant %#08x", typ, h, s.name, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
				if d := s.k.dotRow(typ, row, x, make([]float32, n)); d == d {
					t.Fatalf("%s %#04x on %s: dot %g, want NaN", typ, h, s.name, d)
				}
			}
		}
	}
}

func TestDotF32Tail(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 31, 33, 100} {
		w := make([]float32, n)
		x := make([]float32, n)
		for i := range w {
			w[i], x[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		want := dotF32Generic(w, x)
		if got := DotF32(w, x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n=%d: %g vs %g", n, got, want)
		}
	}
}

// TestMatMulThreadsAndBatch: results do not depend on the thread count or on
// batching inputs.
func TestMatMulThreadsAndBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const cols, rows, ntok = 256, 300, 5
	for _, typ := range []quant.Type{quant.BF16, quant.Q8_0, quant.IQ4_NL} {
		var data []byte
		for r := 0; r < rows; r++ {
			data = append(data, randomRow(rng, typ, cols)...)
		}
		m, err := NewMatrix(typ, data, cols, rows)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]float32, ntok*cols)
		for i := range xs {
			xs[i] = float32(rng.NormFloat64())
		}
		ref := make([]float32, ntok*rows)
		NewPool(1).MatMul(&m, xs, ntok, ref)
		for _, th := range []int{2, 3, 8} {
			out := make([]float32, ntok*rows)
			NewPool(th).MatMul(&m, xs, ntok, out)
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(ref[i]) {
					t.Fatalf("%s threads=%d: element %d differs", typ, th, i)
				}
			}
		}
		for tok := 0; tok < ntok; tok++ {
			one := make([]float32, rows)
			NewPool(4).MatVec(&m, xs[tok*cols:(tok+1)*cols], one)
			for r := range one {
				if math.Float32bits(one[r]) != math.Float32bits(ref[tok*rows+r]) {
					t.Fatalf("%s token %d row %d: single %g batched %g", typ, tok, r, one[r], ref[tok*rows+r])
				}
			}
		}
	}
}

func TestNewMatrixRejects(t *testing.T) {
	if _, err := NewMatrix(quant.Q8_0, make([]byte, 100), 256, 2); err == nil {
		t.Fatal("short data accepted")
	}
	if _, err := NewMatrix(quant.Q8_0, make([]byte, 1000), 100, 1); err == nil {
		t.Fatal("row not a multiple of the block accepted")
	}
}

func TestMatVecsEqualsMatVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var ms []*Matrix
	var xs, outs [][]float32
	for i, typ := range []quant.Type{quant.Q2_0, quant.Q8_0, quant.BF16, quant.IQ4_NL} {
		cols, rows := 128*(i+1), 50+i*31
		var data []byte
		for r := 0; r < rows; r++ {
			data = append(data, randomRow(rng, typ, cols)...)
		}
		m, err := NewMatrix(typ, data, cols, rows)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, cols)
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		ms, xs, outs = append(ms, &m), append(xs, x), append(outs, make([]float32, rows))
	}
	NewPool(3).MatVecs(ms, xs, outs)
	for i, m := range ms {
		want := make([]float32, m.Rows)
		NewPool(1).MatVec(m, xs[i], want)
		for r := range want {
			if math.Float32bits(outs[i][r]) != math.Float32bits(want[r]) {
				t.Fatalf("matrix %d row %d: %g vs %g", i, r, outs[i][r], want[r])
			}
		}
	}
}

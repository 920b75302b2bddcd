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
			if err := DecodeRow(typ, row, dec); err != nil {
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
			for _, noAsm := range []bool{false, true} {
				Features.NoAsm = noAsm
				got := Dot(typ, row, x, scratch)
				Features.NoAsm = false
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s n=%d noasm=%v: got %g want %g", typ, n, noAsm, got, want)
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

func TestAxpySameBitsEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 8, 13, 64, 100} {
		x := make([]float32, n)
		y0 := make([]float32, n)
		for i := range x {
			x[i], y0[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		a := float32(rng.NormFloat64())
		var got [2][]float32
		for k, noAsm := range []bool{false, true} {
			Features.NoAsm = noAsm
			y := append([]float32(nil), y0...)
			Axpy(y, a, x)
			got[k] = y
		}
		Features.NoAsm = false
		for i := range got[0] {
			want := y0[i] + float32(a*x[i])
			if math.Float32bits(got[0][i]) != math.Float32bits(want) || math.Float32bits(got[1][i]) != math.Float32bits(want) {
				t.Fatalf("n=%d i=%d: %g %g want %g", n, i, got[0][i], got[1][i], want)
			}
		}
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

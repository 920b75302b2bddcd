package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// f32Bytes is w as little-endian float32 bytes, then guard bytes of NaN: a
// kernel reading past the row would turn its sum into NaN.
func f32Bytes(w []float32, guard int) []byte {
	b := make([]byte, 4*(len(w)+guard))
	for i := range len(w) + guard {
		v := float32(math.NaN())
		if i < len(w) {
			v = w[i]
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b[:4*len(w)]
}

// TestDotF32Rows2: each of the pair's dots is the bits of the portable
// dotF32Generic of its row, on every kernel set, every length 0..160 and
// the router's 2560, rows with guard bands after them.
func TestDotF32Rows2(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 13))
	lens := []int{2560, 4096 + 7}
	for n := 0; n <= 160; n++ {
		lens = append(lens, n)
	}
	for _, s := range testSets() {
		for _, n := range lens {
			w0, w1, x := make([]float32, n), make([]float32, n), make([]float32, n+8)
			for i := range n {
				w0[i], w1[i], x[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*1e3), float32(rng.NormFloat64())
			}
			for i := n; i < len(x); i++ {
				x[i] = float32(math.NaN())
			}
			r0, r1 := f32Bytes(w0, 16), f32Bytes(w1, 16)
			out := []float32{1, 2, 42}
			s.k.dotF32Rows2(r0, r1, x[:n], make([]float32, n), &out[0], &out[1])
			d0, d1 := out[0], out[1]
			if out[2] != 42 {
				t.Fatalf("%s n=%d: wrote past the pair", s.name, n)
			}
			if want := dotF32Generic(w0, x[:n]); math.Float32bits(d0) != math.Float32bits(want) {
				t.Fatalf("%s n=%d: row 0 %g, portable %g", s.name, n, d0, want)
			}
			if want := dotF32Generic(w1, x[:n]); math.Float32bits(d1) != math.Float32bits(want) {
				t.Fatalf("%s n=%d: row 1 %g, portable %g", s.name, n, d1, want)
			}
		}
	}
}

// TestMatVecF32Threads: a float32 matrix-vector product (the router's
// path, rows in pairs) gives each row Dot's bits at any thread count,
// odd and even row counts and row ranges.
func TestMatVecF32Threads(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, shape := range [][2]int{{1, 64}, {2, 64}, {3, 96}, {64, 2560}, {67, 2560}, {129, 100}} {
		rows, cols := shape[0], shape[1]
		w := make([]float32, rows*cols)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		m, err := NewMatrix(quant.F32, f32Bytes(w, 0), cols, rows)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for _, threads := range []int{1, 2, 3, 8} {
			p := NewPool(threads)
			out := make([]float32, rows+1)
			out[rows] = 42
			p.MatVec(&m, x, out[:rows])
			p.Close()
			for r := 0; r < rows; r++ {
				if want := dotF32Generic(w[r*cols:(r+1)*cols], x); math.Float32bits(out[r]) != math.Float32bits(want) {
					t.Fatalf("%d x %d, %d threads: row %d %g, portable %g", rows, cols, threads, r, out[r], want)
				}
			}
			if out[rows] != 42 {
				t.Fatalf("%d x %d, %d threads: wrote past the rows", rows, cols, threads)
			}
		}
	}
}

// BenchmarkMatVecF32Router is the router's product, 64 x 2560 float32,
// over 256 such matrices in turn (160 MiB, past the caches, as in a decode
// step), rows one at a time and in pairs (dotF32x2).
func BenchmarkMatVecF32Router(b *testing.B) {
	const rows, cols, mats = 64, 2560, 256
	rng := rand.New(rand.NewPCG(1, 2))
	ms := make([]Matrix, mats)
	for i := range ms {
		w := make([]float32, rows*cols)
		for j := range w {
			w[j] = float32(rng.NormFloat64())
		}
		m, err := NewMatrix(quant.F32, f32Bytes(w, 0), cols, rows)
		if err != nil {
			b.Fatal(err)
		}
		ms[i] = m
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, rows)
	for _, pairs := range []bool{false, true} {
		name := "single"
		if pairs {
			name = "pairs"
		}
		b.Run(name, func(b *testing.B) {
			saved := host.dotF32x2
			if !pairs {
				host.dotF32x2 = nil
			} else if saved == nil {
				b.Skip("no dotF32x2 kernel")
			}
			defer func() { host.dotF32x2 = saved }()
			p := NewPool(0)
			defer p.Close()
			b.SetBytes(rows * cols * 4)
			for i := 0; b.Loop(); i++ {
				p.MatVec(&ms[i%mats], x, out)
			}
		})
	}
}

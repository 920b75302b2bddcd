package optq

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/kernels"
)

// TestDotManyIsDotF32: every out[t] of dotMany (this CPU's path) is
// kernels.DotF32 of row t and a, bit for bit, over lengths with and
// without a tail and row counts around the four-row blocks, with a guard
// after out.
func TestDotManyIsDotF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, L := range []int{1, 31, 32, 33, 64, 95, 640, 2560, 2561} {
		for _, m := range []int{1, 3, 4, 5, 8, 11} {
			stride := L + rng.IntN(3)*8
			a := randMatrix(rng, L, 1)
			b := randMatrix(rng, (m-1)*stride+L, 1)
			all := make([]float32, m+1)
			all[m] = math.Float32frombits(0x7fc0dead)
			out := all[:m]
			dotMany(out, a, b, stride)
			for i := range out {
				want := kernels.DotF32(b[i*stride:i*stride+L], a)
				if math.Float32bits(out[i]) != math.Float32bits(want) {
					t.Fatalf("L %d m %d row %d: %v, DotF32 %v", L, m, i, out[i], want)
				}
			}
			if math.Float32bits(all[m]) != 0x7fc0dead {
				t.Fatalf("L %d m %d: guard overwritten", L, m)
			}
		}
	}
}

// BenchmarkDotMany: 32 tokens' dot products with one row of 2560 and of
// 640, by dotMany and by kernels.DotF32 one at a time.
func BenchmarkDotMany(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, L := range []int{640, 2560} {
		a, x := randMatrix(rng, L, 1), randMatrix(rng, 32*L, 1)
		out := make([]float32, 32)
		b.Run("many", func(b *testing.B) {
			for b.Loop() {
				dotMany(out, a, x, L)
			}
		})
		b.Run("one", func(b *testing.B) {
			for b.Loop() {
				dotManyGo(out, a, x, L)
			}
		})
	}
}

// TestProjectRowsIsDotF32: projectRows is kernels.DotF32 of every row and
// token, bit for bit, for row counts around its blocks of four.
func TestProjectRowsIsDotF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, c := range []struct{ rows, D, n int }{{1, 64, 3}, {4, 33, 5}, {7, 640, 32}, {9, 2560, 2}} {
		w, x := randMatrix(rng, c.rows*c.D, 1), randMatrix(rng, c.n*c.D, 1)
		out := make([]float32, c.rows*c.n)
		projectRows(out, w, c.rows, c.D, x, c.n)
		for i := 0; i < c.rows; i++ {
			for k := 0; k < c.n; k++ {
				if want := kernels.DotF32(w[i*c.D:(i+1)*c.D], x[k*c.D:(k+1)*c.D]); math.Float32bits(out[i*c.n+k]) != math.Float32bits(want) {
					t.Fatalf("%+v row %d token %d: %v, DotF32 %v", c, i, k, out[i*c.n+k], want)
				}
			}
		}
	}
}

// BenchmarkProjectField: a gate's products with 32 tokens (640 rows of
// 2560), row by row (dotMany per row) and four rows at a time.
func BenchmarkProjectField(b *testing.B) {
	const rows, D, n = 640, 2560, 32
	rng := rand.New(rand.NewPCG(2, 2))
	w, x := randMatrix(rng, rows*D, 1), randMatrix(rng, n*D, 1)
	out := make([]float32, rows*n)
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			for i := 0; i < rows; i++ {
				dotMany(out[i*n:(i+1)*n], w[i*D:(i+1)*D], x, D)
			}
		}
	})
	b.Run("fours", func(b *testing.B) {
		for b.Loop() {
			projectRows(out, w, rows, D, x, n)
		}
	})
}

// TestAxpyTokens: axpyTokens (the vector path where the CPU has it) gives
// axpyTokensGo's bits for rows of 0 to 704 values (multiples of 64 and
// not), 0 to 40 tokens in any order with repeats, and writes nothing past
// o (a guard band after it).
func TestAxpyTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for trial := 0; trial < 400; trial++ {
		F := []int{0, 64, 128, 640, 704, 70, 8}[trial%7]
		n := rng.IntN(12) + 1
		x := randMatrix(rng, n*F+1, 1)
		na := rng.IntN(41)
		a, ts := make([]float32, na), make([]int32, na)
		for k := range a {
			a[k] = float32(rng.NormFloat64())
			ts[k] = int32(rng.IntN(n))
		}
		o0 := randMatrix(rng, F, 1)
		want := append(append([]float32(nil), o0...), 7, 7, 7, 7)
		got := append(append([]float32(nil), o0...), 7, 7, 7, 7)
		axpyTokensGo(want[:F], a, ts, x)
		axpyTokens(got[:F], a, ts, x)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("trial %d (F %d, %d tokens): o[%d] = %g, want %g", trial, F, na, i, got[i], want[i])
			}
		}
	}
}

// TestPackCodes: pack's eight-codes-at-a-time bytes are the definition's,
// element j's level+1 at bits 2*(j%4) of byte j/4 after the fp16 scale,
// for every level pattern in random rows.
func TestPackCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	const rows, cols = 5, 192
	q := &quantized{rows: rows, cols: cols, levels: make([]int8, rows*cols), scales: make([]float32, rows*cols/group)}
	for trial := 0; trial < 50; trial++ {
		for i := range q.levels {
			q.levels[i] = int8(rng.IntN(4) - 1)
		}
		for i := range q.scales {
			q.scales[i] = roundFP16(float32(rng.NormFloat64()))
		}
		got := make([]byte, rows*cols/group*18)
		q.pack(got)
		for r := 0; r < rows; r++ {
			for b := 0; b < cols/group; b++ {
				blk := got[(r*cols/group+b)*18:][:18]
				for j := 0; j < group; j++ {
					want := byte(q.levels[r*cols+b*group+j] + 1)
					if c := blk[2+j/4] >> (2 * (j % 4)) & 3; c != want {
						t.Fatalf("trial %d row %d block %d element %d: code %d, want %d", trial, r, b, j, c, want)
					}
				}
			}
		}
	}
}

// TestTranspose16: transpose16 (the vector path where the CPU has it)
// moves every value of a 16 × 16 tile to its transposed place, at strides
// 16 to 2600, and touches nothing else of dst.
func TestTranspose16(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	for _, st := range [][2]int{{16, 16}, {16, 64}, {32, 2560}, {2600, 17}, {64, 640}} {
		ds, ss := st[0], st[1]
		src := randMatrix(rng, 15*ss+16, 1)
		got, want := make([]float32, 15*ds+16+8), make([]float32, 15*ds+16+8)
		for i := range got {
			got[i], want[i] = 7, 7
		}
		transpose16Go(want, ds, src, ss)
		transpose16(got, ds, src, ss)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("strides %d, %d: dst[%d] = %g, want %g", ds, ss, i, got[i], want[i])
			}
		}
		for i := 0; i < 16; i++ {
			for j := 0; j < 16; j++ {
				if want[j*ds+i] != src[i*ss+j] {
					t.Fatalf("strides %d, %d: the definition moved (%d, %d) wrong", ds, ss, i, j)
				}
			}
		}
	}
}

// TestNegLanes: negLanes (the vector path where the CPU has it) gives
// negLanesGo's bits (signed zeros and NaN included) at widths 8 and 16
// and every offset, and writes nothing past its lanes.
func TestNegLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	var ne [group][scoreLanes]float32
	for k := range ne {
		for c := range ne[k] {
			ne[k][c] = float32(rng.NormFloat64())
			switch rng.IntN(20) {
			case 0:
				ne[k][c] = 0
			case 1:
				ne[k][c] = float32(math.Copysign(0, -1))
			case 2:
				ne[k][c] = float32(math.NaN())
			}
		}
	}
	for _, width := range []int{8, 16} {
		for off := 0; off+width <= scoreLanes; off += width {
			got, want := make([]float32, group*width+4), make([]float32, group*width+4)
			for i := range got {
				got[i], want[i] = 7, 7
			}
			negLanesGo(want, width, ne[:], off)
			negLanes(got, width, ne[:], off)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("width %d, off %d: dst[%d] bits %#x, want %#x", width, off, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

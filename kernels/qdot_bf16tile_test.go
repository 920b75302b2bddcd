package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// bf16Special are the bfloat16 values of the edges: zeros of both signs,
// subnormals, the largest finite values, infinities and NaNs.
var bf16Special = []uint16{0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x3f80, 0xbf80}

// bf16TestMatrix is a rows x n BF16 matrix between 0xff guard bands (NaN
// weights: a kernel reading past the last row's end puts NaN into a result)
// and n-element activations of kind like bf16TestRow's, and with special
// values mixed in (one row in four of each kind).
func bf16TestMatrix(rng *rand.Rand, n, rows, ntok int) (Matrix, []*BF16Row) {
	data, _ := bf16TestRow(rng, n*rows)
	for i := 0; i < n*rows; i++ {
		if rng.IntN(4) == 0 {
			binary.LittleEndian.PutUint16(data[2*i:], bf16Special[rng.IntN(len(bf16Special))])
		}
	}
	m, err := NewMatrix(quant.BF16, guardedBytes(data, rng.IntN(8)), n, rows)
	if err != nil {
		panic(err)
	}
	xs := make([]*BF16Row, ntok)
	for t := range xs {
		_, x := bf16TestRow(rng, n)
		if rng.IntN(4) == 0 {
			for i := range x {
				if rng.IntN(4) == 0 {
					x[i] = quant.BF16ToFloat32(bf16Special[rng.IntN(len(bf16Special))])
				}
			}
		}
		var r BF16Row
		QuantizeBF16Row(x, &r)
		xs[t] = guardedBF16Row(&r, rng.IntN(8))
	}
	return m, xs
}

// bf16TestLengths is every length 1..300 (NewMatrix takes no empty rows)
// and a spread beyond to 4096.
func bf16TestLengths(rng *rand.Rand) []int {
	var ns []int
	for n := 1; n <= 300; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 383, 384, 385, 511, 512, 513, 639, 640, 1023, 1024, 2559, 2560, 2561, 4095, 4096)
	for i := 0; i < 20; i++ {
		ns = append(ns, 301+rng.IntN(4096-301))
	}
	return ns
}

// bf16MatRunners are run by TestMatBF16KernelsGuarded beside the kernel
// sets' matBF16 (on amd64: the VDPBF16PS tile kernels alone).
var bf16MatRunners []namedBF16Mat

type namedBF16Mat struct {
	name string
	f    func(m *Matrix, lo, hi int, xs []*BF16Row, out []float32)
}

// TestMatBF16KernelsGuarded: every kernel set's matBF16 (the multi-row and
// tile kernels where the set has them), and bf16MatRunners, give the portable DotBF16's bits
// for every output, over lengths 1..4096, row counts and ranges that are
// not multiples of the tiles, 1..7 inputs, random, raw and special values,
// weights and activations between NaN guard bands, and writes nothing
// outside its rows' outputs.
func TestMatBF16KernelsGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	runners := bf16MatRunners
	for _, s := range testSets() {
		runners = append(runners, namedBF16Mat{s.name, s.k.matBF16})
	}
	for _, n := range bf16TestLengths(rng) {
		rows, ntok := 1+rng.IntN(11), 1+rng.IntN(7)
		if n > 1024 {
			rows, ntok = 1+rng.IntN(6), 1+rng.IntN(4)
		}
		m, xs := bf16TestMatrix(rng, n, rows, ntok)
		want := make([]float32, ntok*rows)
		for tk, x := range xs {
			for r := 0; r < rows; r++ {
				want[tk*rows+r] = portable.dotBF16(m.Row(r), x)
			}
		}
		lo := rng.IntN(rows)
		hi := lo + 1 + rng.IntN(rows-lo)
		const band = 16
		buf := make([]float32, band+ntok*rows+band)
		for _, s := range runners {
			for i := range buf {
				buf[i] = math.Float32frombits(guard)
			}
			out := buf[band : band+ntok*rows]
			s.f(&m, lo, hi, xs, out)
			for i, v := range buf {
				tk, r := (i-band)/max(rows, 1), (i-band)%max(rows, 1)
				in := i >= band && i < band+ntok*rows && r >= lo && r < hi
				if !in && math.Float32bits(v) != guard {
					t.Fatalf("n=%d rows %d [%d, %d) inputs %d on %s: wrote %g at %d", n, rows, lo, hi, ntok, s.name, v, i-band)
				}
				if in && !sameFloat(v, want[tk*rows+r]) {
					t.Fatalf("n=%d rows %d [%d, %d) inputs %d on %s: input %d row %d %g (%#08x), portable %g (%#08x)", n, rows, lo, hi, ntok, s.name,
						tk, r, v, math.Float32bits(v), want[tk*rows+r], math.Float32bits(want[tk*rows+r]))
				}
			}
		}
	}
}

// TestMatBF16PoolThreads: MatVecBF16, MatVecsBF16 and MatMulBF16 give the
// portable DotBF16's bits at 1, 2, 3 and 7 threads, on shapes whose rows
// and inputs are not multiples of the tiles, and write nothing past the
// outputs.
func TestMatBF16PoolThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for _, sh := range []struct{ cols, rows, ntok int }{{256, 256, 64}, {300, 203, 7}, {2560, 67, 4}, {2560, 9, 1}, {100, 1000, 10}} {
		m, xs := bf16TestMatrix(rng, sh.cols, sh.rows, sh.ntok)
		want := make([]float32, sh.ntok*sh.rows)
		for tk, x := range xs {
			for r := 0; r < sh.rows; r++ {
				want[tk*sh.rows+r] = portable.dotBF16(m.Row(r), x)
			}
		}
		guarded := func(n int) []float32 {
			b := make([]float32, n+16)
			for i := range b {
				b[i] = math.Float32frombits(guard)
			}
			return b
		}
		check := func(what string, th int, b []float32, want []float32) {
			t.Helper()
			for i, v := range b {
				if i >= len(want) {
					if math.Float32bits(v) != guard {
						t.Fatalf("%d x %d, %d inputs, threads=%d: %s wrote %g past its outputs", sh.cols, sh.rows, sh.ntok, th, what, v)
					}
				} else if !sameFloat(v, want[i]) {
					t.Fatalf("%d x %d, %d inputs, threads=%d: %s output %d %g (%#08x), portable %g (%#08x)", sh.cols, sh.rows, sh.ntok, th, what, i, v, math.Float32bits(v), want[i], math.Float32bits(want[i]))
				}
			}
		}
		for _, th := range []int{1, 2, 3, 7} {
			p := NewPool(th)
			mm := guarded(sh.ntok * sh.rows)
			p.MatMulBF16(&m, xs, mm[:sh.ntok*sh.rows])
			check("MatMulBF16", th, mm, want)
			ms := make([]*Matrix, sh.ntok)
			outs := make([][]float32, sh.ntok)
			bufs := make([][]float32, sh.ntok)
			for i := range ms {
				ms[i], bufs[i] = &m, guarded(sh.rows)
				outs[i] = bufs[i][:sh.rows]
			}
			p.MatVecsBF16(ms, xs, outs)
			// MatMulsBF16: the matrix, a second of fewer rows (the first
			// rows of it: its outputs the first rows of each input's) and
			// the matrix again, in one pass.
			sub := m
			sub.Rows = max(1, sh.rows/3)
			sub.Data = m.Data[:sub.Rows*m.RowBytes]
			group := []*Matrix{&m, &sub, &m}
			gb := [][]float32{guarded(sh.ntok * sh.rows), guarded(sh.ntok * sub.Rows), guarded(sh.ntok * sh.rows)}
			p.MatMulsBF16(group, xs, [][]float32{gb[0][:sh.ntok*sh.rows], gb[1][:sh.ntok*sub.Rows], gb[2][:sh.ntok*sh.rows]})
			check("MatMulsBF16 0", th, gb[0], want)
			check("MatMulsBF16 2", th, gb[2], want)
			wantSub := make([]float32, 0, sh.ntok*sub.Rows)
			for tk := range xs {
				wantSub = append(wantSub, want[tk*sh.rows:tk*sh.rows+sub.Rows]...)
			}
			check("MatMulsBF16 1", th, gb[1], wantSub)
			for i, x := range xs {
				check(fmt.Sprintf("MatVecsBF16 %d", i), th, bufs[i], want[i*sh.rows:(i+1)*sh.rows])
				one := guarded(sh.rows)
				p.MatVecBF16(&m, x, one[:sh.rows])
				check("MatVecBF16", th, one, want[i*sh.rows:(i+1)*sh.rows])
			}
			p.Close()
		}
	}
}

// BenchmarkMatBF16: one thread's MatVecBF16 (one input) and MatMulBF16
// (64 inputs, a prefill's) on the tiny model's expert shape (256 x 256)
// and a 2560-wide one, by the host's kernels ("rows", "tiles") beside the
// per-row DotBF16 loop they replace ("dot"), the same bits.
func BenchmarkMatBF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	p := NewPool(1)
	defer p.Close()
	for _, sh := range []struct{ cols, rows int }{{256, 256}, {2560, 256}} {
		data, _, _ := bf16Ordinary(rng, sh.cols*sh.rows)
		m, err := NewMatrix(quant.BF16, data, sh.cols, sh.rows)
		if err != nil {
			b.Fatal(err)
		}
		for _, ntok := range []int{1, 64} {
			xs := make([]*BF16Row, ntok)
			for i := range xs {
				xs[i] = &BF16Row{}
				QuantizeBF16Row(gaussians(rng, sh.cols, 1), xs[i])
			}
			out := make([]float32, ntok*sh.rows)
			name := fmt.Sprintf("%dx%d/inputs=%d", sh.cols, sh.rows, ntok)
			b.Run(name+"/dot", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					for r := 0; r < m.Rows; r++ {
						row := m.Row(r)
						for t, x := range xs {
							out[t*m.Rows+r] = DotBF16(row, x)
						}
					}
				}
			})
			kind := "rows"
			if ntok > 1 {
				kind = "tiles"
			}
			b.Run(name+"/"+kind, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					p.MatMulBF16(&m, xs, out)
				}
			})
		}
	}
}

// TestQuantizeBF16RowSets: every kernel set's QuantizeBF16Row loop writes
// the portable loop's buffer, padding included, over lengths 0..300 and a
// spread to 4096, on gaussians, raw bits and the edges (NaNs signaling and
// quiet of both signs, infinities, the largest finite values and ties that
// round to infinity, subnormals, zeros of both signs), into a buffer a
// longer row left dirty.
func TestQuantizeBF16RowSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	edges := []uint32{0x7f800001, 0x7fc00000, 0xffc12345, 0xff800001, 0x7f800000, 0xff800000, 0x7f7fffff, 0xff7fffff,
		0x7f7f8000, 0x7f7e8000, 0x00000001, 0x807fffff, 0x00008000, 0x00018000, 0, 0x80000000, 0x3f808000, 0x3f818000}
	sets := testSets()
	ns := append([]int{0}, bf16TestLengths(rng)...)
	for _, n := range ns {
		x := gaussians(rng, n, 1)
		for i := range x {
			switch rng.IntN(6) {
			case 0:
				x[i] = math.Float32frombits(rng.Uint32())
			case 1:
				x[i] = math.Float32frombits(edges[rng.IntN(len(edges))])
			}
		}
		var want BF16Row
		portable.quantizeBF16Row(x, &want)
		for _, s := range sets {
			var r BF16Row
			s.k.quantizeBF16Row(gaussians(rng, n+300, 1), &r)
			s.k.quantizeBF16Row(x, &r)
			if r.n != want.n || len(r.v) != len(want.v) {
				t.Fatalf("n=%d on %s: %d elements in %d, portable %d in %d", n, s.name, r.n, len(r.v), want.n, len(want.v))
			}
			for i := range r.v {
				if r.v[i] != want.v[i] {
					e := i/(2*bf16Chunk)*bf16Chunk + i%bf16Chunk
					t.Fatalf("n=%d on %s: word %d (element %d, %#08x) %#04x, portable %#04x", n, s.name, i, e, math.Float32bits(x[min(e, max(n-1, 0))]), r.v[i], want.v[i])
				}
			}
		}
	}
}

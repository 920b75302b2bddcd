package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// specialHalves are fp16 scales a row kernel must carry through as DotQ8
// does: zeros of both signs, subnormals, the largest finite, infinities
// and NaNs.
var specialHalves = []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x8200, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00}

// adversarialMXFP4 is a row of nb MXFP4 blocks whose exponents run on from
// a random one through 255 and 0 (mxfp4Exponents), their nibbles random or
// every weight +-12.
func adversarialMXFP4(rng *rand.Rand, nb int) []byte {
	return mxfp4Exponents(rng, nb, rng.IntN(256), rng.IntN(2) == 0)
}

// adversarialIQ4NL is a row of nb IQ4_NL blocks, each random or with a
// special scale (specialHalves) and extreme codes: every weight the
// codebook's least (-127) or greatest (113), or the two alternating.
func adversarialIQ4NL(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 18, []int{0}, func(blk []byte) {
		if v := rng.IntN(5); v < 4 {
			fillBytes(blk[2:], [4]byte{0x00, 0xff, 0x0f, 0xf0}[v])
		}
	})
}

// adversarialIQ3S is a row of nb IQ3_S blocks, each random or with a
// special scale (specialHalves), and with extreme parts: every grid index
// 0 or 511, every sign set or none, every scale nibble 0 or 15.
func adversarialIQ3S(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 110, []int{0}, func(blk []byte) {
		fillExtreme(rng, blk[2:74]) // qs and qh together: index 0 or 511
		fillExtreme(rng, blk[74:106])
		fillExtreme(rng, blk[106:110])
	})
}

// adversarialQ4K is a row of nb Q4_K blocks, each random or with special
// d and dmin (specialHalves, each on its own) and extreme parts: every
// scale and min byte 0 or 0xff (6-bit scales and mins 0 or 63), every
// code 0 or 15 or the two alternating.
func adversarialQ4K(rng *rand.Rand, nb int) []byte { return adversarialK4(rng, nb, 144) }

// adversarialQ5K is adversarialQ4K for Q5_K: qh's bytes (the codes' bit
// 4) too, so every code 0 or 31 or the extremes mixed.
func adversarialQ5K(rng *rand.Rand, nb int) []byte { return adversarialK4(rng, nb, 176) }

// adversarialK4 is adversarialQ4K or adversarialQ5K, blocks of bs bytes.
func adversarialK4(rng *rand.Rand, nb, bs int) []byte {
	return adversarialBlocks(rng, nb, bs, []int{0, 2}, func(blk []byte) {
		fillExtreme(rng, blk[4:16])
		if v := rng.IntN(4); v < 3 {
			fillBytes(blk[16:], [3]byte{0x00, 0xff, 0xf0}[v])
		}
	})
}

// adversarialQ6K is a row of nb Q6_K blocks, each random or with a
// special d (specialHalves) and extreme parts: every scale -128, 127 or 0,
// every code 0 or 63 (ql and qh all 0x00 or 0xff).
func adversarialQ6K(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 210, []int{208}, func(blk []byte) {
		if v := rng.IntN(4); v < 3 {
			fillBytes(blk[192:208], [3]byte{0x80, 0x7f, 0x00}[v])
		}
		fillExtreme(rng, blk[:192])
	})
}

// adversarialQ2K is a row of nb Q2_K blocks, each random or with special
// d and dmin (specialHalves, each on its own) and extreme parts: every
// scale and min 0 or 15 (scale bytes 0x00, 0xff, 0x0f or 0xf0), every
// code 0 or 3.
func adversarialQ2K(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 84, []int{80, 82}, func(blk []byte) {
		if v := rng.IntN(5); v < 4 {
			fillBytes(blk[:16], [4]byte{0x00, 0xff, 0x0f, 0xf0}[v])
		}
		fillExtreme(rng, blk[16:80])
	})
}

// adversarialQ3K is a row of nb Q3_K blocks, each random or with a
// special d (specialHalves) and extreme parts: every scale -32 or 31
// (scale bytes all 0x00 or 0xff), every code -4 or 3 (hmask and qs all
// 0x00 or 0xff, each on its own).
func adversarialQ3K(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 110, []int{108}, func(blk []byte) {
		for _, p := range [][]byte{blk[:32], blk[32:96], blk[96:108]} {
			fillExtreme(rng, p)
		}
	})
}

// adversarialIQ3XXS is a row of nb IQ3_XXS blocks, each random or with a
// special d (specialHalves) and extreme parts: every grid index 0 or 255,
// every sign/scale word 0 or all ones (no signs and scale 0, every sign
// and scale 15), each on its own.
func adversarialIQ3XXS(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 98, []int{0}, func(blk []byte) {
		fillExtreme(rng, blk[2:66])
		fillExtreme(rng, blk[66:98])
	})
}

// adversarialIQ2XXS is adversarialIQ3XXS for IQ2_XXS's blocks of 66 bytes
// (grid indices and words interleaved per sub-block).
func adversarialIQ2XXS(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 66, []int{0}, func(blk []byte) {
		for part := 0; part < 2; part++ { // the indices, then the words
			if v := rng.IntN(3); v < 2 {
				for ib := 0; ib < 8; ib++ {
					fillBytes(blk[2+8*ib+4*part:6+8*ib+4*part], byte(0xff*v))
				}
			}
		}
	})
}

// fillBytes sets every byte of p to v.
func fillBytes(p []byte, v byte) {
	for i := range p {
		p[i] = v
	}
}

// fillExtreme sets every byte of p to 0x00 or to 0xff, a third of the
// time each, or leaves p as it is.
func fillExtreme(rng *rand.Rand, p []byte) {
	if v := rng.IntN(3); v < 2 {
		fillBytes(p, byte(0xff*v))
	}
}

// adversarialBlocks is nb random blocks of bs bytes, each given a special
// fp16 (specialHalves) at each offset of halves, a third of the time each
// on its own, then its extreme parts by parts(blk): the adversarial rows'
// one frame.
func adversarialBlocks(rng *rand.Rand, nb, bs int, halves []int, parts func(blk []byte)) []byte {
	b := make([]byte, bs*nb)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	for k := 0; k < nb; k++ {
		blk := b[bs*k : bs*(k+1)]
		for _, off := range halves {
			if rng.IntN(3) == 0 {
				binary.LittleEndian.PutUint16(blk[off:], specialHalves[rng.IntN(len(specialHalves))])
			}
		}
		parts(blk)
	}
	return b
}

// adversarialIQ4XS is a row of nb IQ4_XS blocks, each random or with a
// special d (specialHalves) and extreme parts: every 6-bit scale 0 or 63
// (scales_h and scales_l all 0x00 or 0xff), every code the codebook's
// least or greatest or the two alternating.
func adversarialIQ4XS(rng *rand.Rand, nb int) []byte {
	return adversarialBlocks(rng, nb, 136, []int{0}, func(blk []byte) {
		fillExtreme(rng, blk[2:8])
		if v := rng.IntN(5); v < 4 {
			fillBytes(blk[8:], [4]byte{0x00, 0xff, 0x0f, 0xf0}[v])
		}
	})
}

// iqRowsActivations are activation rows of n values for the row kernel
// tests: gaussian, saturating (every block's codes at +-127 beside small
// ones) and with zero blocks.
func iqRowsActivations(rng *rand.Rand, n int) [][]float32 {
	g := gaussians(rng, n, 1)
	sat := make([]float32, n)
	zero := gaussians(rng, n, 1e3)
	for i := range sat {
		sat[i] = float32(1 - 2*(i%2))
		if i%32 == 5 {
			sat[i] *= 1e4
		}
	}
	for b := 0; b < n/32; b += 2 {
		clear(zero[32*b : 32*b+32])
	}
	return [][]float32{g, sat, zero}
}

// iqRowsTypes are the types with row kernels besides Q8_0 and Q2_0.
var iqRowsTypes = []quant.Type{quant.IQ4_NL, quant.MXFP4, quant.IQ3_S, quant.IQ4_XS, quant.IQ3_XXS, quant.IQ2_XXS,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S, quant.IQ1_M}

// TestIQRowsPool: the row and lane kernels of iqRowsTypes through the
// pool's single-token products (MatVecQ8, MatVecsQ8, MatVecsQ8GLU) give
// the portable DotQ8's bits for every row at 1, 2, 3 and 7 threads, in
// lanes and row by row: rows of whole and partial groups, row counts that
// are not a multiple of the kernel's streams, random and adversarial
// blocks (special scales, extreme codes), activations gaussian, saturating
// and with zero blocks; nothing is written past any output, and rows of
// no blocks are refused. (TestQ8RowsMatchPortable and
// TestQ8LanesMatchPortable take every length in whole blocks up to 4096.)
func TestIQRowsPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	type shape = struct{ cols, rows int }
	for _, typ := range iqRowsTypes {
		shapes := []shape{{256, 37}, {2560, 101}, {288, 7}, {2528, 130}, {32, 5}, {480, 64}, {224, 3}, {4096, 9}}
		adversarial := adversarialIQ4NL
		switch typ {
		case quant.IQ4_NL:
		case quant.MXFP4:
			// Rows of 256 and 263 blocks hold every exponent 0..255.
			shapes = append(shapes, shape{8192, 6}, shape{8416, 5})
			adversarial = adversarialMXFP4
		default: // blocks of 256 weights
			shapes = []shape{{256, 37}, {2560, 101}, {512, 7}, {256, 130}, {768, 5}, {4096, 9}, {1024, 3}}
			adversarial = map[quant.Type]func(*rand.Rand, int) []byte{
				quant.IQ3_S: adversarialIQ3S, quant.IQ4_XS: adversarialIQ4XS, quant.Q2_K: adversarialQ2K,
				quant.Q3_K: adversarialQ3K, quant.Q4_K: adversarialQ4K, quant.IQ3_XXS: adversarialIQ3XXS,
				quant.IQ2_XXS: adversarialIQ2XXS, quant.Q5_K: adversarialQ5K, quant.Q6_K: adversarialQ6K}[typ]
			if adversarial == nil { // raw random blocks: every scale, sign and delta bit
				adversarial = func(rng *rand.Rand, nb int) []byte { return randomBlocks(rng, typ, nb) }
			}
		}
		testIQRowsPool(t, rng, typ, shapes, adversarial)
		// Rows of no blocks: the row and lane kernels refuse them, writing
		// nothing (DotQ8's own path takes them).
		var x Q8Row
		if err := QuantizeQ8Row(nil, &x); err != nil {
			t.Fatal(err)
		}
		m := Matrix{Type: typ, Rows: 4}
		out, ok := guardedFloats(4, 0)
		if f := host.q8rows[typ]; f != nil && f(&m, 0, 4, &x, out) {
			t.Fatalf("%s: the row kernel took rows of no blocks", typ)
		}
		if f := host.q8lanes[typ]; f != nil && f(&m, 0, 1, 1, &x, out) {
			t.Fatalf("%s: the lane kernel took rows of no blocks", typ)
		}
		for i := range out {
			if math.Float32bits(out[i]) != guard {
				t.Fatalf("%s: rows of no blocks: out[%d] written", typ, i)
			}
		}
		if !ok() {
			t.Fatalf("%s: rows of no blocks: wrote outside out", typ)
		}
	}
}

func testIQRowsPool(t *testing.T, rng *rand.Rand, typ quant.Type, shapes []struct{ cols, rows int }, adversarial func(*rand.Rand, int) []byte) {
	ti, _ := quant.Info(typ)
	var ms []*Matrix
	var raws [][]byte
	for _, sh := range shapes {
		for range 2 { // gate and up
			var raw []byte
			for r := 0; r < sh.rows; r++ {
				if rng.IntN(3) == 0 {
					raw = append(raw, adversarial(rng, sh.cols/ti.BlockElements)...)
				} else {
					raw = append(raw, randomRow(rng, typ, sh.cols)...)
				}
			}
			m, err := NewMatrix(typ, guardedBytes(raw, rng.IntN(8)), sh.cols, sh.rows)
			if err != nil {
				t.Fatal(err)
			}
			ms, raws = append(ms, &m), append(raws, raw)
		}
	}
	for ai := 0; ai < 3; ai++ {
		xs := make([]*Q8Row, len(ms))
		for i := 0; i < len(ms); i += 2 {
			x := &Q8Row{}
			if err := QuantizeQ8Row(iqRowsActivations(rng, ms[i].Cols)[ai], x); err != nil {
				t.Fatal(err)
			}
			xs[i], xs[i+1] = x, x
		}
		want := make([][]float32, len(ms))
		for i, m := range ms {
			want[i] = make([]float32, m.Rows)
			for r := range want[i] {
				want[i][r] = portable.dotQ8(typ, m.Row(r), xs[i])
			}
		}
		check := func(what string, th int, plain bool, i int, out []float32) {
			t.Helper()
			for r, w := range want[i] {
				if !sameFloat(out[r], w) {
					t.Fatalf("%s %s, activations %d, threads %d, plain %v: matrix %d (%d x %d) row %d: %g (%#08x), portable %g (%#08x)",
						typ, what, ai, th, plain, i, ms[i].Rows, ms[i].Cols, r, out[r], math.Float32bits(out[r]), w, math.Float32bits(w))
				}
			}
		}
		for _, th := range []int{1, 2, 3, 7} {
			for _, plain := range []bool{false, true} {
				p := NewPool(th)
				p.plainRows = plain
				outs := make([][]float32, len(ms))
				oks := make([]func() bool, len(ms))
				fresh := func() {
					for i, m := range ms {
						outs[i], oks[i] = guardedFloats(m.Rows, rng.IntN(4))
					}
				}
				guarded := func(what string) {
					for i := range oks {
						if !oks[i]() {
							t.Fatalf("%s, threads %d, plain %v: matrix %d: wrote outside its output", what, th, plain, i)
						}
					}
				}
				fresh()
				for i, m := range ms {
					p.MatVecQ8(m, xs[i], outs[i])
					check("MatVecQ8", th, plain, i, outs[i])
				}
				guarded("MatVecQ8")
				fresh()
				p.MatVecsQ8(ms, xs, outs)
				for i := range ms {
					check("MatVecsQ8", th, plain, i, outs[i])
				}
				guarded("MatVecsQ8")
				fresh()
				var gates, ups []*Matrix
				var gx []*Q8Row
				var gs, us [][]float32
				for i := 0; i < len(ms); i += 2 {
					gates, ups, gx = append(gates, ms[i]), append(ups, ms[i+1]), append(gx, xs[i])
					gs, us = append(gs, outs[i]), append(us, outs[i+1])
				}
				p.MatVecsQ8GLU(gates, ups, gx, gs, us, func(i, lo, hi int) {})
				for i := range ms {
					check("MatVecsQ8GLU", th, plain, i, outs[i])
				}
				guarded("MatVecsQ8GLU")
				p.Close()
			}
		}
	}
	// The rows' bytes are as they were (the kernels only read them).
	for i, m := range ms {
		if string(m.Data) != string(raws[i]) {
			t.Fatalf("matrix %d changed", i)
		}
	}
	switch typ {
	case quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S, quant.IQ1_M:
		// Rows kernels of a range in one call, no streams (qdot_iqlow512).
		if asmBuild && hostCPU.avx512vnni && (typ != quant.IQ1_M || hostCPU.bmi2) && host.q8rows[typ] == nil {
			t.Fatalf("no %s rows kernel on a CPU with AVX-512 VNNI", typ)
		}
	default:
		if asmBuild && hostCPU.avx512vnni && hostCPU.avx512vbmi && host.q8lanes[typ] == nil {
			t.Fatalf("no %s lane kernel on a CPU with AVX-512 VBMI", typ)
		}
	}
}

// BenchmarkIQRows is the row kernels of iqRowsTypes (kernelSet.q8rows, one call
// over the matrix) against the per-row path it replaces (one DotQ8 per
// row), on one thread over an expert-sized matrix in cache: 256 rows of
// 256 weights (tiny-qwen3moe's n_embd) and of 2560 (bytes/s are weight
// bytes).
func BenchmarkIQRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(93, 94))
	for _, typ := range iqRowsTypes {
		for _, cols := range []int{256, 2560} {
			const rows = 256
			var data []byte
			for r := 0; r < rows; r++ {
				data = append(data, randomRow(rng, typ, cols)...)
			}
			m, err := NewMatrix(typ, data, cols, rows)
			if err != nil {
				b.Fatal(err)
			}
			var x Q8Row
			if err := QuantizeQ8Row(gaussians(rng, cols, 1), &x); err != nil {
				b.Fatal(err)
			}
			out := make([]float32, rows)
			run := func(name string, f func()) {
				b.Run(fmt.Sprintf("%s/%d/%s", typ, cols, name), func(b *testing.B) {
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						f()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
				})
			}
			run("rows", func() { host.dotQ8Range(&m, 0, rows, &x, out) })
			run("perrow", func() {
				for r := 0; r < rows; r++ {
					out[r] = host.dotQ8(typ, m.Row(r), &x)
				}
			})
		}
	}
}

package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// iqTypes are the i-quants and MXFP4 that DotQ8 takes (part of q8Types, so
// every DotQ8 test in qdot_test.go runs them too).
var iqTypes = []quant.Type{quant.IQ4_XS, quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.MXFP4, quant.IQ1_S, quant.IQ1_M}

// TestIQHalvesSubMatchesQuant: IQ2_XS's, IQ2_S's and IQ1_M's integer weights,
// half multipliers and factor give quant's decoding bit for bit, on raw
// random blocks (NaN, infinite and subnormal scales included).
func TestIQHalvesSubMatchesQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, typ := range []quant.Type{quant.IQ2_XS, quant.IQ2_S, quant.IQ1_M} {
		const blocks = 64
		row := randomBlocks(rng, typ, blocks)
		want := make([]float32, 256*blocks)
		if err := quant.Dequantize(typ, row, want); err != nil {
			t.Fatal(err)
		}
		var w [32]int8
		for s := 0; s < 8*blocks; s++ {
			m0, m1, dw := iqHalvesSub(typ, row, s, &w)
			for j := range w {
				m := m0
				if j >= 16 {
					m = m1
				}
				if got := float32(m*int32(w[j])) * dw; !sameFloat(got, want[32*s+j]) {
					t.Fatalf("%s sub-block %d element %d: %d x %d x %g = %g, quant %g", typ, s, j, m, w[j], dw, got, want[32*s+j])
				}
			}
		}
	}
}

// TestIQDotQ8Truth: the portable path against a float64 dot of quant's
// decoded weights and the decoded activations, within float32's rounding of
// the order: per sub-block the scale product and the term (2 roundings),
// then n/256 adds per lane and 3 in the fold, each at most 2^-24 of the
// running magnitude, so |error| <= (n/256 + 6) * 2^-24 * sum |w x| (to
// first order).
func TestIQDotQ8Truth(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	var r Q8Row
	for _, typ := range iqTypes {
		ti, _ := quant.Info(typ)
		for _, n := range []int{256, 2560, 4096} {
			for trial := 0; trial < 5; trial++ {
				row := randomRow(rng, typ, n)
				if err := QuantizeQ8Row(gaussians(rng, n, 1), &r); err != nil {
					t.Fatal(err)
				}
				w := make([]float32, n)
				if err := quant.Dequantize(typ, row, w); err != nil {
					t.Fatal(err)
				}
				var sum, mag float64
				for i := range w {
					p := float64(w[i]) * float64(float32(r.qs[i])*r.d[i/32])
					sum += p
					mag += math.Abs(p)
				}
				got := portable.dotQ8(typ, row, &r)
				bound := float64(n/256+6) * 0x1p-24 * mag * 1.01
				if e := math.Abs(float64(got) - sum); !(e <= bound) {
					t.Fatalf("%s n=%d (blocks of %d): %g, float64 %g, error %g over %g", typ, n, ti.BlockElements, got, sum, e, bound)
				}
			}
		}
	}
}

// mxfp4Exponents is an MXFP4 row of nb blocks whose exponents run through
// every value 0..255 from first (so any 256 blocks hold each once), the
// nibbles random or, where extreme, every nibble the codebook's largest
// magnitude (0x77: +12, 0xff: -12).
func mxfp4Exponents(rng *rand.Rand, nb, first int, extreme bool) []byte {
	row := make([]byte, 17*nb)
	for b := 0; b < nb; b++ {
		row[17*b] = byte(first + b)
		for j := 1; j < 17; j++ {
			if extreme {
				row[17*b+j] = []byte{0x77, 0xff, 0x7f, 0xf7}[rng.IntN(4)]
			} else {
				row[17*b+j] = byte(rng.Uint32())
			}
		}
	}
	return row
}

// TestMXFP4EveryExponent: for every E8M0 exponent 0..255 (the subnormal
// factors of 0 and 1, 2^127 of 255), every kernel set's decoders give
// quant.E8M0Half's factor bit for bit and the portable weights, and its
// DotQ8 and tiles the portable DotQ8's bits, on rows of whole groups and
// rows ending in a partial group, random and extreme nibbles.
func TestMXFP4EveryExponent(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	for _, nb := range []int{256, 260, 264, 257, 263} {
		for _, extreme := range []bool{false, true} {
			for _, first := range []int{0, 5, 128} {
				row := mxfp4Exponents(rng, nb, first, extreme)
				n := 32 * nb
				// Activations small enough that most products stay finite,
				// and one row scaled so large ones overflow.
				xs := make([]*Q8Row, 3)
				for i := range xs {
					var q Q8Row
					if err := QuantizeQ8Row(gaussians(rng, n, []float64{1e-30, 1, 1e30}[i]), &q); err != nil {
						t.Fatal(err)
					}
					xs[i] = guardedQ8Row(&q, rng.IntN(8), true)
				}
				data := guardedBytes(append(slices.Clone(row), mxfp4Exponents(rng, nb, first+7, !extreme)...), rng.IntN(8))
				m, err := NewMatrix(quant.MXFP4, data, n, 2)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range testSets() {
					groups := (nb + 7) / 8
					for g0 := 0; g0 < groups; g0 += decodedGroups {
						ng := min(decodedGroups, groups-g0)
						var d, dp q8Decoded
						var pad [q8GroupBytesMax]byte
						s.k.decodeChunk(quant.MXFP4, row, nb, g0, ng, &d, &pad)
						if s.k.tilePlanes != nil {
							s.k.decodeChunkPlanes(quant.MXFP4, row, nb, g0, ng, &dp, &pad)
						}
						for i := 0; i < 8*ng; i++ {
							b := 8*g0 + i
							want := float32(0)
							if b < nb {
								want = quant.E8M0Half(row[17*b])
							}
							if !sameFloat(d.dw[i], want) || s.k.tilePlanes != nil && !sameFloat(dp.dw[i], want) {
								t.Fatalf("nb=%d on %s: block %d (e=%d): dw %#x, planes %#x, want %#x", nb, s.name, b, row[17*b%len(row)], math.Float32bits(d.dw[i]), math.Float32bits(dp.dw[i]), math.Float32bits(want))
							}
							if b >= nb {
								continue
							}
							var w [32]int8
							weightSub(quant.MXFP4, row, b, &w)
							if [32]int8(d.w[32*i:32*i+32]) != w || d.m[i] != 1 {
								t.Fatalf("nb=%d on %s: block %d: weights %v m %d, want %v", nb, s.name, b, d.w[32*i:32*i+32], d.m[i], w)
							}
						}
					}
					for r := 0; r < 2; r++ {
						for i, x := range xs {
							want := portable.dotQ8(quant.MXFP4, m.Row(r), x)
							if got := s.k.dotQ8(quant.MXFP4, m.Row(r), x); !sameFloat(got, want) {
								t.Fatalf("nb=%d first=%d extreme=%v on %s: row %d input %d: DotQ8 %g, portable %g", nb, first, extreme, s.name, r, i, got, want)
							}
						}
					}
					out, ok := guardedFloats(2*len(xs), rng.IntN(4))
					outs := make([][]float32, len(xs))
					for i := range outs {
						outs[i] = out[2*i : 2*i+2]
					}
					s.k.matMulQ8Tiles(&m, xs, outs, 0, 2, new(qmmScratch))
					for i, x := range xs {
						for r := 0; r < 2; r++ {
							if want := portable.dotQ8(quant.MXFP4, m.Row(r), x); !sameFloat(outs[i][r], want) {
								t.Fatalf("nb=%d first=%d extreme=%v on %s: tiles row %d input %d: %g, DotQ8 %g", nb, first, extreme, s.name, r, i, outs[i][r], want)
							}
						}
					}
					if !ok() {
						t.Fatalf("nb=%d on %s: the tiles wrote outside out", nb, s.name)
					}
				}
			}
		}
	}
}

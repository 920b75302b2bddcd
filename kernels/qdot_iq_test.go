package kernels

import (
	"math"
	"math/rand/v2"
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

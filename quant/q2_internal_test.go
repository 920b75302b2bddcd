package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRoundFP16Fast(t *testing.T) {
	check := func(f float32) {
		want := FP16ToFloat32(Float32ToFP16(f))
		if got := roundFP16(f); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("roundFP16(%g = %#08x) = %g, want %g", f, math.Float32bits(f), got, want)
		}
	}
	r := rand.New(rand.NewPCG(5, 5))
	for range 1 << 20 {
		check(math.Float32frombits(r.Uint32()))
	}
	// every float32 around fp16's range edges and rounding ties
	for _, c := range []uint32{0x387fe000, 0x38800000, 0x477fe000, 0x477ff000, 0x47800000, 0x3f801000, 0x3f803000} {
		for d := uint32(0); d < 1<<14; d++ {
			check(math.Float32frombits(c - 1<<13 + d))
			check(-math.Float32frombits(c - 1<<13 + d))
		}
	}
}

// TestQ2WeightsNoWrap: a block's importance read without a wrap (the bits
// test) keeps and zeroes exactly what the wrapping loop does: negatives,
// ±0, NaN, ±Inf, subnormals and the largest finite float32; and all-zero
// weights give nil either way.
func TestQ2WeightsNoWrap(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1}
	for trial := 0; trial < 200; trial++ {
		imp := make([]float32, 64)
		for j := range imp {
			switch {
			case trial == 0:
				imp[j] = 0
			case r.IntN(2) == 0:
				imp[j] = special[r.IntN(len(special))]
			default:
				imp[j] = math.Float32frombits(r.Uint32())
			}
		}
		// The same weights at base 64 of rows of 96: columns 64..95, then
		// 0..31, the wrapping loop.
		wrapped := make([]float32, 96)
		copy(wrapped[64:], imp[:32])
		copy(wrapped, imp[32:])
		a := &q2Searcher{imp: imp, rowLen: 64}
		b := &q2Searcher{imp: wrapped, rowLen: 96}
		wa, wb := a.weights(0), b.weights(64)
		if (wa == nil) != (wb == nil) || (trial == 0) != (wa == nil) {
			t.Fatalf("trial %d: nil %v without a wrap, %v with", trial, wa == nil, wb == nil)
		}
		if wa == nil {
			continue
		}
		for j := range wa {
			if math.Float32bits(wa[j]) != math.Float32bits(wb[j]) {
				t.Fatalf("trial %d column %d (%g): %g without a wrap, %g with", trial, j, imp[j], wa[j], wb[j])
			}
		}
	}
}

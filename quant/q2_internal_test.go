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

package quant

import (
	"math"
	"testing"
)

// TestRoundHalfAway: equal to math.Round on every float32 within the int8
// range and near its ends, halves included, and 0 outside it and on NaN.
func TestRoundHalfAway(t *testing.T) {
	check := func(y float32) {
		want := int32(0)
		if r := math.Round(float64(y)); r <= 127 && r >= -128 {
			want = int32(r)
		}
		if got := roundHalfAway(y); got != want {
			t.Fatalf("roundHalfAway(%g) = %d, want %d", y, got, want)
		}
	}
	for _, y := range []float32{0.5, -0.5, 1.5, -1.5, 2.5, 126.5, 127.49999, 127.5, -127.5, -128.49998, -128.5, -129,
		0.49999997, -0.49999997, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e30, -1e30} {
		check(y)
		check(math.Nextafter32(y, 0))
		check(math.Nextafter32(y, 200))
		check(math.Nextafter32(y, -200))
	}
	// Every half-integer in range and beyond, with its neighbours, and
	// float32s from 0 to 130 spread evenly over their bit patterns.
	for k := -131; k <= 131; k++ {
		h := float32(k) + 0.5
		check(h)
		check(math.Nextafter32(h, 0))
		check(math.Nextafter32(h, 1000))
		check(math.Nextafter32(h, -1000))
	}
	for b := math.Float32bits(130); b > 1<<13; b -= 1 << 13 {
		check(math.Float32frombits(b))
		check(-math.Float32frombits(b))
	}
}

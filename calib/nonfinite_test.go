package calib

import (
	"math"
	"testing"
)

// TestFirstNonFinite: the first NaN or infinity at every position of
// lengths 0..70, none in finite data, and finite data whose sum of squares
// overflows.
func TestFirstNonFinite(t *testing.T) {
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for n := 0; n <= 70; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		if got := firstNonFinite(x); got != -1 {
			t.Fatalf("length %d, finite: %d", n, got)
		}
		for i := 0; i < n; i++ {
			for _, b := range bad {
				y := append([]float32(nil), x...)
				y[i] = b
				if i+1 < n {
					y[n-1] = b // a later one too: the first is named
				}
				if got := firstNonFinite(y); got != i {
					t.Fatalf("length %d, %v at %d: got %d", n, b, i, got)
				}
			}
		}
	}
	big := make([]float32, 100)
	for i := range big {
		big[i] = math.MaxFloat32
	}
	if got := firstNonFinite(big); got != -1 {
		t.Fatalf("finite data whose squares overflow: %d", got)
	}
}

package bench

import (
	"context"
	"math"
	"testing"
	"time"
)

// The speed rows: one per rule and path, each with the weights it timed and
// a rate that is the weights over the time it reports (no timed assertion).
func TestBenchQ2Speed(t *testing.T) {
	const weights = 1 << 16
	rows, clock, err := Q2Speed(0, weights)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || clock == "" {
		t.Fatalf("%d rows, clock %q; want 4 rows and a clock", len(rows), clock)
	}
	for _, r := range rows {
		if r.Weights != weights || !(r.CPUSeconds > 0) || !(r.WallSeconds > 0) ||
			math.Abs(r.MWeightsPerCPU-float64(weights)/r.CPUSeconds/1e6) > 1e-9*r.MWeightsPerCPU {
			t.Errorf("row %+v", r)
		}
	}
}

// TestTimeCalls: at least three timed calls after the warm-up, the median
// no faster than the fastest, an error of f returned, and a cancelled
// context stopping the measurement with its error.
func TestTimeCalls(t *testing.T) {
	n := 0
	c, err := TimeCalls(context.Background(), 0, func() error { n++; time.Sleep(time.Microsecond); return nil })
	if err != nil || c.N < 3 || n != c.N+1 || c.Best > c.Wall || c.Best <= 0 {
		t.Errorf("calls %+v after %d runs, err %v", c, n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := TimeCalls(ctx, 600, func() error { return nil }); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}

package kernels

import (
	"testing"
	"time"
)

// reportCPURate reports work per CPU-second of d, in units of 1e9 unit/s,
// as the metric name; nothing where no CPU clock measured d (d <= 0).
func reportCPURate(b *testing.B, work float64, d time.Duration, name string) {
	if d > 0 {
		b.ReportMetric(work/d.Seconds()/1e9, name)
	}
}

//go:build !linux

package bench

import "time"

// ThreadCPU is unavailable here; the benchmark reports wall-clock rates only.
func ThreadCPU() (time.Duration, bool) { return 0, false }

// ProcessCPU is unavailable here.
func ProcessCPU() (time.Duration, bool) { return 0, false }

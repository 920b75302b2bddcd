//go:build !linux

package main

import "time"

// threadCPU is unavailable here; the benchmark reports wall-clock rates only.
func threadCPU() (time.Duration, bool) { return 0, false }

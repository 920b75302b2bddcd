//go:build !linux

package kernels

import (
	"testing"
	"time"
)

// mapDRAMFile: the mapped-file shapes run on Linux only.
func mapDRAMFile(b *testing.B, n int, pattern []byte) []byte {
	b.Skip("the mapped-file shapes run on Linux only")
	return nil
}

// threadCPU: no thread CPU clock here, so 0 (BenchmarkRowsDRAM then
// reports no cpu-%xor).
func threadCPU(b *testing.B) time.Duration { return 0 }

// threadClock: no thread CPU clock here, so wall time.
func threadClock(b *testing.B) time.Duration { return time.Duration(time.Now().UnixNano()) }

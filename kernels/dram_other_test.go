//go:build !linux

package kernels

import "testing"

// mapDRAMFile: the mapped-file shapes run on Linux only.
func mapDRAMFile(b *testing.B, n int, pattern []byte) []byte {
	b.Skip("the mapped-file shapes run on Linux only")
	return nil
}

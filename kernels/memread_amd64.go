//go:build amd64 && !noasm

package kernels

// The streaming read loops (memread_amd64.s) take n a positive multiple of
// xorReadUnit.

//go:noescape
func xorReadAVX2(p *byte, n int) uint64

//go:noescape
func xorReadAVX512(p *byte, n int) uint64

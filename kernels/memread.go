package kernels

import "encoding/binary"

// XORRead reads every byte of b once, front to back, and returns the XOR
// of its little-endian 64-bit words (a last partial word zero-padded): a
// plain streaming read, the loop `bench decode` measures the memory read
// bandwidth with. The vector paths (AVX2, AVX-512) are load-only loops of
// full-width loads XORed into a few registers; every path returns the same
// value (XOR does not depend on the order).
func XORRead(b []byte) uint64 { return host.xorRead(b) }

// xorReadUnit is the bytes per iteration of the widest vector loop; the
// vector paths take whole units and leave the rest to the portable loop.
const xorReadUnit = 256

func (k *kernelSet) xorRead(b []byte) uint64 {
	var acc uint64
	if k.xorReadVec != nil && len(b) >= xorReadUnit {
		n := len(b) / xorReadUnit * xorReadUnit
		acc = k.xorReadVec(&b[0], n)
		b = b[n:]
	}
	return acc ^ xorReadPortable(b)
}

func xorReadPortable(b []byte) uint64 {
	var acc uint64
	for len(b) >= 8 {
		acc ^= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	var last [8]byte
	copy(last[:], b)
	return acc ^ binary.LittleEndian.Uint64(last[:])
}

//go:build amd64 && !noasm

package kernels

import (
	"encoding/binary"
	"testing"
)

// TestBF16AVX2Flags: the AVX2 kernel reports a product that underflows or
// overflows (so its row goes to the portable path) and none on ordinary
// values, and leaves the caller's MXCSR as it found it.
func TestBF16AVX2Flags(t *testing.T) {
	if !hostCPU.avx2 {
		t.Skip("no AVX2")
	}
	var r BF16Row
	x := make([]float32, bf16Chunk)
	for i := range x {
		x[i] = 1.5
	}
	QuantizeBF16Row(x, &r)
	row := make([]byte, 2*bf16Chunk)
	for i := 0; i < bf16Chunk; i++ {
		binary.LittleEndian.PutUint16(row[2*i:], 0x3f80) // 1.0
	}
	var l [64]float32
	if f := bf16dotAVX2(&row[0], &r.v[0], 1, &l); f != 0 {
		t.Fatalf("ordinary row: flags %#x", f)
	}
	if l[0] != 3 {
		t.Fatalf("lane 0 is %g, want 3", l[0])
	}
	for _, c := range []struct {
		w    uint16
		x    float32
		name string
	}{{0x0180, 0x1p-100, "underflow"}, {0x7e80, 0x1p100, "overflow"}} {
		binary.LittleEndian.PutUint16(row[2*7:], c.w)
		x[7] = c.x
		QuantizeBF16Row(x, &r)
		l = [64]float32{}
		if f := bf16dotAVX2(&row[0], &r.v[0], 1, &l); f == 0 {
			t.Fatalf("%s: no flag", c.name)
		}
		if _, ok := bf16dotVector(row, &r); ok {
			t.Fatalf("%s: the vector path kept the row", c.name)
		}
		x[7] = 1.5
	}
	// Go's own float32 arithmetic still keeps subnormals (MXCSR restored).
	tiny := float32(0x1p-140)
	if tiny*float32(x[0]) == 0 {
		t.Fatal("MXCSR left with FTZ/DAZ")
	}
}

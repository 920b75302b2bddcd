//go:build amd64 && !noasm

package kernels

import (
	"encoding/binary"
	"testing"

	"github.com/stratactl/stratactl/quant"
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

// init adds the VDPBF16PS tile kernels alone (the FMA kernels' fallback,
// which the bound kernels run only where MXCSR's flags say) to
// TestMatBF16KernelsGuarded's runners, so that they meet every input too.
func init() {
	if hostCPU.avx512bf16 {
		bf16MatRunners = append(bf16MatRunners, namedBF16Mat{"VDPBF16PS tiles alone", func(m *Matrix, lo, hi int, xs []*BF16Row, out []float32) {
			ok := false
			if len(xs) == 1 {
				ok = bf16Rows4(m, lo, hi, xs[0], out, false)
			} else {
				ok = bf16Tiles(m, lo, hi, xs, out, false)
			}
			if !ok {
				// bf16TestMatrix's inputs are padded and the kernels take
				// every such call: a refusal is the bug.
				panic("kernels: a VDPBF16PS tile kernel refused a padded input")
			}
		}})
	}
}

// TestBF16FMAFlushBoundary: a lane whose exact sum is a quarter of an ulp
// below 2^-126 (2^-126 + 2^-149, then minus 1.125 * 2^-149): VDPBF16PS's
// rule rounds it to 2^-126 first and keeps it; the FMA kernels keep it
// too or raise underflow (tininess after or before rounding), and the
// tile path gives DotBF16's bits either way; a flushed lane raises
// underflow and the tile path then takes the VDPBF16PS kernel's result.
func TestBF16FMAFlushBoundary(t *testing.T) {
	if !hostCPU.avx512bf16 {
		t.Skip("no AVX-512 BF16")
	}
	const n = 130
	row := make([]byte, 2*n)
	x := make([]float32, n)
	put := func(i int, w float32, a float32) {
		binary.LittleEndian.PutUint16(row[2*i:], quant.Float32ToBF16(w))
		x[i] = a
	}
	put(1, 0x1p-63, 0x1p-63)
	put(0, 0x1p-75, 0x1p-74)
	put(129, -1.125*0x1p-75, 0x1p-74)
	var r BF16Row
	QuantizeBF16Row(x, &r)
	want := portable.dotBF16(row, &r)
	if want != 0x1p-126 {
		t.Fatalf("portable %g, want 2^-126", want)
	}
	m, err := NewMatrix(quant.BF16, row, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	var out [1]float32
	chunks, m01, m23 := bf16TileShape(n)
	f := bf16Tile1x1FMA(&row[0], 2*n, 1, &r.v[0], nil, nil, chunks, m01, m23, &out[0], 0)
	t.Logf("FMA kernel: %g, flags %#x", out[0], f)
	if f == 0 && out[0] != want {
		t.Fatalf("FMA kernel %g without a flag, want %g", out[0], want)
	}
	if !bf16RowsFMA(&m, 0, 1, &r, out[:]) || out[0] != want {
		t.Fatalf("bf16RowsFMA %g, want %g", out[0], want)
	}
	// A lane flushed (2^-140 alone) raises underflow, and the VDPBF16PS
	// kernel's result stands.
	put(1, 0x1p-70, 0x1p-70)
	put(0, 0, 0)
	put(129, 0, 0)
	QuantizeBF16Row(x, &r)
	want = portable.dotBF16(row, &r)
	if f := bf16Tile1x1FMA(&row[0], 2*n, 1, &r.v[0], nil, nil, chunks, m01, m23, &out[0], 0); f == 0 {
		t.Fatalf("2^-140: FMA kernel %g, no flag", out[0])
	}
	out[0] = 1
	if !bf16RowsFMA(&m, 0, 1, &r, out[:]) || !sameFloat(out[0], want) {
		t.Fatalf("2^-140: bf16RowsFMA %g, want %g", out[0], want)
	}
}

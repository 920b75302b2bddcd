package quant_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// fixture returns the x tensor (as float32) and the q bytes of the ggml
// fixture of type name.
func fixture(t testing.TB, name string) (x []float32, q []byte) {
	t.Helper()
	f, err := gguf.Open(testutil.Path(t, "fixtures", "ggml", name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	read := func(n string) []byte {
		ti, ok := f.Tensor(n)
		if !ok {
			t.Fatalf("%s: no tensor %q", name, n)
		}
		b, err := f.ReadTensor(ti)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	xb := read("x")
	x = make([]float32, len(xb)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(xb[4*i:]))
	}
	return x, read("q")
}

func TestQuantizeMatchesGGML(t *testing.T) {
	cases := []struct {
		name string
		typ  quant.Type
		opt  *quant.QuantizeOptions
	}{
		{"F32", quant.F32, nil},
		{"F16", quant.F16, nil},
		{"BF16", quant.BF16, nil},
		{"Q8_0", quant.Q8_0, nil},
		{"Q2_0", quant.Q2_0, &quant.QuantizeOptions{Q2Mode: quant.Q2GGML}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, want := fixture(t, c.name)
			got := make([]byte, len(want))
			if err := quant.Quantize(c.typ, x, got, c.opt); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				n := 0
				for i := range got {
					if got[i] != want[i] {
						if n < 5 {
							t.Errorf("byte %d: got %#02x want %#02x", i, got[i], want[i])
						}
						n++
					}
				}
				t.Fatalf("%d of %d bytes differ from ggml", n, len(want))
			}
		})
	}
}

func TestHalfRounding(t *testing.T) {
	// Closed-form cases of fp16 round-to-nearest-even, through the F16
	// quantizer: halfway cases go to the even neighbour, overflow to inf.
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65519.996, 0x7bff},
		{65520, 0x7c00}, // halfway between 65504 and 2^16: even is inf
		{float32(math.Inf(-1)), 0xfc00},
		{1 + 1.0/2048, 0x3c00},        // halfway, rounds to even (down)
		{1 + 3.0/2048, 0x3c02},        // halfway, rounds to even (up)
		{0x1p-24, 0x0001},             // smallest subnormal
		{0x1p-25, 0x0000},             // half of it: ties to even zero
		{0x1.8p-25, 0x0001},           // above half: rounds up
		{0x1.ff8p-15, 0x03ff},         // largest subnormal
		{0x1.ffcp-15, 0x0400},         // halfway above it: even is the smallest normal
		{float32(math.NaN()), 0x7e00}, // quiet NaN
		{float32(math.Copysign(0, -1)), 0x8000},
	}
	for _, c := range cases {
		dst := make([]byte, 2)
		if err := quant.Quantize(quant.F16, []float32{c.in}, dst, nil); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint16(dst); got != c.want {
			t.Errorf("fp16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestBF16Rounding(t *testing.T) {
	for _, c := range quant.BF16RoundingCases {
		dst := make([]byte, 2)
		if err := quant.Quantize(quant.BF16, []float32{math.Float32frombits(c.In)}, dst, nil); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint16(dst); got != c.Want {
			t.Errorf("bf16(%#08x) = %#04x, want %#04x", c.In, got, c.Want)
		}
	}
}

func TestQuantizeRejectsBadSizes(t *testing.T) {
	if err := quant.Quantize(quant.Q8_0, make([]float32, 33), make([]byte, 34), nil); err == nil {
		t.Error("33 weights accepted for Q8_0")
	}
	if err := quant.Quantize(quant.Q2_0, make([]float32, 64), make([]byte, 17), nil); err == nil {
		t.Error("short destination accepted for Q2_0")
	}
	if err := quant.Quantize(quant.Q2_0, make([]float32, 128), make([]byte, 36), &quant.QuantizeOptions{Importance: make([]float32, 64), RowLen: 32}); err == nil {
		t.Error("importance of the wrong length accepted")
	}
}

func TestQ8_0NonFinite(t *testing.T) {
	x := make([]float32, 64)
	x[3] = float32(math.NaN())
	x[40] = float32(math.Inf(1))
	x[41] = 1
	dst := make([]byte, 68)
	if err := quant.Quantize(quant.Q8_0, x, dst, nil); err != nil {
		t.Fatal(err)
	}
}

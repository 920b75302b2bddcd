//go:build amd64 && !noasm

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestRoundFP16F16C: the F16C round trip through binary16 gives
// quant.FP16ToFloat32(quant.Float32ToFP16(x)) bit for bit: both signs of
// every float32 exponent (zeros, subnormals, the half subnormals and
// normals, overflow to infinity, infinities and NaNs of any payload) with
// every pattern of the 13 bits below half's mantissa (ties to even among
// them) under several upper mantissas, and every mantissa of the
// exponents whose rounding reaches into those upper bits (the half
// subnormals) and of the last before overflow.
func TestRoundFP16F16C(t *testing.T) {
	if !hostCPU.avx || !hostCPU.f16c {
		t.Skip("no F16C")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]float32, 0, 1<<16)
	check := func() {
		n := len(buf) &^ 7
		got := append([]float32(nil), buf...)
		if n > 0 {
			roundFP16F16C(&got[0], n)
		}
		for i, x := range buf[:n] {
			want := quant.FP16ToFloat32(quant.Float32ToFP16(x))
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("x %#08x: F16C round trip %#08x, want %#08x", math.Float32bits(x), math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
		copy(buf, buf[n:])
		buf = buf[:len(buf)-n]
	}
	add := func(b uint32) {
		buf = append(buf, math.Float32frombits(b))
		if len(buf) == cap(buf) {
			check()
		}
	}
	for sign := uint32(0); sign < 2; sign++ {
		for e := uint32(0); e < 256; e++ {
			his := []uint32{0, 1, 2, 0x155, 0x2aa, 0x3fe, 0x3ff, rng.Uint32N(1 << 10), rng.Uint32N(1 << 10)}
			for _, hi := range his {
				for lo := uint32(0); lo < 1<<13; lo++ {
					add(sign<<31 | e<<23 | hi<<13 | lo)
				}
			}
		}
	}
	// Half subnormals and their rounding up into the normals (float32
	// exponents 102..113), and the largest exponent before overflow.
	exps := []uint32{102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 142}
	step := uint32(1)
	if testing.Short() {
		step = 7
	}
	for _, e := range exps {
		for m := uint32(0); m < 1<<23; m += step {
			add(e<<23 | m)
			if m%64 == 0 {
				add(1<<31 | e<<23 | m)
			}
		}
	}
	for len(buf)%8 != 0 {
		add(rng.Uint32())
	}
	check()
}

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// vectorTypes are the types with a vector path on amd64.
var vectorTypes = []quant.Type{quant.Q8_0, quant.IQ4_NL, quant.IQ3_S, quant.Q2_0, quant.F16, quant.BF16, quant.F32, quant.Q6_K, quant.Q4_K, quant.IQ4_XS, quant.Q5_K, quant.Q2_K, quant.Q3_K, quant.Q4_0, quant.MXFP4}

// allTypes is every type quant decodes; Dequantize must agree with quant for
// each, vector path or not.
var allTypes = []quant.Type{
	quant.F32, quant.F16, quant.BF16, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q8_0,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ1_S, quant.IQ1_M,
	quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ3_XXS, quant.IQ3_S, quant.IQ4_NL,
	quant.IQ4_XS, quant.MXFP4, quant.TQ1_0, quant.TQ2_0, quant.Q1_0, quant.Q2_0,
}

// guard is the sentinel around every output buffer: a NaN no decoder makes.
const guard = 0x7fa5a5a5

// randomBlocks fills n blocks with raw random bytes: NaN, infinite and
// subnormal fp16 scales occur, as do codes ggml never writes.
func randomBlocks(rng *rand.Rand, t quant.Type, n int) []byte {
	ti, _ := quant.Info(t)
	b := make([]byte, n*ti.BlockBytes)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	// Make some scales special on purpose: every fp16 exponent field 0 or 31
	// appears in a few blocks whatever the seed.
	for i := 0; i+2 <= len(b); i += 7 * ti.BlockBytes {
		b[i+1] |= 0x7c
	}
	for i := 3 * ti.BlockBytes; i+2 <= len(b); i += 11 * ti.BlockBytes {
		b[i+1] &= 0x83
	}
	return b
}

// decodeGuarded decodes src into a buffer that starts `shift` floats into a
// larger one, and fails if anything outside dst was written.
func decodeGuarded(t *testing.T, k *kernelSet, typ quant.Type, src []byte, n, shift int) []float32 {
	t.Helper()
	const band = 16
	buf := make([]float32, shift+n+band+band)
	for i := range buf {
		buf[i] = math.Float32frombits(guard)
	}
	dst := buf[band+shift : band+shift+n : band+shift+n]
	if err := k.dequantize(typ, src, dst); err != nil {
		t.Fatal(err)
	}
	for i, v := range buf {
		if (i < band+shift || i >= band+shift+n) && math.Float32bits(v) != guard {
			t.Fatalf("%s: wrote outside dst at %d (shift %d, n %d)", typ, i-band-shift, shift, n)
		}
	}
	return dst
}

// TestVectorMatchesPortable: every path gives the same bits (NaNs included)
// over many lengths and unaligned source and destination starts.
func TestVectorMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range allTypes {
		ti, _ := quant.Info(typ)
		maxBlocks := 4096 / ti.BlockElements * 2
		if maxBlocks < 40 {
			maxBlocks = 40
		}
		raw := randomBlocks(rng, typ, maxBlocks+1)
		for blocks := 0; blocks <= maxBlocks; blocks += 1 + blocks/8 {
			srcShift := rng.IntN(ti.BlockBytes)
			dstShift := rng.IntN(8)
			src := raw[srcShift : srcShift+blocks*ti.BlockBytes]
			n := blocks * ti.BlockElements
			want := decodeGuarded(t, &portable, typ, src, n, dstShift)
			for _, s := range testSets() {
				got := decodeGuarded(t, s.k, typ, src, n, 7-dstShift)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s on %s: %d blocks, element %d: vector %#08x, portable %#08x", typ, s.name, blocks, i,
							math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestVectorFixtures: the vector paths reproduce ggml's own dequantization.
func TestVectorFixtures(t *testing.T) {
	dir := testutil.Path(t, "fixtures", "ggml")
	for _, typ := range vectorTypes {
		f, err := gguf.Open(filepath.Join(dir, typ.String()+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		qi, _ := f.Tensor("q")
		ri, _ := f.Tensor("ref")
		q, err := f.ReadTensor(qi)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := f.ReadTensor(ri)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		got := make([]float32, qi.Elements())
		if err := Dequantize(typ, q, got); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if math.Float32bits(v) != binary.LittleEndian.Uint32(ref[4*i:]) {
				t.Fatalf("%s element %d: %#08x, ggml %#08x", typ, i, math.Float32bits(v), binary.LittleEndian.Uint32(ref[4*i:]))
			}
		}
	}
}

func TestVectorPathsPresent(t *testing.T) {
	if !asmBuild || !hostCPU.avx2 || !hostCPU.f16c {
		t.Logf("no vector paths on this CPU/build (%s)", Describe())
		return
	}
	for _, typ := range vectorTypes {
		if !HasVectorDequantize(typ) {
			t.Errorf("%s: no vector path on an AVX2 CPU", typ)
		}
	}
}

func TestDequantizeSizeErrors(t *testing.T) {
	for _, typ := range vectorTypes {
		ti, _ := quant.Info(typ)
		if err := Dequantize(typ, make([]byte, ti.BlockBytes+1), make([]float32, ti.BlockElements)); err == nil {
			t.Errorf("%s: long source accepted", typ)
		}
		if err := Dequantize(typ, make([]byte, ti.BlockBytes), make([]float32, ti.BlockElements-1)); err == nil {
			t.Errorf("%s: partial block accepted", typ)
		}
		if err := Dequantize(typ, nil, nil); err != nil {
			t.Errorf("%s: empty input: %v", typ, err)
		}
	}
}

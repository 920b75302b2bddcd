package quant_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// dequantTypes is every type this package must decode (the list).
var dequantTypes = []quant.Type{
	quant.F32, quant.F16, quant.BF16, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q8_0,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ1_S, quant.IQ1_M,
	quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ3_XXS, quant.IQ3_S, quant.IQ4_NL,
	quant.IQ4_XS, quant.MXFP4, quant.TQ1_0, quant.TQ2_0, quant.Q1_0, quant.Q2_0,
}

// readTensor loads one tensor of a fixture file.
func readTensor(t *testing.T, f *gguf.File, name string) (*gguf.TensorInfo, []byte) {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("%s: no tensor %q", f.Path, name)
	}
	b, err := f.ReadTensor(ti)
	if err != nil {
		t.Fatal(err)
	}
	return ti, b
}

// sameBits compares decoded weights with ggml's, bit for bit; two NaNs count
// as equal (the fixtures hold none).
func sameBits(t *testing.T, label string, got []float32, ref []byte) {
	t.Helper()
	if len(ref) != 4*len(got) {
		t.Fatalf("%s: %d weights vs %d ref bytes", label, len(got), len(ref))
	}
	bad := 0
	for i, g := range got {
		w := binary.LittleEndian.Uint32(ref[4*i:])
		gb := math.Float32bits(g)
		if gb == w || (g != g && math.IsNaN(float64(math.Float32frombits(w)))) {
			continue
		}
		if bad++; bad <= 5 {
			t.Errorf("%s: element %d = %#08x (%g), ggml %#08x (%g)", label, i, gb, g, w, math.Float32frombits(w))
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements differ", label, bad)
	}
}

func TestDequantizeFixtures(t *testing.T) {
	dir := testutil.Path(t, "fixtures", "ggml")
	for _, typ := range dequantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			f, err := gguf.Open(filepath.Join(dir, typ.String()+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			qi, q := readTensor(t, f, "q")
			if qi.Type != typ {
				t.Fatalf("q is %s, want %s", qi.Type, typ)
			}
			_, ref := readTensor(t, f, "ref")
			got := make([]float32, qi.Elements())
			if err := quant.Dequantize(typ, q, got); err != nil {
				t.Fatal(err)
			}
			sameBits(t, typ.String(), got, ref)
		})
	}
}

func TestDequantizeExpertsIQ3S(t *testing.T) {
	f, err := gguf.Open(testutil.Path(t, "fixtures", "ggml", "experts_iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qi, q := readTensor(t, f, "blk.0.ffn_gate_exps.weight")
	_, ref := readTensor(t, f, "ref")
	// Expert by expert, as a streaming reader would decode them.
	perExpert := int(qi.Ne(0) * qi.Ne(1))
	eb := len(q) / int(qi.Ne(2))
	for e := 0; e < int(qi.Ne(2)); e++ {
		got := make([]float32, perExpert)
		if err := quant.Dequantize(qi.Type, q[e*eb:(e+1)*eb], got); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "expert", got, ref[4*perExpert*e:4*perExpert*(e+1)])
	}
}

func TestEveryTypeRegistered(t *testing.T) {
	for _, typ := range dequantTypes {
		if !quant.CanDequantize(typ) {
			t.Errorf("%s has no dequantizer", typ)
		}
	}
}

func TestDequantizeRejectsBadSizes(t *testing.T) {
	for _, typ := range dequantTypes {
		ti, _ := quant.Info(typ)
		dst := make([]float32, 2*ti.BlockElements)
		if err := quant.Dequantize(typ, make([]byte, 2*ti.BlockBytes-1), dst); err == nil {
			t.Errorf("%s: short source accepted", typ)
		}
		if ti.BlockElements > 1 {
			if err := quant.Dequantize(typ, make([]byte, ti.BlockBytes), make([]float32, ti.BlockElements+1)); err == nil {
				t.Errorf("%s: partial block accepted", typ)
			}
		}
	}
	if err := quant.Dequantize(quant.Type(4), nil, nil); err == nil || !strings.Contains(err.Error(), "cannot dequantize") {
		t.Errorf("retired type: %v", err)
	}
}

// Random bytes (NaN/Inf/subnormal scales and codes ggml never writes) must
// decode without a panic, and every finite scale must give finite weights.
func TestDequantizeRandomBytesNoPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range dequantTypes {
		ti, _ := quant.Info(typ)
		n := 64 * ti.BlockElements
		src := make([]byte, 64*ti.BlockBytes)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		dst := make([]float32, n)
		if err := quant.Dequantize(typ, src, dst); err != nil {
			t.Fatal(err)
		}
	}
}

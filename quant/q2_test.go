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

var (
	optGGML   = &quant.QuantizeOptions{Q2Mode: quant.Q2GGML}
	optField  = &quant.QuantizeOptions{Q2Mode: quant.Q2Field}
	optSearch = &quant.QuantizeOptions{Q2Mode: quant.Q2Search}
)

func relMSE(t testing.TB, x []float32, opt *quant.QuantizeOptions) float64 {
	t.Helper()
	q := make([]byte, len(x)/64*18)
	if err := quant.Quantize(quant.Q2_0, x, q, opt); err != nil {
		t.Fatal(err)
	}
	var w []float32
	if opt != nil {
		w = opt.Importance
	}
	rowLen := 0
	if opt != nil {
		rowLen = opt.RowLen
	}
	e, s, err := quant.Q2Error(x, q, w, rowLen)
	if err != nil {
		t.Fatal(err)
	}
	return e / s
}

// fixtureXs is the x tensor of every ggml fixture file.
func fixtureXs(t testing.TB) map[string][]float32 {
	paths, err := filepath.Glob(testutil.Path(t, "fixtures", "ggml", "*.gguf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string][]float32{}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ti, ok := f.Tensor("x")
		if !ok || ti.Type != quant.F32 {
			f.Close()
			t.Fatalf("%s: no F32 tensor x", p)
		}
		b, err := f.ReadTensor(ti)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, len(b)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		out[name] = x
	}
	return out
}

// expertTensors reads the expert weights of the tiny model as float32,
// every stride-th expert of each tensor (stride 1 = all).
func expertTensors(t testing.TB, stride int) map[string][]float32 {
	f, err := gguf.Open(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if !strings.Contains(ti.Name, "_exps.") {
			continue
		}
		if ti.Type != quant.BF16 || len(ti.Dims) != 3 {
			t.Fatalf("%s: want a 3-D BF16 tensor, got %s %v", ti.Name, ti.Type, ti.Dims)
		}
		per := ti.Dims[0] * ti.Dims[1]
		var x []float32
		buf := make([]byte, per*2)
		for e := int64(0); e < ti.Dims[2]; e += int64(stride) {
			if err := f.ReadTensorAt(ti, buf, e*per*2); err != nil {
				t.Fatal(err)
			}
			for j := int64(0); j < per; j++ {
				x = append(x, math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[2*j:]))<<16))
			}
		}
		out[ti.Name] = x
	}
	if len(out) != 12 {
		t.Fatalf("found %d expert tensors, want 12", len(out))
	}
	return out
}

func gaussian(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func TestQ2SearchBeatsOtherRulesOnFixtures(t *testing.T) {
	for name, x := range fixtureXs(t) {
		g, f, s := relMSE(t, x, optGGML), relMSE(t, x, optField), relMSE(t, x, optSearch)
		t.Logf("%-18s ggml %.4f field %.4f search %.4f", name, g, f, s)
		if !(s < g && s < f) {
			t.Errorf("%s: search %.5f is not below ggml %.5f and field %.5f", name, s, g, f)
		}
	}
}

func TestQ2SearchBeatsOtherRulesOnExperts(t *testing.T) {
	for name, x := range expertTensors(t, 1) {
		g, f, s := relMSE(t, x, optGGML), relMSE(t, x, optField), relMSE(t, x, optSearch)
		t.Logf("%-28s ggml %.4f field %.4f search %.4f", name, g, f, s)
		if !(s < g && s < f) {
			t.Errorf("%s: search %.5f is not below ggml %.5f and field %.5f", name, s, g, f)
		}
	}
}

func TestQ2GaussianErrors(t *testing.T) {
	// Expected values for a standard normal, from the scale grids alone:
	// ggml's ternary rule about 0.51, the field rule about 0.168, the
	// search about 0.123 (the optimum of a uniform 4-level grid with fp16
	// scales is near 0.12).
	x := gaussian(64*4096, 1)
	g, f, s := relMSE(t, x, optGGML), relMSE(t, x, optField), relMSE(t, x, optSearch)
	t.Logf("gaussian: ggml %.4f field %.4f search %.4f", g, f, s)
	if math.Abs(g-0.51) > 0.02 || math.Abs(f-0.168) > 0.005 || s > 0.126 || s < 0.115 {
		t.Errorf("gaussian relative MSE ggml %.4f field %.4f search %.4f, want about 0.51, 0.168, 0.123", g, f, s)
	}
}

func TestQ2SearchEdgeBlocks(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	blocks := map[string][]float32{
		"zeros": make([]float32, 64),
		"tiny":  append(make([]float32, 63), 1e-30),
		"nan":   append(append(make([]float32, 10), nan), gaussian(53, 3)...),
		"inf":   append(append(make([]float32, 10), inf, -inf), gaussian(52, 4)...),
		"huge":  append([]float32{3e38, -3e38}, gaussian(62, 5)...),
	}
	for name, x := range blocks {
		q := make([]byte, 18)
		if err := quant.Quantize(quant.Q2_0, x, q, nil); err != nil {
			t.Fatal(err)
		}
		d := binary.LittleEndian.Uint16(q)
		if d&0x7c00 == 0x7c00 {
			t.Errorf("%s: stored scale %#04x is not finite", name, d)
		}
		switch name {
		case "zeros", "tiny":
			if d&0x7fff != 0 {
				t.Errorf("%s: scale %#04x, want 0", name, d)
			}
			for _, b := range q[2:] {
				if b != 0x55 {
					t.Errorf("%s: codes %x, want all 1 (zero)", name, q[2:])
					break
				}
			}
		case "nan":
			if c := q[2+10/4] >> (2 * (10 % 4)) & 3; c != 1 {
				t.Errorf("nan element got code %d, want 1 (zero)", c)
			}
		}
	}
}

func TestQ2SearchUsesBothSigns(t *testing.T) {
	// A block whose large values are negative is best served by a negative
	// scale: codes then mean {1, 0, -1, -2} x |d|, and code 3 carries them.
	x := gaussian(64, 7)
	for i := range x {
		x[i] = float32(math.Abs(float64(x[i])))*0.2 - 1
	}
	x[5] = -2
	q := make([]byte, 18)
	quant.Quantize(quant.Q2_0, x, q, nil)
	if d := binary.LittleEndian.Uint16(q); d&0x8000 == 0 {
		t.Errorf("scale %#04x is not negative for a negative-heavy block", d)
	}
	if s := relMSE(t, x, optSearch); !(s < relMSE(t, x, optField)) {
		t.Errorf("search %.4f not better than field on a negative block", s)
	}
}

func TestQ2SearchIsBlockLocal(t *testing.T) {
	// The same bytes whether rows are quantized in one call or in pieces,
	// with or without importance: what makes any thread split deterministic.
	x := gaussian(64*40, 11)
	imp := gaussian(320, 12)
	for i := range imp {
		imp[i] *= imp[i]
	}
	for _, opt := range []*quant.QuantizeOptions{nil, {Importance: imp, RowLen: 320}, {Q2Candidates: 3}} {
		whole := make([]byte, 40*18)
		quant.Quantize(quant.Q2_0, x, whole, opt)
		for _, rows := range []int{1, 2, 4} {
			n := rows * 320
			for off := 0; off < len(x); off += n {
				part := make([]byte, n/64*18)
				quant.Quantize(quant.Q2_0, x[off:off+n], part, opt)
				if string(part) != string(whole[off/64*18:][:len(part)]) {
					t.Fatalf("rows %d at %d: bytes differ from the one-call result", rows, off)
				}
			}
		}
	}
}

func TestQ2ImportanceLowersWeightedError(t *testing.T) {
	x := gaussian(64*512, 21)
	imp := gaussian(256, 22)
	for i := range imp {
		imp[i] = imp[i]*imp[i]*imp[i]*imp[i] + 0.01 // heavy-tailed, like activations squared
	}
	q := make([]byte, len(x)/64*18)
	quant.Quantize(quant.Q2_0, x, q, nil)
	eu, _, _ := quant.Q2Error(x, q, imp, 256)
	quant.Quantize(quant.Q2_0, x, q, &quant.QuantizeOptions{Importance: imp, RowLen: 256})
	ew, _, _ := quant.Q2Error(x, q, imp, 256)
	t.Logf("importance-weighted error: uniform %.2f, weighted %.2f", eu, ew)
	if !(ew < eu*0.97) {
		t.Errorf("weighted search error %.3f not clearly below unweighted %.3f", ew, eu)
	}
}

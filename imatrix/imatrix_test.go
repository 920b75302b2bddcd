package imatrix

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

func tinyMatrix(t testing.TB) *Matrix {
	t.Helper()
	m, err := Open(testutil.TinyModel(t, "imatrix.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTinyImatrixFacts(t *testing.T) {
	m := tinyMatrix(t)
	// Facts from the fixture's README.
	if m.Legacy || m.ChunkCount != 64 || m.ChunkSize != 256 || len(m.Datasets) != 1 || m.Datasets[0] != "calib_tokens.i32.bin" {
		t.Errorf("metadata: legacy %v chunks %d x %d datasets %q", m.Legacy, m.ChunkCount, m.ChunkSize, m.Datasets)
	}
	if len(m.Names()) != 32 {
		t.Errorf("%d entries, want 32", len(m.Names()))
	}
	wantMinMax := [4][2]float32{{1422, 2600}, {1564, 2789}, {1230, 2790}, {1078, 2896}}
	for l := 0; l < 4; l++ {
		for _, kind := range []string{"gate", "up", "down"} {
			e, ok := m.Entry(fmt.Sprintf("blk.%d.ffn_%s_exps.weight", l, kind))
			if !ok {
				t.Fatalf("layer %d: no %s entry", l, kind)
			}
			if len(e.Counts) != 32 || e.Ne0 != 256 {
				t.Fatalf("layer %d %s: %d counts, ne0 %d", l, kind, len(e.Counts), e.Ne0)
			}
			var sum float64
			lo, hi := float32(math.Inf(1)), float32(0)
			for _, c := range e.Counts {
				sum += float64(c)
				lo, hi = min(lo, c), max(hi, c)
			}
			if sum != 65536 || lo != wantMinMax[l][0] || hi != wantMinMax[l][1] {
				t.Errorf("layer %d %s: counts sum %g min %g max %g, want 65536 %g %g", l, kind, sum, lo, hi, wantMinMax[l][0], wantMinMax[l][1])
			}
		}
		gate, _ := m.Entry(fmt.Sprintf("blk.%d.ffn_gate_exps.weight", l))
		up, _ := m.Entry(fmt.Sprintf("blk.%d.ffn_up_exps.weight", l))
		for i := range gate.Values {
			if gate.Values[i] != up.Values[i] {
				t.Fatalf("layer %d: gate and up importance differ at %d", l, i)
			}
		}
		for _, dense := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate_inp"} {
			e, ok := m.Entry(fmt.Sprintf("blk.%d.%s.weight", l, dense))
			if !ok || len(e.Counts) != 1 || e.Counts[0] != 16384 || len(e.Values) != 256 {
				t.Errorf("layer %d %s: dense entry %v", l, dense, e != nil)
			}
		}
		// The router sees the same input as every expert, each token once
		// per routed expert: sum_e count_e*imp_e = top_k * 16384 * imp_router.
		router, _ := m.Importance(fmt.Sprintf("blk.%d.ffn_gate_inp.weight", l), 0, 256)
		for i := 0; i < 256; i++ {
			var s float64
			for x := 0; x < 32; x++ {
				s += float64(gate.Values[x*256+i]) * float64(gate.Counts[x])
			}
			want := 4 * 16384 * float64(router[i])
			if math.Abs(s-want) > 1e-5*want {
				t.Fatalf("layer %d column %d: experts' sum of squares %g, router's x4 %g", l, i, s, want)
			}
		}
	}
	imp, err := m.Importance("blk.3.ffn_down_exps.weight", 31, 256)
	if err != nil || len(imp) != 256 {
		t.Fatalf("expert 31: %v", err)
	}
}

func TestImportanceErrors(t *testing.T) {
	m := tinyMatrix(t)
	_, err := m.Importance("output.weight", 0, 256)
	if !errors.Is(err, ErrNoEntry) || !strings.Contains(err.Error(), `"output.weight"`) {
		t.Errorf("missing entry: %v", err)
	}
	_, err = m.Importance("blk.0.ffn_up_exps.weight", 0, 512)
	if err == nil || !strings.Contains(err.Error(), "blk.0.ffn_up_exps.weight") || !strings.Contains(err.Error(), "512") {
		t.Errorf("length mismatch: %v", err)
	}
	if _, err = m.Importance("blk.0.ffn_up_exps.weight", 32, 256); err == nil {
		t.Error("expert 32 of 32 accepted")
	}
	if _, err = m.Importance("blk.0.attn_q.weight", 1, 256); err == nil {
		t.Error("expert 1 of a dense entry accepted")
	}
}

// writeLegacy writes m in the legacy .dat form, values scaled by ncall as
// llama.cpp's writer does.
func writeLegacy(t *testing.T, m *Matrix, path string, trailer bool) {
	var b []byte
	i32 := func(v int32) { b = binary.LittleEndian.AppendUint32(b, uint32(v)) }
	i32(int32(len(m.Names())))
	const ncall = 64
	for _, n := range m.Names() {
		e, _ := m.Entry(n)
		i32(int32(len(n)))
		b = append(b, n...)
		i32(ncall)
		i32(int32(len(e.Values)))
		for _, v := range e.Values {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v*ncall))
		}
	}
	if trailer {
		i32(64)
		i32(int32(len("calib.txt")))
		b = append(b, "calib.txt"...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLegacyDat(t *testing.T) {
	m := tinyMatrix(t)
	for _, trailer := range []bool{false, true} {
		p := filepath.Join(t.TempDir(), "imatrix.dat")
		writeLegacy(t, m, p, trailer)
		l, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Legacy || len(l.Names()) != len(m.Names()) {
			t.Fatalf("legacy: %d entries", len(l.Names()))
		}
		if trailer && (l.ChunkCount != 64 || len(l.Datasets) != 1 || l.Datasets[0] != "calib.txt") {
			t.Errorf("trailer: chunks %d datasets %q", l.ChunkCount, l.Datasets)
		}
		for _, n := range m.Names() {
			rows, err := m.Rows(n, 256)
			if err != nil {
				t.Fatal(err)
			}
			for e := 0; e < rows; e++ {
				a, _ := m.Importance(n, e, 256)
				b, err := l.Importance(n, e, 256)
				if err != nil {
					t.Fatal(err)
				}
				for i := range a {
					if math.Abs(float64(a[i]-b[i])) > 1e-6*float64(a[i]) {
						t.Fatalf("%s expert %d col %d: legacy %g, gguf %g", n, e, i, b[i], a[i])
					}
				}
			}
		}
		if _, err := l.Importance("blk.0.ffn_up_exps.weight", 0, 300); err == nil {
			t.Error("legacy: rows of 300 accepted for 8192 values")
		}
	}
}

func TestHostileFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.dat")
	writeLegacy(t, tinyMatrix(t), good, true)
	data, _ := os.ReadFile(good)
	cases := map[string][]byte{
		"empty":       {},
		"short":       {1, 0},
		"truncated":   data[:len(data)/2],
		"huge count":  {0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0, 'a', 0, 0, 0, 0},
		"negative":    {0xff, 0xff, 0xff, 0xff},
		"stray bytes": append(append([]byte{}, data...), 1, 2, 3),
	}
	// a NaN value in the first entry
	nan := append([]byte{}, data...)
	nameLen := int(binary.LittleEndian.Uint32(nan[4:]))
	binary.LittleEndian.PutUint32(nan[4+4+nameLen+8:], 0x7fc00000)
	cases["nan"] = nan
	for name, b := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		os.WriteFile(p, b, 0o644)
		if _, err := Open(p); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Error("missing file accepted")
	}
	// A GGUF that is not an importance matrix.
	if _, err := Open(testutil.Path(t, "fixtures", "ggml", "Q8_0.gguf")); err == nil {
		t.Error("a quantization fixture accepted as an importance matrix")
	}
}

// TestImatrixLowersWeightedQ2Error: quantizing the tiny model's experts
// with their importance vectors lowers the importance-weighted error (the
// expected squared error of each expert's outputs on the calibration
// activations) compared with the unweighted search.
func TestImatrixLowersWeightedQ2Error(t *testing.T) {
	m := tinyMatrix(t)
	f, err := gguf.Open(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if !strings.Contains(ti.Name, "_exps.") {
			continue
		}
		n++
		ne0, per := int(ti.Dims[0]), int(ti.Dims[0]*ti.Dims[1])
		raw := make([]byte, per*2)
		x := make([]float32, per)
		q := make([]byte, per/64*18)
		var eu, ew float64
		for e := 0; e < int(ti.Dims[2]); e++ {
			if err := f.ReadTensorAt(ti, raw, int64(e*per*2)); err != nil {
				t.Fatal(err)
			}
			if err := quant.Dequantize(quant.BF16, raw, x); err != nil {
				t.Fatal(err)
			}
			imp, err := m.Importance(ti.Name, e, ne0)
			if err != nil {
				t.Fatal(err)
			}
			if err := kernels.QuantizeQ2_0(x, q, nil); err != nil {
				t.Fatal(err)
			}
			u, _, _ := quant.Q2Error(x, q, imp, ne0)
			if err := kernels.QuantizeQ2_0(x, q, &quant.QuantizeOptions{Importance: imp, RowLen: ne0}); err != nil {
				t.Fatal(err)
			}
			w, _, _ := quant.Q2Error(x, q, imp, ne0)
			eu, ew = eu+u, ew+w
		}
		t.Logf("%-28s importance-weighted error: unweighted search %.5g, imatrix search %.5g (%.1f%% lower)", ti.Name, eu, ew, 100*(1-ew/eu))
		if !(ew < eu) {
			t.Errorf("%s: imatrix-weighted error %g not below unweighted %g", ti.Name, ew, eu)
		}
	}
	if n != 12 {
		t.Fatalf("%d expert tensors, want 12", n)
	}
}

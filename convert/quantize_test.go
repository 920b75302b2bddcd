package convert

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

func readAll(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestQuantizeTinyQ8(t *testing.T) {
	in := testutil.TinyModel(t, "model-iq3s.gguf")
	dir := t.TempDir()
	var outs []string
	for _, j := range []int{1, 2} {
		out := filepath.Join(dir, "q8-j"+string(rune('0'+j))+".gguf")
		res, err := Quantize(context.Background(), QuantizeConfig{In: in, Out: out, Type: quant.Q8_0, Jobs: j, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Converted != 12 {
			t.Fatalf("converted %d tensors, want the 12 expert tensors", res.Converted)
		}
		outs = append(outs, out)
	}
	if !bytes.Equal(readAll(t, outs[0]), readAll(t, outs[1])) {
		t.Fatal("-j 1 and -j 2 outputs differ")
	}
	src, err := gguf.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := gguf.Open(outs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if len(dst.Tensors) != len(src.Tensors) {
		t.Fatalf("%d tensors, want %d", len(dst.Tensors), len(src.Tensors))
	}
	for i := range src.Tensors {
		st, dt := &src.Tensors[i], &dst.Tensors[i]
		if st.Name != dt.Name {
			t.Fatalf("tensor %d: %s, want %s", i, dt.Name, st.Name)
		}
		sb, _ := src.ReadTensor(st)
		db, _ := dst.ReadTensor(dt)
		if gguf.IsExpertTensor(st.Name) {
			if dt.Type != quant.Q8_0 {
				t.Fatalf("%s: %s, want Q8_0", dt.Name, dt.Type)
			}
			// Independent check: Q8_0 of the decoded IQ3_S values is within
			// a step's rounding of each value.
			x := make([]float32, st.Elements())
			y := make([]float32, st.Elements())
			if err := quant.Dequantize(st.Type, sb, x); err != nil {
				t.Fatal(err)
			}
			if err := quant.Dequantize(dt.Type, db, y); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < len(x); b += 32 {
				var amax float64
				for _, v := range x[b : b+32] {
					amax = math.Max(amax, math.Abs(float64(v)))
				}
				for k := b; k < b+32; k++ {
					// Half a step, plus the fp16 rounding of d (2^-11 relative) times the largest code.
					if d := math.Abs(float64(x[k] - y[k])); d > amax/127*(0.5+127.0/2048)+1e-7 {
						t.Fatalf("%s element %d: %v vs %v", st.Name, k, x[k], y[k])
					}
				}
			}
		} else if dt.Type != st.Type || !bytes.Equal(sb, db) {
			t.Fatalf("%s not copied byte for byte", st.Name)
		}
	}
	if ft, _ := dst.Uint32("general.file_type"); ft != 7 {
		t.Errorf("general.file_type = %d, want 7 (MOSTLY_Q8_0)", ft)
	}
	if s, _ := dst.String("stratactl.quantize.type"); s != "Q8_0" {
		t.Errorf("stratactl.quantize.type = %q", s)
	}
	// Every source key survives (file_type aside).
	for _, kv := range src.KV {
		if kv.Key == "general.file_type" {
			continue
		}
		v, ok := dst.Get(kv.Key)
		if !ok || v.TypeName() != kv.Value.TypeName() {
			t.Errorf("key %s lost or changed type", kv.Key)
		}
	}
}

func TestQuantizeQ2KeepsFileType(t *testing.T) {
	in := testutil.TinyModel(t, "model-bf16.gguf")
	out := filepath.Join(t.TempDir(), "q2.gguf")
	res, err := Quantize(context.Background(), QuantizeConfig{In: in, Out: out, Type: quant.Q2_0, Tensors: `blk\.0\.ffn_(gate|up)_exps`, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Converted != 2 {
		t.Fatalf("converted %d", res.Converted)
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ft, _ := f.Uint32("general.file_type"); ft != 32 {
		t.Errorf("general.file_type = %d, want the source's 32", ft)
	}
	for _, r := range res.Tensors {
		if r.Action == "quantized" {
			// 2-bit quantization of bf16 weights: the error is neither zero nor
			// larger than the signal.
			if !(r.RelMSE > 0.01 && r.RelMSE < 0.5) {
				t.Errorf("%s: rel MSE %v", r.Name, r.RelMSE)
			}
			tt, _ := f.Tensor(r.Name)
			if tt.Type != quant.Q2_0 {
				t.Errorf("%s is %s", r.Name, tt.Type)
			}
		}
	}
}

func TestQuantizeCancelledLeavesNothing(t *testing.T) {
	in := testutil.TinyModel(t, "model-bf16.gguf")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Quantize(ctx, QuantizeConfig{In: in, Out: filepath.Join(dir, "out.gguf"), Type: quant.Q8_0})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cancelled run: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("cancelled run left %v", ents)
	}
}

// writeGGUF makes a small GGUF with the given F32 tensors.
func writeGGUF(t testing.TB, path string, kv []gguf.KV, names []string, dims [][]int64, data [][]float32) {
	t.Helper()
	var specs []gguf.TensorSpec
	for i, n := range names {
		specs = append(specs, gguf.TensorSpec{Name: n, Type: quant.F32, Dims: dims[i]})
	}
	w, err := gguf.Create(path, kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		b := make([]byte, 4*len(data[i]))
		if err := quant.Quantize(quant.F32, data[i], b, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteTensor(n, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestQuantizeRefusesNaN(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "nan.gguf")
	x := make([]float32, 64*4*2)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	x[64*4+70] = float32(math.NaN())
	writeGGUF(t, in, []gguf.KV{{Key: "general.architecture", Value: gguf.String("test")}},
		[]string{"a.weight", "blk.0.ffn_up_exps.weight"}, [][]int64{{64, 2}, {64, 4, 2}}, [][]float32{x[:128], x})
	out := filepath.Join(dir, "out.gguf")
	_, err := Quantize(context.Background(), QuantizeConfig{In: in, Out: out, Type: quant.Q8_0})
	var nf *NonFiniteError
	if !errors.As(err, &nf) {
		t.Fatalf("NaN weights: %v", err)
	}
	src, _ := gguf.Open(in)
	defer src.Close()
	tt, _ := src.Tensor("blk.0.ffn_up_exps.weight")
	if nf.Tensor != tt.Name || nf.Element != 64*4+70 || nf.Expert != 1 || nf.Offset != src.DataStart(tt)+4*(64*4+70) {
		t.Fatalf("NaN located wrong: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("output exists after a refused conversion")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("refused run left %v", ents)
	}
}

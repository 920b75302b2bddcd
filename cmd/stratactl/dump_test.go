package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// fixtureRef reads the `ref` tensor (ggml's to_float of `q`) of a fixture.
func fixtureRef(t *testing.T, path, tensor string) []byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Tensor(tensor)
	if !ok {
		t.Fatalf("%s has no %s", path, tensor)
	}
	b, err := f.ReadTensor(ti)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDumpFixturesToFile(t *testing.T) {
	dir := testutil.Path(t, "fixtures", "ggml")
	tmp := t.TempDir()
	for _, name := range []string{"Q8_0", "IQ3_S", "IQ4_NL", "Q2_0", "Q4_K", "IQ1_M", "BF16", "F32", "TQ1_0"} {
		path := filepath.Join(dir, name+".gguf")
		out := filepath.Join(tmp, name+".f32")
		var o, e bytes.Buffer
		if code := run(context.Background(), cli.Test(&o, &e), []string{"dump", path, "q", "-o", out}); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, e.String())
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, fixtureRef(t, path, "ref")) {
			t.Errorf("%s: dump differs from ggml's ref", name)
		}
	}
}

func TestDumpStdoutExperts(t *testing.T) {
	path := testutil.Path(t, "fixtures", "ggml", "experts_iq3s.gguf")
	var o, e bytes.Buffer
	if code := run(context.Background(), cli.Test(&o, &e), []string{"dump", path, "blk.0.ffn_gate_exps.weight"}); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	if !bytes.Equal(o.Bytes(), fixtureRef(t, path, "ref")) {
		t.Errorf("stdout dump differs from ggml's ref (%d bytes)", o.Len())
	}
}

// A tensor bigger than one chunk goes through several reads; the result
// must still be the whole tensor in order.
func TestDumpManyChunks(t *testing.T) {
	tmp := t.TempDir()
	const ne0, rows = 4096, 600 // 2.4 Mi weights, three chunks with a partial one
	data := make([]byte, ne0*rows/32*34)
	for i := range data {
		data[i] = byte(i*7 + i/34)
	}
	for i := 0; i < len(data); i += 34 {
		data[i+1] = 0x3c // scale in [1, 2): ordinary values
	}
	src := filepath.Join(tmp, "big.gguf")
	fw, err := gguf.Create(src, nil, []gguf.TensorSpec{{Name: "w", Type: quant.Q8_0, Dims: []int64{ne0, rows}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteTensor("w", data); err != nil {
		t.Fatal(err)
	}
	if err := fw.Commit(); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, ne0*rows)
	if err := quant.Dequantize(quant.Q8_0, data, want); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	out := filepath.Join(tmp, "w.f32")
	if code := run(context.Background(), cli.Test(&o, &e), []string{"dump", src, "w", "-o", out, "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	got, _ := os.ReadFile(out)
	if len(got) != 4*len(want) {
		t.Fatalf("%d bytes, want %d", len(got), 4*len(want))
	}
	var sum, sumSq float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, w := range want {
		if binary.LittleEndian.Uint32(got[4*i:]) != math.Float32bits(w) {
			t.Fatalf("weight %d differs", i)
		}
		v := float64(w)
		sum, sumSq, lo, hi = sum+v, sumSq+v*v, min(lo, v), max(hi, v)
	}
	var s convert.DumpSummary
	if err := json.Unmarshal(o.Bytes(), &s); err != nil {
		t.Fatalf("%v: %s", err, o.String())
	}
	n := float64(len(want))
	if s.Elements != int64(len(want)) || s.BytesWritten != int64(len(got)) || *s.Min != lo || *s.Max != hi ||
		math.Abs(*s.Mean-sum/n) > 1e-12*math.Abs(sum/n)+1e-15 || math.Abs(*s.RMS-math.Sqrt(sumSq/n)) > 1e-9 {
		t.Errorf("summary %+v; want min %g max %g mean %g rms %g", s, lo, hi, sum/n, math.Sqrt(sumSq/n))
	}
}

func TestDumpJSONWithoutOutput(t *testing.T) {
	path := testutil.Path(t, "fixtures", "ggml", "Q8_0.gguf")
	var o, e bytes.Buffer
	if code := run(context.Background(), cli.Test(&o, &e), []string{"dump", path, "q", "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	var s convert.DumpSummary
	if err := json.Unmarshal(o.Bytes(), &s); err != nil {
		t.Fatalf("%v: %s", err, o.String())
	}
	if s.Type != "Q8_0" || s.Elements != 512*48 || s.BytesWritten != 0 || s.Min == nil || s.NaNs != 0 {
		t.Errorf("summary %+v", s)
	}
}

func TestDumpErrors(t *testing.T) {
	tmp := t.TempDir()
	// A type with no dequantizer: Q8_1 (ggml has no to_float for it).
	src := filepath.Join(tmp, "q81.gguf")
	fw, err := gguf.Create(src, nil, []gguf.TensorSpec{{Name: "t", Type: quant.Q8_1, Dims: []int64{32, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteTensor("t", make([]byte, 72)); err != nil {
		t.Fatal(err)
	}
	if err := fw.Commit(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out.f32")
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"dump", src, "t", "-o", out}, []string{src, `"t"`, "Q8_1", "cannot dequantize"}},
		{[]string{"dump", src, "nope", "-o", out}, []string{src, `"nope"`, "does not exist"}},
		{[]string{"dump", filepath.Join(tmp, "missing.gguf"), "t"}, []string{"missing.gguf"}},
	}
	for _, c := range cases {
		var o, e bytes.Buffer
		code := run(context.Background(), cli.Test(&o, &e), c.args)
		if code == 0 {
			t.Errorf("%v: exit 0", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(e.String(), w) {
				t.Errorf("%v: error %q lacks %q", c.args, e.String(), w)
			}
		}
		if o.Len() != 0 {
			t.Errorf("%v: wrote %d bytes to stdout", c.args, o.Len())
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed dump left %s behind", out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, ".out.f32*")); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
}

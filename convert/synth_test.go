package convert

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

func TestSynth(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		typ      quant.Type
		ff       int
		downType quant.Type
	}{
		{quant.IQ3_S, 512, quant.IQ3_S},
		{quant.IQ3_S, 320, quant.IQ4_NL}, // 320 is not a multiple of 256: llama.cpp's fallback
		{quant.IQ4_NL, 96, quant.IQ4_NL},
		{quant.Q8_0, 96, quant.Q8_0},
		{quant.BF16, 96, quant.BF16},
	} {
		out := filepath.Join(dir, c.typ.String()+strconv.Itoa(c.ff)+".gguf")
		cfg := SynthConfig{Out: out, Arch: "qwen3moe", Layers: 2, Experts: 8, Embd: 256, FF: c.ff, Type: c.typ, DenseType: quant.BF16, Seed: 3, Jobs: 2}
		res, err := Synth(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		m, err := f.MoE()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Layers) != 2 || m.Experts != 8 || m.Embd != 256 || m.ExpertFF != int64(c.ff) || m.ExpertsUsed != 8 {
			t.Fatalf("%s: MoE %+v", c.typ, m)
		}
		if m.Layers[1].Gate.Type != c.typ || m.Layers[1].Down.Type != c.downType {
			t.Fatalf("%s: gate %s down %s", c.typ, m.Layers[1].Gate.Type, m.Layers[1].Down.Type)
		}
		toks, _ := f.Strings("tokenizer.ggml.tokens")
		if len(toks) != res.Vocab || toks[3+'a'] != "a" || toks[3+' '] != "Ġ" {
			t.Fatalf("tokens: %d, %q %q", len(toks), toks[3+'a'], toks[3+' '])
		}
		if emb, _ := f.Tensor("token_embd.weight"); emb.Dims[1] != int64(len(toks)) {
			t.Fatal("token_embd does not cover the vocabulary")
		}
		// Every expert decodes to finite values with about the intended spread.
		for _, tt := range []*gguf.TensorInfo{m.Layers[0].Gate, m.Layers[1].Down} {
			b, _ := f.ReadTensor(tt)
			x := make([]float32, tt.Elements())
			if err := quant.Dequantize(tt.Type, b, x); err != nil {
				t.Fatal(err)
			}
			var ss float64
			for _, v := range x {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s: non-finite value", tt.Name)
				}
				ss += float64(v) * float64(v)
			}
			rms, want := math.Sqrt(ss/float64(len(x))), 1/math.Sqrt(float64(tt.Dims[0]))
			if rms < want/2 || rms > want*2 {
				t.Fatalf("%s (%s): rms %v, want about %v", tt.Name, tt.Type, rms, want)
			}
		}
		f.Close()
		if c.typ == quant.IQ3_S && c.ff == 512 {
			// Same seed, any -j: same bytes; another seed: other bytes.
			again := filepath.Join(dir, "again.gguf")
			cfg.Out, cfg.Jobs = again, 1
			if _, err := Synth(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readAll(t, out), readAll(t, again)) {
				t.Fatal("synth -j 1 and -j 2 differ")
			}
			cfg.Seed = 4
			os.Remove(again)
			Synth(context.Background(), cfg)
			if bytes.Equal(readAll(t, out), readAll(t, again)) {
				t.Fatal("the seed changes nothing")
			}
		}
	}
	if _, err := Synth(context.Background(), SynthConfig{Out: filepath.Join(dir, "x.gguf"), Arch: "llama", Layers: 1, Experts: 2, Embd: 64, FF: 64, Type: quant.Q8_0}); err == nil {
		t.Fatal("unknown architecture accepted")
	}
	if _, err := Synth(context.Background(), SynthConfig{Out: filepath.Join(dir, "x.gguf"), Arch: "qwen3moe", Layers: 1, Experts: 2, Embd: 64, FF: 64, Type: quant.Q4_K}); err == nil {
		t.Fatal("a type synth cannot make was accepted")
	}
}

// TestFieldShapePackDeterministic packs a synthetic model with the field
// model's expert shape (n_embd 2560, n_ff_exp 640, IQ3_S experts; the down
// rows fall back to IQ4_NL as in llama.cpp) at -j 1 and -j 2. One layer of
// 64 experts keeps the suite's time in bounds; STRATA_FIELD_LAYERS=4 runs
// the 4 × 64 of the brief.
func TestFieldShapePackDeterministic(t *testing.T) {
	layers := 1
	if s := os.Getenv("STRATA_FIELD_LAYERS"); s != "" {
		layers, _ = strconv.Atoi(s)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "field.gguf")
	if _, err := Synth(context.Background(), SynthConfig{Out: in, Arch: "qwen3moe", Layers: layers, Experts: 64, Embd: 2560, FF: 640, Type: quant.IQ3_S, DenseType: quant.Q8_0, Seed: 1, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	var packs []string
	for _, j := range []int{1, 2} {
		out := filepath.Join(dir, "pack"+strconv.Itoa(j))
		man, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: in, OutDir: out, Jobs: j})
		if err != nil {
			t.Fatal(err)
		}
		// The worked size of docs/FORMATS.md.
		if man.Model.SlotBytes != 1392640 || man.Model.PayloadBytes != 1382400 {
			t.Fatalf("slot %d payload %d", man.Model.SlotBytes, man.Model.PayloadBytes)
		}
		packs = append(packs, out)
	}
	for _, name := range []string{strata.ExpertsFile, strata.ModelFile, strata.KeepFile} {
		if !bytes.Equal(readAll(t, filepath.Join(packs[0], name)), readAll(t, filepath.Join(packs[1], name))) {
			t.Fatalf("%s differs between -j 1 and -j 2", name)
		}
	}
}

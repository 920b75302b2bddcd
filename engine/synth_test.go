package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// TestSyntheticPackQwen35 writes a tiny synthetic qwen35moe pack as bench
// decode does, checks its dense tensors are convert's synth layout (less
// the routed experts, plus the router copies), and decodes it all-resident
// and through a quarter-size arena: same logits bit for bit, all finite.
func TestSyntheticPackQwen35(t *testing.T) {
	sp := SynthSpec{Arch: "qwen35moe", Layers: 4, Embd: 256, Experts: 8, ExpertsUsed: 2, ExpertFF: 64, Vocab: 300,
		DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 3}
	dir := filepath.Join(t.TempDir(), "pack")
	if err := WriteSyntheticPack(dir, sp); err != nil {
		t.Fatal(err)
	}

	checkSynthLayout(t, sp, dir)

	open := func(arenaMB float64) *Model {
		m, err := Open(dir, Options{Threads: 2, Stream: StreamOptions{ArenaMB: arenaMB}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	decode := func(m *Model) []float32 {
		s := m.NewSession()
		var all []float32
		ids := []int32{5, 17, 42}
		for step := 0; step < 6; step++ {
			logits, err := s.Forward(ids, false)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, logits...)
			ids = []int32{int32(slices.Index(logits, slices.Max(logits)))}
		}
		return all
	}
	m := open(0)
	attn := 0
	for i := range m.Layers {
		if m.Layers[i].Delta == nil {
			attn++
		}
	}
	if m.Config.Arch != "qwen35moe" || len(m.Layers) != 4 || attn != 1 {
		t.Fatalf("opened as %s with %d layers, %d of attention; want qwen35moe, 4, 1", m.Config.Arch, len(m.Layers), attn)
	}
	slot := float64(m.Stream().SlotBytes()) / (1 << 20)
	resident := decode(m)
	m.Close()
	for i, v := range resident {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d is %v", i, v)
		}
	}
	m = open(slot * float64(sp.Layers*sp.Experts/4))
	defer m.Close()
	ps := m.Stream()
	before := ps.Counters()
	streamed := decode(m)
	if rep := ps.Report(before, ps.Counters(), 6); rep.ArenaSlots >= rep.TotalSlots || rep.Counters.Misses == 0 {
		t.Fatalf("quarter arena: %d of %d slots, %d misses", rep.ArenaSlots, rep.TotalSlots, rep.Counters.Misses)
	}
	if !slices.Equal(resident, streamed) {
		t.Fatal("logits through a quarter arena differ from all-resident")
	}
}

// checkSynthLayout checks that the synthetic pack dir of spec sp holds
// convert's synth layout of the same shape: the same dense tensors (names,
// types, shapes; less the routed experts, plus the router copies, the
// vocabulary the spec's) and the same hyperparameter keys and values (less
// context_length, which the packs set to 4096).
func checkSynthLayout(t *testing.T, sp SynthSpec, dir string) {
	t.Helper()
	ref := filepath.Join(t.TempDir(), "ref.gguf")
	if _, err := convert.Synth(context.Background(), convert.SynthConfig{Out: ref, Arch: sp.Arch, Layers: sp.Layers,
		Experts: sp.Experts, ExpertsUsed: sp.ExpertsUsed, Embd: sp.Embd, FF: sp.ExpertFF, Type: sp.ExpertType,
		DenseType: sp.DenseType, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	layout := func(path string, skip func(string) bool) (tensors, keys []string) {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, ti := range f.Tensors {
			// Vocabulary sizes differ (the pack's is the spec's).
			if !skip(ti.Name) && !strings.HasPrefix(ti.Name, "token_embd.") && !strings.HasPrefix(ti.Name, "output.") {
				tensors = append(tensors, fmt.Sprint(ti.Name, " ", ti.Type, " ", ti.Dims))
			}
		}
		for _, kv := range f.KV {
			if strings.HasPrefix(kv.Key, sp.Arch+".") && kv.Key != sp.Arch+".context_length" {
				keys = append(keys, fmt.Sprint(kv.Key, "=", kv.Value.Any()))
			}
		}
		slices.Sort(tensors)
		return tensors, keys
	}
	copies := map[string]bool{}
	for l := range sp.Layers {
		copies[strata.RouterCopyName(l)] = true
	}
	gotT, gotK := layout(filepath.Join(dir, strata.ModelFile), func(n string) bool { return copies[n] })
	wantT, wantK := layout(ref, func(n string) bool { return strings.HasSuffix(n, "_exps.weight") })
	if len(gotT) == 0 || !slices.Equal(gotT, wantT) {
		t.Errorf("%s: dense tensors differ from convert's synth layout:\npack %v\nsynth %v", sp.Arch, gotT, wantT)
	}
	if len(gotK) == 0 || !slices.Equal(gotK, wantK) {
		t.Errorf("%s: hyperparameters differ from convert's synth:\npack %v\nsynth %v", sp.Arch, gotK, wantK)
	}
}

// TestSyntheticPackQwen3Layout: bench decode's default synthetic pack
// (qwen3moe) is synth's layout too, and decodes to finite logits.
func TestSyntheticPackQwen3Layout(t *testing.T) {
	// synth's qwen3moe attention for n_embd 256: 4 heads of 64, 1 KV head.
	sp := SynthSpec{Layers: 2, Embd: 256, Heads: 4, HeadsKV: 1, HeadDim: 64, Experts: 8, ExpertsUsed: 2, ExpertFF: 64, Vocab: 300,
		DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 3}
	dir := filepath.Join(t.TempDir(), "pack")
	if err := WriteSyntheticPack(dir, sp); err != nil {
		t.Fatal(err)
	}
	sp.Arch = "qwen3moe"
	checkSynthLayout(t, sp, dir)
	m, err := Open(dir, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	logits, err := m.NewSession().Forward([]int32{5, 17, 42}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d is %v", i, v)
		}
	}
}

// TestRandomWeightsCentred: the synthetic blocks' values have mean zero and
// about the spread asked for, in every type made from raw codes (uniform
// codes are not centred: Q2_0's -1..2 average half a step, which gave each
// synthetic matrix a rank-one part that grew through the layers). The
// bound on the mean is 5 standard errors of the mean of n values.
func TestRandomWeightsCentred(t *testing.T) {
	const cols, rows, sigma = 2560, 64, 0.02
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q2_0, quant.IQ4_NL, quant.Q4_0} {
		b, err := randomWeights(rand.New(rand.NewPCG(1, 2)), typ, cols, rows, sigma)
		if err != nil {
			t.Fatal(err)
		}
		y := make([]float32, cols*rows)
		if err := quant.Dequantize(typ, b, y); err != nil {
			t.Fatal(err)
		}
		var sum, sq float64
		for _, v := range y {
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		n := float64(len(y))
		mean := sum / n
		sd := math.Sqrt(sq/n - mean*mean)
		if math.Abs(mean) > 5*sd/math.Sqrt(n) || math.Abs(sd-sigma) > 0.1*sigma {
			t.Errorf("%s: mean %.3g, sd %.3g of %d values; want mean 0 (within %.3g), sd %g within 10%%", typ, mean, sd, len(y), 5*sd/math.Sqrt(n), sigma)
		}
	}
}

// TestSampledBlocks: the synthetic weights of the types without their own
// generator (the K-quants here) decode, block by block, to finite values
// whose RMS is within a factor 2 of the spread asked, and the pool is the
// same bytes however often it is drawn.
func TestSampledBlocks(t *testing.T) {
	for _, typ := range []quant.Type{quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		const sigma = 0.02
		sampledPools.Delete(sampledKey{typ, sigma})
		rng := rand.New(rand.NewPCG(1, 2))
		b, err := randomWeights(rng, typ, 512, 8, sigma)
		if err != nil {
			t.Fatal(err)
		}
		w := make([]float32, 256)
		for o := 0; o < len(b); o += len(b) / 16 {
			if err := quant.Dequantize(typ, b[o:o+len(b)/16], w); err != nil {
				t.Fatal(err)
			}
			var ss float64
			for _, v := range w {
				ss += float64(v) * float64(v)
			}
			if rms := math.Sqrt(ss / 256); !(rms >= sigma/2 && rms <= 2*sigma) {
				t.Fatalf("%s block at %d: RMS %g, asked %g", typ, o, rms, sigma)
			}
		}
		p0, err := sampledBlocks(typ, sigma)
		if err != nil {
			t.Fatal(err)
		}
		sampledPools.Delete(sampledKey{typ, sigma})
		p1, err := sampledBlocks(typ, sigma)
		if err != nil {
			t.Fatal(err)
		}
		if len(p0) != 256 || !slices.EqualFunc(p0, p1, bytes.Equal) {
			t.Fatalf("%s: pools of %d and %d blocks, not the same bytes", typ, len(p0), len(p1))
		}
	}
}

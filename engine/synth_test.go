package engine

import (
	"context"
	"fmt"
	"math"
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

	// The layout against convert's synth of the same shape.
	ref := filepath.Join(t.TempDir(), "ref.gguf")
	if _, err := convert.Synth(context.Background(), convert.SynthConfig{Out: ref, Arch: sp.Arch, Layers: sp.Layers,
		Experts: sp.Experts, ExpertsUsed: sp.ExpertsUsed, Embd: sp.Embd, FF: sp.ExpertFF, Type: sp.ExpertType,
		DenseType: sp.DenseType, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	shapes := func(path string, skip func(string) bool) []string {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []string
		for _, ti := range f.Tensors {
			if !skip(ti.Name) {
				out = append(out, fmt.Sprint(ti.Name, " ", ti.Type, " ", ti.Dims))
			}
		}
		slices.Sort(out)
		return out
	}
	copies := map[string]bool{}
	for l := range sp.Layers {
		copies[strata.RouterCopyName(l)] = true
	}
	got := shapes(filepath.Join(dir, strata.ModelFile), func(n string) bool { return copies[n] })
	want := shapes(ref, func(n string) bool { return strings.HasSuffix(n, "_exps.weight") })
	// Vocabulary sizes differ (the pack's is the spec's): compare the rest.
	notVocab := func(s []string) []string {
		return slices.DeleteFunc(s, func(x string) bool {
			return strings.HasPrefix(x, "token_embd.") || strings.HasPrefix(x, "output.")
		})
	}
	if g, w := notVocab(got), notVocab(want); len(g) == 0 || !slices.Equal(g, w) {
		t.Fatalf("dense tensors differ from convert's synth layout:\npack %v\nsynth %v", g, w)
	}

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

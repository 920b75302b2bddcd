package engine

import (
	"math"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestFastDecodeThreadsSynthetic: fast-mode decode steps of a pack with the
// field model's types (Q2_0 experts, Q8_0 dense: the multi-row kernels,
// rows with and without a partial last group) give the same logits bits at
// 1, 2 and 3 threads, and the bits of batched prefill (MatMulQ8).
func TestFastDecodeThreadsSynthetic(t *testing.T) {
	dir := t.TempDir()
	sp := SynthSpec{Layers: 2, Embd: 576, Heads: 4, HeadsKV: 2, HeadDim: 64, Experts: 8, ExpertsUsed: 3,
		ExpertFF: 320, Vocab: 512, DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 9}
	if err := WriteSyntheticPack(dir, sp); err != nil {
		t.Fatal(err)
	}
	ids := []int32{5, 77, 300, 12, 499, 1, 250, 64}
	var want [][]float32
	for _, threads := range []int{1, 2, 3} {
		m, err := Open(dir, Options{Mode: Fast, Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		s := m.NewSession()
		for i, id := range ids {
			logits, err := s.Forward([]int32{id}, false)
			if err != nil {
				t.Fatal(err)
			}
			if threads == 1 {
				want = append(want, append([]float32(nil), logits...))
				continue
			}
			for j := range logits {
				if math.Float32bits(logits[j]) != math.Float32bits(want[i][j]) {
					t.Fatalf("%d threads, step %d logit %d: %g, 1 thread %g", threads, i, j, logits[j], want[i][j])
				}
			}
		}
		if threads == 3 {
			prefillEqualsDecode(t, m, ids)
		}
		m.Close()
	}
}

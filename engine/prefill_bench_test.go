package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// BenchmarkPrefillSynthetic is a 512-token prefill of a 2-layer synthetic
// pack with bench prefill's shapes (n_embd 2560, 64 experts of 640, 8 used,
// Q2_0 experts, Q8_0 dense), every expert resident, in fast mode, on 1 and
// 2 threads (go test -bench PrefillSynthetic -cpuprofile for where it goes).
func BenchmarkPrefillSynthetic(b *testing.B) {
	dir := b.TempDir()
	sp := SynthSpec{Layers: 2, Embd: 2560, Heads: 32, HeadsKV: 4, HeadDim: 128, Experts: 64, ExpertsUsed: 8,
		ExpertFF: 640, Vocab: 8192, DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 1}
	if err := WriteSyntheticPack(dir, sp); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 3))
	prompt := make([]int32, 512)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(sp.Vocab))
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("j%d", threads), func(b *testing.B) {
			m, err := Open(dir, Options{Mode: Fast, Threads: threads})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			s := m.NewSession()
			s.MaxBatch = len(prompt)
			for i := 0; i < b.N; i++ {
				s.Reset()
				if _, err := s.Forward(prompt, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package engine

import (
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// BenchmarkReadAheadGuess is read-ahead's guess of one layer of a
// synthetic pack of the field width (2560, 64 experts, top-8) for one
// token, from one, two or three kinds of input (raGuess: one product over
// their rows).
func BenchmarkReadAheadGuess(b *testing.B) {
	dir := b.TempDir()
	sp := SynthSpec{Layers: 2, Embd: 2560, Heads: 32, HeadsKV: 4, HeadDim: 128, Experts: 64, ExpertsUsed: 8,
		ExpertFF: 640, Vocab: 8192, DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 1}
	if err := WriteSyntheticPack(dir, sp); err != nil {
		b.Fatal(err)
	}
	m0, err := Open(dir, Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	sb := float64(m0.Stream().SlotBytes()) / (1 << 20)
	m0.Close()
	m, err := Open(dir, Options{Threads: 1, Stream: StreamOptions{ArenaMB: sb * 32}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	x := make([]float32, sp.Embd)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	var sc [raKinds]raScore
	for kinds := 1; kinds <= raKinds; kinds++ {
		b.Run([]string{"", "one", "two", "three"}[kinds], func(b *testing.B) {
			var xs [raKinds][]float32
			for k := 0; k < kinds; k++ {
				xs[k] = x
			}
			for i := 0; i < b.N; i++ {
				s.sc.reset()
				s.raGuess(1, 1, xs, [raKinds]*raScore{&sc[0], &sc[1], &sc[2]})
			}
		})
	}
}

package engine

import (
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// BenchmarkDecodeTiny is one decode step of the tiny model (go test -bench).
func BenchmarkDecodeTiny(b *testing.B) {
	for _, name := range []string{"model-bf16.gguf", "model-iq3s.gguf"} {
		b.Run(name, func(b *testing.B) {
			m, err := Open(testutil.TinyModel(b, name), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			s := m.NewSession()
			if _, err := s.Forward([]int32{726, 2611, 10}, false); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if s.Pos >= 64 {
					s.Reset()
				}
				if _, err := s.Forward([]int32{int32(100 + i%50)}, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeSynthetic is a decode step of a small synthetic pack with
// the field model's expert shape (2560 x 640, Q2_0), every expert resident,
// in exact and fast mode: Session.Step, as Generate decodes; with the
// steps' time in the weight products and in the rest (StepTimes) per token.
func BenchmarkDecodeSynthetic(b *testing.B) {
	dir := b.TempDir()
	sp := SynthSpec{Layers: 2, Embd: 2560, Heads: 32, HeadsKV: 4, HeadDim: 128, Experts: 16, ExpertsUsed: 8,
		ExpertFF: 640, Vocab: 8192, DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 1}
	if err := WriteSyntheticPack(dir, sp); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []Mode{Exact, Fast} {
		b.Run(mode.String(), func(b *testing.B) {
			m, err := Open(dir, Options{Mode: mode})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			s := m.NewSession()
			if _, err := s.Forward([]int32{1, 2, 3}, false); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(m.DenseBytesPerToken() + int64(sp.Layers*sp.ExpertsUsed)*m.Stream().PayloadBytes())
			s.Reserve(64)
			st := new(StepTimes)
			s.Timing = st
			timeTokens(b, 1, func(i int) {
				if s.Pos >= 64 {
					s.Reset()
				}
				if _, err := s.Step(int32(100 + i%50)); err != nil {
					b.Fatal(err)
				}
			})
			var prod, rest int64
			for p := Phase(0); p < NumPhases; p++ {
				if p.Products() {
					prod += st.Nanos[p]
				} else {
					rest += st.Nanos[p]
				}
			}
			if st.Steps > 0 {
				b.ReportMetric(float64(prod)/1e6/float64(st.Steps), "products-ms/tok")
				b.ReportMetric(float64(rest)/1e6/float64(st.Steps), "rest-ms/tok")
				for p := Phase(0); p < NumPhases; p++ {
					if st.Nanos[p] > 0 {
						b.ReportMetric(float64(st.Nanos[p])/1e6/float64(st.Steps), strings.ReplaceAll(p.String(), " ", "-")+"-ms/tok")
					}
				}
			}
		})
	}
}

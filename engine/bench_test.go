package engine

import (
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
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

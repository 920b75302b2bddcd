package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// BenchmarkDequantize decodes 64 Ki weights per call (output stays in
// cache) of every type with the portable path; kernels has the vector paths
// and the memory-sized runs, and `stratactl bench quant` the full report.
func BenchmarkDequantize(b *testing.B) {
	for _, t := range dequantTypes {
		b.Run(t.String(), func(b *testing.B) {
			ti, _ := quant.Info(t)
			n := 64 << 10
			src := make([]byte, n/ti.BlockElements*ti.BlockBytes)
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range src {
				// Bytes below 0x40 keep every fp16 scale ordinary (no NaN,
				// infinity or huge values that slow the FPU).
				src[i] = byte(rng.Uint32()) & 0x3f
			}
			dst := make([]float32, n)
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				if err := quant.Dequantize(t, src, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mweights/s")
		})
	}
}

package kernels

import (
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// benchWeights is the output size of one benchmark call: 16 Mi weights
// (64 MiB of float32), as in ggml's timing anchors, so the figures include
// the cost of writing to memory rather than to cache.
const benchWeights = 16 << 20

func benchDequant(b *testing.B, t quant.Type, vector bool) {
	ti, _ := quant.Info(t)
	n := benchWeights / ti.BlockElements * ti.BlockElements
	src, err := SampleBlocks(t, n/ti.BlockElements, 7)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, n)
	decode := quant.Dequantize
	if vector {
		if !HasVectorDequantize(t) {
			b.Skip("no vector path for " + t.String() + " on this CPU")
		}
		decode = Dequantize
	}
	b.SetBytes(int64(4 * n))
	b.ResetTimer()
	for b.Loop() {
		if err := decode(t, src, dst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mweights/s")
}

func BenchmarkDequantize(b *testing.B) {
	for _, t := range []quant.Type{quant.Q8_0, quant.IQ4_NL, quant.IQ3_S, quant.Q2_0} {
		b.Run(t.String()+"/generic", func(b *testing.B) { benchDequant(b, t, false) })
		b.Run(t.String()+"/avx2", func(b *testing.B) { benchDequant(b, t, true) })
	}
}

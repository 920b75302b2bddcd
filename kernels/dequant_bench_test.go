package kernels

import (
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// Two output sizes per call: 16 Mi weights (64 MiB of float32, as in ggml's
// timing anchors, so memory bandwidth is included) and 64 Ki weights
// (256 KiB, which stays in cache and shows the decoding cost alone).
var benchSizes = []struct {
	name    string
	weights int
}{{"mem", 16 << 20}, {"cache", 64 << 10}}

func benchDequant(b *testing.B, t quant.Type, weights int, vector bool) {
	ti, _ := quant.Info(t)
	n := weights / ti.BlockElements * ti.BlockElements
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
	for _, t := range vectorTypes {
		for _, size := range benchSizes {
			b.Run(t.String()+"/"+size.name+"/generic", func(b *testing.B) { benchDequant(b, t, size.weights, false) })
			b.Run(t.String()+"/"+size.name+"/avx2", func(b *testing.B) { benchDequant(b, t, size.weights, true) })
		}
	}
}

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// BenchmarkDot: one row of 2560 weights against float32 activations, fused
// kernel vs decoding the row first. Bytes are the weight bytes read.
func BenchmarkDot(b *testing.B) {
	const n = 2560
	rng := rand.New(rand.NewPCG(9, 9))
	for _, typ := range []quant.Type{quant.F32, quant.BF16, quant.Q8_0, quant.IQ4_NL, quant.IQ3_S, quant.Q2_0} {
		ti, _ := quant.Info(typ)
		row, err := SampleBlocks(typ, n/ti.BlockElements, 3)
		if err != nil {
			b.Fatal(err)
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		scratch := make([]float32, n)
		for _, mode := range []string{"dot", "decode+dot"} {
			b.Run(fmt.Sprintf("%s/%s", typ, mode), func(b *testing.B) {
				b.SetBytes(int64(len(row)))
				for i := 0; i < b.N; i++ {
					if mode == "dot" {
						Dot(typ, row, x, scratch)
					} else {
						DecodeRow(typ, row, scratch)
						DotF32(scratch, x)
					}
				}
			})
		}
	}
}

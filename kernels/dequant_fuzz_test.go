package kernels

import (
	"math"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// FuzzVectorMatchesPortable: for any whole-block input, the vector path and
// quant's portable path give identical bits.
// go test ./kernels -run '^$' -fuzz FuzzVectorMatchesPortable -fuzztime 1m
func FuzzVectorMatchesPortable(f *testing.F) {
	for i, t := range vectorTypes {
		ti, _ := quant.Info(t)
		seed := make([]byte, 3*ti.BlockBytes)
		for j := range seed {
			seed[j] = byte(j*31 + i)
		}
		f.Add(uint8(i), seed)
	}
	f.Fuzz(func(t *testing.T, which uint8, src []byte) {
		typ := vectorTypes[int(which)%len(vectorTypes)]
		ti, _ := quant.Info(typ)
		blocks := len(src) / ti.BlockBytes
		src = src[:blocks*ti.BlockBytes]
		want := make([]float32, blocks*ti.BlockElements)
		got := make([]float32, len(want))
		if err := quant.Dequantize(typ, src, want); err != nil {
			t.Fatal(err)
		}
		if err := Dequantize(typ, src, got); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s element %d: vector %#08x, portable %#08x", typ, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	})
}

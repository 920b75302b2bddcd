package optq

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/kernels"
)

// TestDotManyIsDotF32: every out[t] of dotMany (this CPU's path) is
// kernels.DotF32 of row t and a, bit for bit, over lengths with and
// without a tail and row counts around the four-row blocks, with a guard
// after out.
func TestDotManyIsDotF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, L := range []int{1, 31, 32, 33, 64, 95, 640, 2560, 2561} {
		for _, m := range []int{1, 3, 4, 5, 8, 11} {
			stride := L + rng.IntN(3)*8
			a := randMatrix(rng, L, 1)
			b := randMatrix(rng, (m-1)*stride+L, 1)
			all := make([]float32, m+1)
			all[m] = math.Float32frombits(0x7fc0dead)
			out := all[:m]
			dotMany(out, a, b, stride)
			for i := range out {
				want := kernels.DotF32(b[i*stride:i*stride+L], a)
				if math.Float32bits(out[i]) != math.Float32bits(want) {
					t.Fatalf("L %d m %d row %d: %v, DotF32 %v", L, m, i, out[i], want)
				}
			}
			if math.Float32bits(all[m]) != 0x7fc0dead {
				t.Fatalf("L %d m %d: guard overwritten", L, m)
			}
		}
	}
}

// BenchmarkDotMany: 32 tokens' dot products with one row of 2560 and of
// 640, by dotMany and by kernels.DotF32 one at a time.
func BenchmarkDotMany(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, L := range []int{640, 2560} {
		a, x := randMatrix(rng, L, 1), randMatrix(rng, 32*L, 1)
		out := make([]float32, 32)
		b.Run("many", func(b *testing.B) {
			for b.Loop() {
				dotMany(out, a, x, L)
			}
		})
		b.Run("one", func(b *testing.B) {
			for b.Loop() {
				dotManyGo(out, a, x, L)
			}
		})
	}
}

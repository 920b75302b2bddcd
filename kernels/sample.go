package kernels

import (
	"math"
	"math/rand/v2"

	"github.com/stratactl/stratactl/quant"
)

// SampleBlocks returns n blocks of type t (n*BlockBytes bytes) filled from a
// seeded generator, for benchmarks. Raw random bytes would put NaN, infinity
// and extreme scales into some blocks, and those take slow paths in the FPU
// that real weights never hit, so a block is redrawn until every weight it
// decodes to is zero or finite with magnitude in [2^-100, 2^20]. Beyond 64
// distinct blocks the pattern repeats (decoding speed does not depend on the
// values, only on their being ordinary numbers).
func SampleBlocks(t quant.Type, n int, seed uint64) ([]byte, error) {
	ti, ok := quant.Info(t)
	if !ok {
		return nil, fmtTypeError(t)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const distinct = 64
	k := min(n, distinct)
	out := make([]byte, n*ti.BlockBytes)
	w := make([]float32, ti.BlockElements)
	for i := 0; i < k; i++ {
		b := out[i*ti.BlockBytes : (i+1)*ti.BlockBytes]
		for try := 0; ; try++ {
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			if err := quant.Dequantize(t, b, w); err != nil {
				return nil, err
			}
			if ordinary(w) || try == 1000 {
				break
			}
		}
	}
	for i := k; i < n; i++ {
		copy(out[i*ti.BlockBytes:(i+1)*ti.BlockBytes], out[(i%k)*ti.BlockBytes:])
	}
	return out, nil
}

func ordinary(w []float32) bool {
	for _, v := range w {
		a := math.Abs(float64(v))
		if v != 0 && !(a >= 0x1p-100 && a <= 0x1p20) {
			return false
		}
	}
	return true
}

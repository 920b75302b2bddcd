package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestHalvesDecodersMatchPortable: every kernel set's q8decodeHalves
// decoder of an IQ type (IQ2_XS, IQ2_S, IQ1_M) writes exactly halvesSub's
// weights, half multipliers and factors for the groups asked, and nothing
// past them, on raw random blocks (NaN, infinite and subnormal scales among
// them) between guard bands.
func TestHalvesDecodersMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	const groups = 20
	ran := map[quant.Type]bool{}
	for _, typ := range []quant.Type{quant.IQ2_XS, quant.IQ2_S, quant.IQ1_M} {
		row := guardedBytes(randomBlocks(rng, typ, groups), rng.IntN(8))
		for _, s := range testSets() {
			dec := s.k.q8decodeHalves[typ]
			if dec == nil {
				continue
			}
			ran[typ] = true
			for g0 := 0; g0 < groups; g0 += 3 {
				for ng := 1; ng <= min(decodedGroups, groups-g0); ng++ {
					var got q8Decoded
					for i := range got.w {
						got.w[i] = 0x55
					}
					for i := range got.mh {
						got.mh[i] = 0x7777
					}
					for i := range got.dw {
						got.dw[i] = 3
					}
					dec(row, g0, ng, &got)
					for i := 0; i < 8*decodedGroups; i++ {
						var w [32]int8
						var m0, m1 int32
						var dw float32
						if i < 8*ng {
							m0, m1, dw = halvesSub(typ, row, 8*g0+i, &w)
						} else {
							for j := range w {
								w[j] = 0x55
							}
						}
						if i >= 8*ng {
							m0, m1, dw = 0x7777, 0x7777, 3 // untouched
						}
						if [32]int8(got.w[32*i:32*i+32]) != w || int32(got.mh[2*i]) != m0 || int32(got.mh[2*i+1]) != m1 || !sameFloat(got.dw[i], dw) {
							t.Fatalf("%s groups %d+%d on %s: sub-block %d: w %v mh %d %d dw %g, want %v %d %d %g",
								typ, g0, ng, s.name, i, got.w[32*i:32*i+32], got.mh[2*i], got.mh[2*i+1], got.dw[i], w, m0, m1, dw)
						}
					}
				}
			}
		}
	}
	if hostCPU.avx512vnni && asmBuild {
		want := []quant.Type{quant.IQ2_XS, quant.IQ2_S}
		if hostCPU.bmi2 {
			want = append(want, quant.IQ1_M)
		}
		for _, typ := range want {
			if !ran[typ] {
				t.Errorf("%s: no kernel set has a vector decoder on this AVX-512 host", typ)
			}
		}
	}
}

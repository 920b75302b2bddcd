//go:build amd64 && !noasm

package kernels

import (
	"fmt"

	"github.com/stratactl/stratactl/quant"
)

// q8StreamWalks are the walks of the Q8_0 row kernels the benchmark and
// the tests try: 1, 2 and 4 streams, without prefetch and with PREFETCHT0
// or PREFETCHT2 at distances around the two-row Q2_0 kernel's.
func q8StreamWalks() []q8Streams {
	var ws []q8Streams
	for _, n := range []int{1, 2, 4} {
		ws = append(ws, q8Streams{n: n})
		for _, hint := range []int{1, 2} {
			for _, pf := range []int{1024, 2048, 4096, 8192} {
				ws = append(ws, q8Streams{n: n, pf: pf, hint: hint})
			}
		}
	}
	return ws
}

func (s q8Streams) String() string {
	if s.hint == 0 {
		return fmt.Sprintf("%drow", s.n)
	}
	return fmt.Sprintf("%drow-t%d-pf%d", s.n, map[int]int{1: 0, 2: 2}[s.hint], s.pf)
}

// q8StreamSets: the host set with each walk of q8StreamWalks as its Q8_0
// row kernel (none without AVX-512 VNNI).
func q8StreamSets() []namedSet {
	if !hostCPU.avx512vnni {
		return nil
	}
	var sets []namedSet
	for _, w := range q8StreamWalks() {
		k := host
		k.q8rows[quant.Q8_0] = func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
			return rowsQ8_0Streams(m, lo, hi, x, out, w)
		}
		sets = append(sets, namedSet{"host+" + w.String(), &k})
	}
	return sets
}

// rowsDRAMVariants: the dispatched set ("host"), the AVX2 set's path
// ("avx2", what a CPU without AVX-512 VNNI runs), and where the host has
// AVX-512 VNNI each walk of q8StreamWalks.
func rowsDRAMVariants() []rowsVariant {
	avx2 := hostCPU
	avx2.avx512vnni, avx2.avx512bf16, avx2.avx512gfni = false, false, false
	avx2Set := chooseKernels(avx2)
	vs := []rowsVariant{setVariant("host", &host), setVariant("avx2", &avx2Set)}
	for _, s := range q8StreamSets() {
		vs = append(vs, setVariant(s.name[len("host+"):], s.k))
	}
	return vs
}

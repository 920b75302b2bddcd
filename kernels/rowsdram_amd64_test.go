//go:build amd64 && !noasm

package kernels

import (
	"fmt"

	"github.com/stratactl/stratactl/quant"
)

// q8StreamWalks are the walks of the Q8_0 row kernels the benchmark and
// the tests try: the one-row kernel, and 2 and 4 streams without prefetch
// and with PREFETCHT0 or PREFETCHT2 at distances around the two-row Q2_0
// kernel's.
func q8StreamWalks() []q8Streams {
	ws := []q8Streams{{n: 1}}
	for _, n := range []int{2, 4} {
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

// q8AVX2Walks are the walks of the AVX2 two-row kernel they try.
func q8AVX2Walks() []q8Streams {
	ws := []q8Streams{{n: 2}}
	for _, hint := range []int{1, 2} {
		for _, pf := range []int{2048, 4096} {
			ws = append(ws, q8Streams{n: 2, pf: pf, hint: hint})
		}
	}
	return ws
}

// q8StreamSets: the host set with each walk of q8StreamWalks as its Q8_0
// row kernel (none without AVX-512 VNNI), and the AVX2 set (avx2Set) with
// each of q8AVX2Walks.
func q8StreamSets() []namedSet {
	var sets []namedSet
	if hostCPU.avx512vnni {
		for _, w := range q8StreamWalks() {
			k := host
			k.q8rows[quant.Q8_0] = func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
				return rowsQ8_0Streams(m, lo, hi, x, out, w)
			}
			sets = append(sets, namedSet{w.String(), &k})
		}
	}
	if hostCPU.avx2 && hostCPU.f16c {
		for _, w := range q8AVX2Walks() {
			k := avx2Set()
			k.q8rows[quant.Q8_0] = func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
				return rowsQ8_0AVX2(m, lo, hi, x, out, w)
			}
			sets = append(sets, namedSet{"avx2-" + w.String(), &k})
		}
	}
	return sets
}

// q2RowKernels are the Q2_0 row kernels (AVX-512 VNNI, VBMI, GFNI) the
// tests and benchmarks try: the AVX2 two-row kernel ("avx2-2row"), the
// AVX-512 one-row, two-row and four-row kernels ("4row"
// q2Rows4AVX512), the multi-row ones at
// prefetch distances around q2PrefetchDist (none without those
// extensions).
func q2RowKernels() []q2RowKernel {
	var ks []q2RowKernel
	if hostCPU.avx2 && hostCPU.f16c {
		ks = append(ks, q2RowKernel{"avx2-2row", rowsQ2_0AVX2})
	}
	if !hostCPU.avx512vnni {
		return ks
	}
	ks = append(ks, q2RowKernel{"1row", rowsQ2_0AVX512})
	if !hostCPU.avx512gfni {
		return ks
	}
	for _, pf := range []int{0, 1024, 2048, 3072, 4096, 6144} {
		ks = append(ks, q2RowKernel{fmt.Sprintf("2row-pf%d", pf), func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
			return rowsQ2_0PairsAt(m, lo, hi, x, out, pf)
		}})
	}
	for _, q := range []struct {
		name string
		k    q2Quad
	}{{"4row", q2Rows4AVX512}} {
		for _, pf := range []int{0, 1024, 2048, 3072, 4096, 6144} {
			ks = append(ks, q2RowKernel{fmt.Sprintf("%s-pf%d", q.name, pf), func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool {
				return rowsQ2_0QuadsAt(m, lo, hi, x, out, q.k, pf)
			}})
		}
	}
	return ks
}

// q2RowKernel is a named Q2_0 row kernel (a kernelSet.q8rows entry).
type q2RowKernel struct {
	name string
	f    func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool
}

// q2RowSets: the host set with each of q2RowKernels as its Q2_0 row kernel.
func q2RowSets() []namedSet {
	var sets []namedSet
	for _, rk := range q2RowKernels() {
		k := host
		k.q8rows[quant.Q2_0] = rk.f
		sets = append(sets, namedSet{"q2-" + rk.name, &k})
	}
	return sets
}

// avx2Set is the kernel set of the host without its AVX-512 parts.
func avx2Set() kernelSet {
	c := hostCPU
	c.avx512vnni, c.avx512bf16, c.avx512gfni, c.avx512vbmi = false, false, false, false
	return chooseKernels(c)
}

// rowsDRAMVariants: the dispatched set ("host"); for Q8_0 the AVX2 set's
// dispatch ("avx2", what a CPU without AVX-512 VNNI runs) and each walk of
// q8StreamSets; for Q2_0 the AVX2 set row by row ("avx2-dotq8") and each
// of q2RowKernels.
func rowsDRAMVariants(t quant.Type) []rowsVariant {
	vs := []rowsVariant{setVariant("host", &host)}
	switch t {
	case quant.Q8_0:
		a := avx2Set()
		vs = append(vs, setVariant("avx2", &a))
		for _, s := range q8StreamSets() {
			vs = append(vs, setVariant(s.name, s.k))
		}
	case quant.Q2_0:
		if hostCPU.avx2 && hostCPU.f16c {
			// The AVX2 set row by row (DotQ8), as before its row kernel.
			a := avx2Set()
			a.q8rows[quant.Q2_0] = nil
			vs = append(vs, setVariant("avx2-dotq8", &a))
		}
		for _, rk := range q2RowKernels() {
			vs = append(vs, rk.variant())
		}
	}
	return vs
}

// variant runs all of a matrix's rows by the kernel, which must take them.
func (rk q2RowKernel) variant() rowsVariant {
	return rowsVariant{rk.name, func(m *Matrix, x *Q8Row, out []float32) {
		if !rk.f(m, 0, m.Rows, x, out) {
			panic(rk.name + " refused a QuantizeQ8Row row")
		}
	}}
}

//go:build amd64 && !noasm

package optq

import "github.com/klauspost/cpuid/v2"

// dotManyAVX512 is dotManyGo's whole chunks: see linalg_amd64.s.
//
//go:noescape
func dotManyAVX512(a *float32, n int, b *float32, stride int, m int, out *float32)

func dotManyVector(out, a, b []float32, stride int) {
	L, m := len(a), len(out)
	if L < 32 || m == 0 {
		dotManyGo(out, a, b, stride)
		return
	}
	_ = b[(m-1)*stride+L-1]
	n := L &^ 31
	dotManyAVX512(&a[0], n, &b[0], stride*4, m, &out[0])
	for t := range out { // the tail, one element at a time after the fold
		row := b[t*stride : t*stride+L]
		r := out[t]
		for i := n; i < L; i++ {
			r += float32(row[i] * a[i])
		}
		out[t] = r
	}
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		dotMany = dotManyVector
	}
}

// prefetchGroupsAMD64 issues PREFETCHT0 for the four cache lines of 64
// float32 at p + r·stride bytes, r < rows.
//
//go:noescape
func prefetchGroupsAMD64(p *float32, stride, rows int)

func prefetchGroupsVector(p []float32, stride, rows int) {
	if rows <= 0 || len(p) < (rows-1)*stride+group {
		return
	}
	prefetchGroupsAMD64(&p[0], stride*4, rows)
}

func init() { prefetchGroups = prefetchGroupsVector }

// axpyTokensAVX512 is axpyTokensGo for len(o) a multiple of 64: o in
// chunks of 64 kept in four ZMM registers while every token's row adds to
// them (VMULPS then VADDPS, the tokens in order).
//
//go:noescape
func axpyTokensAVX512(o *float32, F int, a *float32, t *int32, na int, x *float32)

func axpyTokensVector(o, a []float32, t []int32, x []float32) {
	F := len(o)
	if F == 0 || F%64 != 0 || len(a) == 0 {
		axpyTokensGo(o, a, t, x)
		return
	}
	t = t[:len(a)]
	for _, tk := range t {
		_ = x[int(tk)*F+F-1]
	}
	axpyTokensAVX512(&o[0], F, &a[0], &t[0], len(a), &x[0])
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		axpyTokens = axpyTokensVector
	}
}

// transpose16AVX512 is transpose16Go in ZMM registers (the 16 rows
// loaded, unpacked and their 128-bit lanes shuffled; ds and ss in bytes).
//
//go:noescape
func transpose16AVX512(dst *float32, ds int, src *float32, ss int)

func transpose16Vector(dst []float32, ds int, src []float32, ss int) {
	_, _ = dst[15*ds+15], src[15*ss+15]
	transpose16AVX512(&dst[0], ds*4, &src[0], ss*4)
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		transpose16 = transpose16Vector
	}
}

// negLanes16AVX512 is negLanesGo at width 16: a ZMM load, the sign
// flipped (VXORPS), a store, per column.
//
//go:noescape
func negLanes16AVX512(dst *float32, src *float32)

func negLanesVector(dst []float32, width int, ne [][scoreLanes]float32, off int) {
	if width != 16 || off < 0 || off+16 > scoreLanes {
		negLanesGo(dst, width, ne, off)
		return
	}
	_, _ = dst[group*16-1], ne[group-1]
	negLanes16AVX512(&dst[0], &ne[0][off])
}

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.AVX512F) {
		negLanes = negLanesVector
	}
}

// Package kernels holds the hot loops (dequantize, dot products, the Q2_0
// scale search) with a portable Go path and vector paths picked at run time
// from the CPU's features. Every path gives the same bits.
package kernels

import "github.com/klauspost/cpuid/v2"

// Features are the CPU features the vector paths use, read once at start-up.
// Tests clear them to exercise the portable path.
var Features = struct {
	AVX2 bool // AVX2 and FMA3
	// NoAsm forces the portable Go path everywhere.
	NoAsm bool
}{
	AVX2: cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3),
}

// Describe names the paths in use, for benchmarks and manifests.
func Describe() string {
	switch {
	case Features.NoAsm:
		return "generic (forced)"
	case Features.AVX2:
		return "avx2+fma (" + cpuid.CPU.BrandName + ")"
	default:
		return "generic (" + cpuid.CPU.BrandName + ")"
	}
}

//go:build amd64 && !noasm

package kernels

import (
	"github.com/klauspost/cpuid/v2"
	"github.com/stratactl/stratactl/quant"
)

// The vector dequantizers convert the fp16 block scales with F16C, which
// every AVX2 CPU has, but the check costs nothing.
var hasF16C = cpuid.CPU.Supports(cpuid.F16C)

// iq3sGridAsm is quant's iq3s_grid, kept here so the assembly can index it.
var iq3sGridAsm = quant.IQ3SGrid()

// kvaluesIQ4NLAsm is the IQ4_NL codebook as the 16-byte VPSHUFB table.
var kvaluesIQ4NLAsm = quant.KvaluesIQ4NL

//go:noescape
func dequantQ8_0AVX2(src *byte, dst *float32, blocks int)

//go:noescape
func dequantIQ4NLAVX2(src *byte, dst *float32, blocks int, table *int8)

//go:noescape
func dequantQ2_0AVX2(src *byte, dst *float32, blocks int)

//go:noescape
func dequantIQ3SAVX2(src *byte, dst *float32, blocks int, grid *uint32)

// Features is read at every call, so tests can switch paths at run time.
func vectorDequantizer(t quant.Type) func(src []byte, dst []float32) {
	if !Features.AVX2 || Features.NoAsm || !hasF16C {
		return nil
	}
	switch t {
	case quant.Q8_0:
		return func(src []byte, dst []float32) { dequantQ8_0AVX2(&src[0], &dst[0], len(dst)/32) }
	case quant.IQ4_NL:
		return func(src []byte, dst []float32) {
			dequantIQ4NLAVX2(&src[0], &dst[0], len(dst)/32, &kvaluesIQ4NLAsm[0])
		}
	case quant.Q2_0:
		return func(src []byte, dst []float32) { dequantQ2_0AVX2(&src[0], &dst[0], len(dst)/64) }
	case quant.IQ3_S:
		return func(src []byte, dst []float32) {
			dequantIQ3SAVX2(&src[0], &dst[0], len(dst)/256, &iq3sGridAsm[0])
		}
	}
	return nil
}

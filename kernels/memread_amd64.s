//go:build amd64 && !noasm

#include "textflag.h"

// Load-only streaming loops: 256 bytes per iteration into four XOR
// accumulators, folded to one 64-bit word at the end.

// func xorReadAVX2(p *byte, n int) uint64
TEXT ·xorReadAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $8, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

xr2loop:
	VPXOR 0(SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	VPXOR 128(SI), Y0, Y0
	VPXOR 160(SI), Y1, Y1
	VPXOR 192(SI), Y2, Y2
	VPXOR 224(SI), Y3, Y3
	ADDQ $256, SI
	DECQ CX
	JNZ  xr2loop

	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

// func xorReadAVX512(p *byte, n int) uint64
TEXT ·xorReadAVX512(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $8, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

xr5loop:
	VPXORQ 0(SI), Z0, Z0
	VPXORQ 64(SI), Z1, Z1
	VPXORQ 128(SI), Z2, Z2
	VPXORQ 192(SI), Z3, Z3
	ADDQ $256, SI
	DECQ CX
	JNZ  xr5loop

	VPXORQ Z1, Z0, Z0
	VPXORQ Z3, Z2, Z2
	VPXORQ Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPXOR Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

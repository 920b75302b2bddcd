//go:build amd64 && !noasm

#include "textflag.h"

// DotBF16's kernels (qdot_bf16.go's order): each takes whole chunks of 128
// elements, 256 bytes of weights and 512 of activations (128 hi, then 128
// lo), into 64 float32 lanes held in 4 zmm or 8 ymm registers (lane 16a+j
// in zmm a, 8b+j in ymm b).

// func bf16dotAVX512(w *byte, x *uint16, chunks int, lanes *[64]float32)
// AVX-512 F and BF16. The Go assembler has no VDPBF16PS, so it is written
// as bytes: EVEX.512.F3.0F38.W0 52 /r, register forms only.
TEXT ·bf16dotAVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ chunks+16(FP), CX
	MOVQ lanes+24(FP), DX
	VMOVUPS 0(DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3

bf512loop:
	VMOVDQU32 0(SI), Z4
	VMOVDQU32 64(SI), Z5
	VMOVDQU32 128(SI), Z6
	VMOVDQU32 192(SI), Z7
	VMOVDQU32 0(DI), Z8
	VMOVDQU32 64(DI), Z9
	VMOVDQU32 128(DI), Z10
	VMOVDQU32 192(DI), Z11
	VMOVDQU32 256(DI), Z12
	VMOVDQU32 320(DI), Z13
	VMOVDQU32 384(DI), Z14
	VMOVDQU32 448(DI), Z15
	// VDPBF16PS Z8, Z4, Z0 (hi), then VDPBF16PS Z12, Z4, Z0 (lo); the same
	// for Z1..Z3.
	BYTE $0x62; BYTE $0xd2; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xc0
	BYTE $0x62; BYTE $0xd2; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xc9
	BYTE $0x62; BYTE $0xd2; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xd2
	BYTE $0x62; BYTE $0xd2; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xdb
	BYTE $0x62; BYTE $0xd2; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xc4
	BYTE $0x62; BYTE $0xd2; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xcd
	BYTE $0x62; BYTE $0xd2; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xd6
	BYTE $0x62; BYTE $0xd2; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xdf
	ADDQ $256, SI
	ADDQ $512, DI
	DECQ CX
	JNZ  bf512loop

	VMOVUPS Z0, 0(DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VZEROUPPER
	RET

// One ymm of the AVX2 kernel: 16 elements at offset off into lane block acc:
// against hi, then lo, each the odd elements (the upper halves of the
// dwords) first, then the even. Y10, Y8: the odd and even weights.
#define BF16STEP(off, acc) \
	VMOVDQU off(SI), Y8 \
	VPAND   Y15, Y8, Y10 \
	VPSLLD  $16, Y8, Y8 \
	VMOVDQU off(DI), Y9 \
	VPAND   Y15, Y9, Y11 \
	VMULPS  Y11, Y10, Y11 \
	VADDPS  Y11, acc, acc \
	VPSLLD  $16, Y9, Y9 \
	VMULPS  Y9, Y8, Y9 \
	VADDPS  Y9, acc, acc \
	VMOVDQU (off+256)(DI), Y9 \
	VPAND   Y15, Y9, Y11 \
	VMULPS  Y11, Y10, Y11 \
	VADDPS  Y11, acc, acc \
	VPSLLD  $16, Y9, Y9 \
	VMULPS  Y9, Y8, Y9 \
	VADDPS  Y9, acc, acc

// func bf16dotAVX2(w *byte, x *uint16, chunks int, lanes *[64]float32) int
// AVX2. Multiplies and adds under MXCSR with DAZ and FTZ set (the caller's
// MXCSR is restored); returns the overflow and underflow flags raised
// (0x18 bits), nonzero when a product was not exact and the lanes are not
// VDPBF16PS's.
TEXT ·bf16dotAVX2(SB), NOSPLIT, $8-40
	STMXCSR old-4(SP)
	MOVL    old-4(SP), AX
	ANDL    $0xFFFFFFC0, AX
	ORL     $0x8040, AX
	MOVL    AX, new-8(SP)
	LDMXCSR new-8(SP)

	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ chunks+16(FP), CX
	MOVQ lanes+24(FP), DX
	MOVL $0xFFFF0000, AX
	MOVD AX, X15
	VPBROADCASTD X15, Y15
	VMOVUPS 0(DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7

bf2loop:
	BF16STEP(0, Y0)
	BF16STEP(32, Y1)
	BF16STEP(64, Y2)
	BF16STEP(96, Y3)
	BF16STEP(128, Y4)
	BF16STEP(160, Y5)
	BF16STEP(192, Y6)
	BF16STEP(224, Y7)
	ADDQ $256, SI
	ADDQ $512, DI
	DECQ CX
	JNZ  bf2loop

	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	STMXCSR new-8(SP)
	LDMXCSR old-4(SP)
	MOVL    new-8(SP), AX
	ANDL    $0x18, AX
	MOVQ    AX, ret+32(FP)
	RET

// func bf16foldAVX(lanes *[64]float32) float32
// AVX: s_j = (l_j+l_{16+j}) + (l_{32+j}+l_{48+j}), t_j = s_j + s_{j+8},
// then ((t0+t4)+(t2+t6)) + ((t1+t5)+(t3+t7)).
TEXT ·bf16foldAVX(SB), NOSPLIT, $0-12
	MOVQ    lanes+0(FP), DX
	VMOVUPS 0(DX), Y0
	VMOVUPS 64(DX), Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS 128(DX), Y4
	VMOVUPS 192(DX), Y6
	VADDPS  Y6, Y4, Y4
	VADDPS  Y4, Y0, Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 96(DX), Y3
	VADDPS  Y3, Y1, Y1
	VMOVUPS 160(DX), Y5
	VMOVUPS 224(DX), Y7
	VADDPS  Y7, Y5, Y5
	VADDPS  Y5, Y1, Y1
	VADDPS  Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS  X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS  X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS  X1, X0, X0
	VMOVSS  X0, ret+8(FP)
	VZEROUPPER
	RET

// BF16ROUND sets dst to the bfloat16s of the float32s in src, in the low
// words of the dwords (quant.Float32ToBF16: a NaN's top half with its
// quiet bit set; else (b + 0x7fff + (b>>16)&1) >> 16); Z10, Z11, Z12 hold
// 1, 0x7fff and 0x40 in every dword; Z2, Z3 and K2 are clobbered.
#define BF16ROUND(src, dst) \
	VPSRLD    $16, src, Z2 \
	VPANDD    Z10, Z2, Z2 \
	VPADDD    Z11, Z2, Z2 \
	VPADDD    src, Z2, Z2 \
	VPSRLD    $16, Z2, dst \
	VCMPPS    $3, src, src, K2 \
	VPSRLD    $16, src, Z3 \
	VPORD     Z12, Z3, Z3 \
	VMOVDQA32 Z3, K2, dst

// func bf16QuantAVX512(x *float32, n int, v *uint16)
// AVX-512 F: QuantizeBF16Row's loop over n >= 1 activations, 16 at a time
// (the last ones by masked loads and stores): hi = bf16(x), lo = bf16(x -
// hi) by VSUBPS (Go's float32 subtraction, x its first operand), hi at
// v[256c+j] and lo at v[256c+128+j] for element 128c+j.
TEXT ·bf16QuantAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), R9
	MOVQ v+16(FP), DI
	MOVL $1, AX
	VPBROADCASTD AX, Z10
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z11
	MOVL $0x40, AX
	VPBROADCASTD AX, Z12
	XORQ DX, DX

bfqloop:
	MOVL $0xffff, R8
	MOVQ R9, CX
	SUBQ DX, CX
	CMPQ CX, $16
	JGE  bfqfull
	MOVL $1, R8
	SHLL CX, R8
	DECL R8

bfqfull:
	KMOVW R8, K1
	VMOVUPS.Z (SI)(DX*4), K1, Z0
	BF16ROUND(Z0, Z1)
	VPSLLD $16, Z1, Z4
	VSUBPS Z4, Z0, Z5
	BF16ROUND(Z5, Z6)
	MOVQ DX, R10
	SHRQ $7, R10
	SHLQ $9, R10
	MOVQ DX, R11
	ANDQ $127, R11
	LEAQ (R10)(R11*2), R10
	ADDQ DI, R10
	VPMOVDW Z1, K1, (R10)
	VPMOVDW Z6, K1, 256(R10)
	ADDQ $16, DX
	CMPQ DX, R9
	JLT  bfqloop
	VZEROUPPER
	RET

//go:build amd64 && !noasm

#include "textflag.h"

// ROWRED folds a row's two accumulators ZL = (a0|a1), ZH = (a2|a3) (YL, XL
// and YH their lower halves) into XL[0] in the order of kernels.DotF32:
// s = (a0+a1)+(a2+a3), then ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)). Y10
// and Y11 are scratch.
#define ROWRED(ZL, ZH, YL, YH, XL) \
	VEXTRACTF64X4 $1, ZL, Y10 \
	VADDPS        Y10, YL, YL \
	VEXTRACTF64X4 $1, ZH, Y11 \
	VADDPS        Y11, YH, YH \
	VADDPS        YH, YL, YL \
	VEXTRACTF128  $1, YL, X10 \
	VADDPS        X10, XL, XL \
	VMOVHLPS      XL, XL, X10 \
	VADDPS        X10, XL, XL \
	VMOVSHDUP     XL, X10 \
	VADDSS        X10, XL, XL

// ROWACC adds the chunk's products of row R (at OFF(R)) with a's chunk
// (Z8, Z9) to the row's accumulators ZL, ZH.
#define ROWACC(R, ZL, ZH) \
	VMULPS (R), Z8, Z10 \
	VADDPS Z10, ZL, ZL \
	VMULPS 64(R), Z9, Z11 \
	VADDPS Z11, ZH, ZH

// func dotManyAVX512(a *float32, n int, b *float32, stride int, m int, out *float32)
// out[t] = kernels.DotF32's whole chunks of b's row t (stride bytes apart)
// with a, for t < m and n a multiple of 32 (> 0): the accumulators of
// dotF32AVX2 two to a ZMM register, four rows at a time.
TEXT ·dotManyAVX512(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ b+16(FP), DI
	MOVQ stride+24(FP), R8
	MOVQ m+32(FP), R9
	MOVQ out+40(FP), R10
	SHRQ $5, CX

four:
	CMPQ   R9, $4
	JLT    one
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	MOVQ   DI, R11
	LEAQ   (DI)(R8*1), R12
	LEAQ   (DI)(R8*2), R13
	LEAQ   (R12)(R8*2), R14
	MOVQ   SI, AX
	MOVQ   CX, DX

fourloop:
	VMOVUPS (AX), Z8
	VMOVUPS 64(AX), Z9
	ROWACC(R11, Z0, Z1)
	ROWACC(R12, Z2, Z3)
	ROWACC(R13, Z4, Z5)
	ROWACC(R14, Z6, Z7)
	ADDQ    $128, AX
	ADDQ    $128, R11
	ADDQ    $128, R12
	ADDQ    $128, R13
	ADDQ    $128, R14
	DECQ    DX
	JNZ     fourloop
	ROWRED(Z0, Z1, Y0, Y1, X0)
	ROWRED(Z2, Z3, Y2, Y3, X2)
	ROWRED(Z4, Z5, Y4, Y5, X4)
	ROWRED(Z6, Z7, Y6, Y7, X6)
	VMOVSS X0, (R10)
	VMOVSS X2, 4(R10)
	VMOVSS X4, 8(R10)
	VMOVSS X6, 12(R10)
	ADDQ   $16, R10
	LEAQ   (DI)(R8*4), DI
	SUBQ   $4, R9
	JMP    four

one:
	TESTQ  R9, R9
	JZ     done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ   DI, R11
	MOVQ   SI, AX
	MOVQ   CX, DX

oneloop:
	VMOVUPS (AX), Z8
	VMOVUPS 64(AX), Z9
	ROWACC(R11, Z0, Z1)
	ADDQ    $128, AX
	ADDQ    $128, R11
	DECQ    DX
	JNZ     oneloop
	ROWRED(Z0, Z1, Y0, Y1, X0)
	VMOVSS  X0, (R10)
	ADDQ    $4, R10
	ADDQ    R8, DI
	DECQ    R9
	JMP     one

done:
	VZEROUPPER
	RET

// func prefetchGroupsAMD64(p *float32, stride, rows int)
TEXT ·prefetchGroupsAMD64(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ rows+16(FP), CX
pfloop:
	TESTQ CX, CX
	JZ    pfdone
	PREFETCHT0 (SI)
	PREFETCHT0 64(SI)
	PREFETCHT0 128(SI)
	PREFETCHT0 192(SI)
	ADDQ BX, SI
	DECQ CX
	JMP  pfloop
pfdone:
	RET

// func axpyTokensAVX512(o *float32, F int, a *float32, t *int32, na int, x *float32)
TEXT ·axpyTokensAVX512(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ F+8(FP), R10
	MOVQ a+16(FP), R11
	MOVQ t+24(FP), R12
	MOVQ na+32(FP), R13
	MOVQ x+40(FP), SI
	MOVQ R10, BX
	SHLQ $2, BX // a row's bytes
	XORQ R8, R8 // the chunk's byte offset
atchunk:
	VMOVUPS (DI)(R8*1), Z0
	VMOVUPS 64(DI)(R8*1), Z1
	VMOVUPS 128(DI)(R8*1), Z2
	VMOVUPS 192(DI)(R8*1), Z3
	XORQ R9, R9
attok:
	VBROADCASTSS (R11)(R9*4), Z4
	MOVLQSX (R12)(R9*4), AX
	IMULQ BX, AX
	ADDQ SI, AX
	ADDQ R8, AX
	VMULPS (AX), Z4, Z5
	VMULPS 64(AX), Z4, Z6
	VMULPS 128(AX), Z4, Z7
	VMULPS 192(AX), Z4, Z8
	VADDPS Z5, Z0, Z0
	VADDPS Z6, Z1, Z1
	VADDPS Z7, Z2, Z2
	VADDPS Z8, Z3, Z3
	INCQ R9
	CMPQ R9, R13
	JLT attok
	VMOVUPS Z0, (DI)(R8*1)
	VMOVUPS Z1, 64(DI)(R8*1)
	VMOVUPS Z2, 128(DI)(R8*1)
	VMOVUPS Z3, 192(DI)(R8*1)
	ADDQ $256, R8
	CMPQ R8, BX
	JLT atchunk
	VZEROUPPER
	RET

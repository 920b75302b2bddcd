//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 F (attn.go). Every product is rounded before its add (no FMA).

// SCOREFOLD(ZA, ZB, YA, YB, XA, XB, YT, XT, OFF): one key's accumulators
// ZA (0 and 1) and ZB (2 and 3) folded as (a0+a1)+(a2+a3), then the lanes
// as ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)), times scale (X15), to OFF(DX).
#define SCOREFOLD(ZA, ZB, YA, YB, XA, XB, YT, XT, OFF) \
	VEXTRACTF64X4 $1, ZA, YT \
	VADDPS        YT, YA, YA \
	VEXTRACTF64X4 $1, ZB, YT \
	VADDPS        YT, YB, YB \
	VADDPS        YB, YA, YA \
	VEXTRACTF128  $1, YA, XT \
	VADDPS        XT, XA, XA \
	VMOVHLPS      XA, XA, XT \
	VADDPS        XT, XA, XA \
	VMOVSHDUP     XA, XT \
	VADDSS        XT, XA, XA \
	VMULSS        X15, XA, XA \
	VMOVSS        XA, OFF(DX)

// func attnScoresAVX512(q *float32, k *float32, stride int, n int, chunks int, scale float32, out *float32)
//
// Per key: Z2 holds DotF32's accumulators 0 and 1 (elements 32c..32c+15 of
// chunk c), Z3 accumulators 2 and 3; then (a0+a1)+(a2+a3), the lanes folded
// as ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)), times scale. Four keys at a time
// (Z2..Z9, each key's own sums: the query's loads shared, the keys' chains
// side by side), then one at a time. SI the query, DI the key, R8 the
// stride in bytes, CX keys left, R9 chunks of 32, DX out.
TEXT ·attnScoresAVX512(SB), NOSPLIT, $0-56
	MOVQ  q+0(FP), SI
	MOVQ  k+8(FP), DI
	MOVQ  stride+16(FP), R8
	SHLQ  $2, R8
	MOVQ  n+24(FP), CX
	MOVQ  chunks+32(FP), R9
	VMOVSS scale+40(FP), X15
	MOVQ  out+48(FP), DX
	TESTQ CX, CX
	JZ    scoresdone

scores4:
	CMPQ CX, $4
	JB   scoreskey
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	MOVQ   SI, AX
	MOVQ   DI, BX
	LEAQ   (DI)(R8*2), R12
	MOVQ   R9, R10

scores4chunk:
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Z1
	VMULPS  0(BX), Z0, Z10
	VADDPS  Z10, Z2, Z2
	VMULPS  64(BX), Z1, Z11
	VADDPS  Z11, Z3, Z3
	VMULPS  0(BX)(R8*1), Z0, Z12
	VADDPS  Z12, Z4, Z4
	VMULPS  64(BX)(R8*1), Z1, Z13
	VADDPS  Z13, Z5, Z5
	VMULPS  0(R12), Z0, Z14
	VADDPS  Z14, Z6, Z6
	VMULPS  64(R12), Z1, Z16
	VADDPS  Z16, Z7, Z7
	VMULPS  0(R12)(R8*1), Z0, Z17
	VADDPS  Z17, Z8, Z8
	VMULPS  64(R12)(R8*1), Z1, Z18
	VADDPS  Z18, Z9, Z9
	ADDQ    $128, AX
	ADDQ    $128, BX
	ADDQ    $128, R12
	DECQ    R10
	JNZ     scores4chunk

	SCOREFOLD(Z2, Z3, Y2, Y3, X2, X3, Y10, X10, 0)
	SCOREFOLD(Z4, Z5, Y4, Y5, X4, X5, Y11, X11, 4)
	SCOREFOLD(Z6, Z7, Y6, Y7, X6, X7, Y12, X12, 8)
	SCOREFOLD(Z8, Z9, Y8, Y9, X8, X9, Y13, X13, 12)
	ADDQ  $16, DX
	LEAQ  (DI)(R8*4), DI
	SUBQ  $4, CX
	JZ    scoresdone
	JMP   scores4

scoreskey:
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   R9, R10

scoreschunk:
	VMOVUPS 0(AX), Z0
	VMULPS  0(BX), Z0, Z0
	VADDPS  Z0, Z2, Z2
	VMOVUPS 64(AX), Z1
	VMULPS  64(BX), Z1, Z1
	VADDPS  Z1, Z3, Z3
	ADDQ    $128, AX
	ADDQ    $128, BX
	DECQ    R10
	JNZ     scoreschunk

	VEXTRACTF64X4 $1, Z2, Y4
	VADDPS        Y4, Y2, Y2
	VEXTRACTF64X4 $1, Z3, Y5
	VADDPS        Y5, Y3, Y3
	VADDPS        Y3, Y2, Y2
	VEXTRACTF128  $1, Y2, X4
	VADDPS        X4, X2, X2
	VMOVHLPS      X2, X2, X4
	VADDPS        X4, X2, X2
	VMOVSHDUP     X2, X4
	VADDSS        X4, X2, X2
	VMULSS        X15, X2, X2
	VMOVSS        X2, (DX)
	ADDQ          $4, DX
	ADDQ          R8, DI
	DECQ          CX
	JNZ           scoreskey

scoresdone:
	VZEROUPPER
	RET

// func attnSumAVX512(o *float32, p *float32, v *float32, stride int, n int, blocks int)
//
// Per block of 128 outputs (Z0..Z7), every position j in turn: o += p[j] *
// v[j*stride+...]. DI the block's outputs, R10 its values, SI p, BX the
// value row, R8 the stride in bytes, CX positions left, R9 blocks left.
TEXT ·attnSumAVX512(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ v+16(FP), R10
	MOVQ stride+24(FP), R8
	SHLQ $2, R8
	MOVQ blocks+40(FP), R9

sumblock:
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	MOVQ    p+8(FP), SI
	MOVQ    R10, BX
	MOVQ    n+32(FP), CX

sumpos:
	VBROADCASTSS (SI), Z8
	VMULPS       0(BX), Z8, Z9
	VADDPS       Z9, Z0, Z0
	VMULPS       64(BX), Z8, Z10
	VADDPS       Z10, Z1, Z1
	VMULPS       128(BX), Z8, Z11
	VADDPS       Z11, Z2, Z2
	VMULPS       192(BX), Z8, Z12
	VADDPS       Z12, Z3, Z3
	VMULPS       256(BX), Z8, Z13
	VADDPS       Z13, Z4, Z4
	VMULPS       320(BX), Z8, Z14
	VADDPS       Z14, Z5, Z5
	VMULPS       384(BX), Z8, Z16
	VADDPS       Z16, Z6, Z6
	VMULPS       448(BX), Z8, Z17
	VADDPS       Z17, Z7, Z7
	ADDQ         $4, SI
	ADDQ         R8, BX
	DECQ         CX
	JNZ          sumpos

	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	ADDQ    $512, DI
	ADDQ    $512, R10
	DECQ    R9
	JNZ     sumblock
	VZEROUPPER
	RET

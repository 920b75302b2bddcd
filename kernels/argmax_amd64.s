//go:build amd64 && !noasm

#include "textflag.h"

// AVX (argmax.go). n is a positive multiple of 8.

// func maxF32AVX(x *float32, n int) float32
//
// The largest of x[:n] that is not NaN, x[0] not NaN: each VMAXPS takes x
// as its first source, so a NaN there gives the accumulator back (and a
// tie of -0 and +0 either zero). Y0..Y3 accumulate 32 at a time, Y0 the
// last 8s; SI x, CX values left.
TEXT ·maxF32AVX(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS (SI), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	CMPQ CX, $32
	JB   max8

max32:
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS  Y0, Y4, Y0
	VMAXPS  Y1, Y5, Y1
	VMAXPS  Y2, Y6, Y2
	VMAXPS  Y3, Y7, Y3
	ADDQ $128, SI
	SUBQ $32, CX
	CMPQ CX, $32
	JAE  max32
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0

max8:
	TESTQ CX, CX
	JZ    maxfold
	VMOVUPS (SI), Y4
	VMAXPS  Y0, Y4, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  max8

maxfold:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS    X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS    X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS    X1, X0, X0
	VMOVSS    X0, ret+16(FP)
	VZEROUPPER
	RET

// func findF32AVX(x *float32, n int, v float32) int
//
// The first i < n with x[i] == v (ordered: a NaN is never equal), or n.
// SI x, BX the start, CX values left, Y7 v.
TEXT ·findF32AVX(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ SI, BX
	MOVQ n+8(FP), CX
	VBROADCASTSS v+16(FP), Y7
	CMPQ CX, $32
	JB   find8

find32:
	VCMPPS $0, 0(SI), Y7, Y0
	VCMPPS $0, 32(SI), Y7, Y1
	VCMPPS $0, 64(SI), Y7, Y2
	VCMPPS $0, 96(SI), Y7, Y3
	VORPS  Y1, Y0, Y4
	VORPS  Y3, Y2, Y5
	VORPS  Y5, Y4, Y4
	VPTEST Y4, Y4
	JNZ    find32hit
	ADDQ $128, SI
	SUBQ $32, CX
	CMPQ CX, $32
	JAE  find32
	JMP  find8

find32hit:
	// The first of the four vectors with a hit, then its first lane.
	VMOVMSKPS Y0, AX
	TESTL AX, AX
	JNZ   findlane
	ADDQ  $32, SI
	VMOVMSKPS Y1, AX
	TESTL AX, AX
	JNZ   findlane
	ADDQ  $32, SI
	VMOVMSKPS Y2, AX
	TESTL AX, AX
	JNZ   findlane
	ADDQ  $32, SI
	VMOVMSKPS Y3, AX
	JMP   findlane

find8:
	TESTQ CX, CX
	JZ    findnone
	VCMPPS $0, (SI), Y7, Y0
	VMOVMSKPS Y0, AX
	TESTL AX, AX
	JNZ   findlane
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  find8

findlane:
	BSFL AX, AX
	SUBQ BX, SI
	SHRQ $2, SI
	ADDQ SI, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

findnone:
	MOVQ n+8(FP), AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

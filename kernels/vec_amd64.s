//go:build amd64 && !noasm

#include "textflag.h"

// AVX (vec.go); n a positive multiple of 8. Each operation takes the
// scalar loop's first operand first (the NaN an x86 operation passes on).

// func addAVX(x *float32, o *float32, n int)
// x[i] += o[i].
TEXT ·addAVX(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ o+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   add8

add32:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  0(SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	SUBQ $32, CX
	CMPQ CX, $32
	JAE  add32

add8:
	TESTQ CX, CX
	JZ    adddone
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  add8

adddone:
	VZEROUPPER
	RET

// func scaleMulAVX(y *float32, x *float32, w *float32, s float32, n int)
// y[i] = (x[i]*s)*w[i].
TEXT ·scaleMulAVX(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	VBROADCASTSS s+24(FP), Y7
	MOVQ n+32(FP), CX
	CMPQ CX, $32
	JB   sm8

sm32:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS  Y7, Y0, Y0
	VMULPS  Y7, Y1, Y1
	VMULPS  Y7, Y2, Y2
	VMULPS  Y7, Y3, Y3
	VMULPS  0(DX), Y0, Y0
	VMULPS  32(DX), Y1, Y1
	VMULPS  64(DX), Y2, Y2
	VMULPS  96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $128, DX
	SUBQ $32, CX
	CMPQ CX, $32
	JAE  sm32

sm8:
	TESTQ CX, CX
	JZ    smdone
	VMOVUPS (SI), Y0
	VMULPS  Y7, Y0, Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  sm8

smdone:
	VZEROUPPER
	RET

// func shiftScaleAVX(x *float32, v *float32, sub float64, mul float64, n int)
// x[i] = float32((float64(v[i]) - sub) * mul), 8 at a time in two halves.
TEXT ·shiftScaleAVX(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), DI
	MOVQ v+8(FP), SI
	VBROADCASTSD sub+16(FP), Y6
	VBROADCASTSD mul+24(FP), Y7
	MOVQ n+32(FP), CX

ssloop:
	VCVTPS2PD 0(SI), Y0
	VCVTPS2PD 16(SI), Y1
	VSUBPD    Y6, Y0, Y0
	VSUBPD    Y6, Y1, Y1
	VMULPD    Y7, Y0, Y0
	VMULPD    Y7, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS   X0, 0(DI)
	VMOVUPS   X1, 16(DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  ssloop
	VZEROUPPER
	RET

// func widenAVX(p *float64, x *float32, n int)
// p[i] = float64(x[i]), exact.
TEXT ·widenAVX(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

wdloop:
	VCVTPS2PD 0(SI), Y0
	VCVTPS2PD 16(SI), Y1
	VMOVUPD   Y0, 0(DI)
	VMOVUPD   Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JNZ  wdloop
	VZEROUPPER
	RET

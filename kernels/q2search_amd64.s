//go:build amd64 && !noasm

#include "textflag.h"

// -1.0, 2.0 as float32; 1 as int32
DATA q2consts<>+0(SB)/4, $0xbf800000
DATA q2consts<>+4(SB)/4, $0x40000000
DATA q2consts<>+8(SB)/4, $1
GLOBL q2consts<>(SB), RODATA|NOPTR, $12

// The bit position of each lane's code within its byte, 2*(j%4), is
// ·q2shifts (qdot_amd64.s).

// LEVEL: Y13 = RoundToEven(clamp(Y14 * Y10, -1, 2)); Y8 = -1, Y9 = 2.
#define LEVEL \
	VMULPS    Y10, Y14, Y13 \
	VMAXPS    Y8, Y13, Y13  \
	VMINPS    Y9, Y13, Y13  \
	VROUNDPS  $0, Y13, Y13

// STEP adds x*l to Y11 and l*l to Y12 for the 8 elements at off.
#define STEP(off) \
	VMOVUPS off(SI), Y14 \
	LEVEL                \
	VMULPS  Y13, Y14, Y14 \
	VADDPS  Y14, Y11, Y11 \
	VMULPS  Y13, Y13, Y13 \
	VADDPS  Y13, Y12, Y12

// STEP2(off): STEP for two candidates at once, inverse scales Y10 and Y0,
// sums in Y11/Y12 and Y1/Y2, so that their dependency chains overlap.
#define STEP2(off) \
	VMOVUPS   off(SI), Y5   \
	VMULPS    Y10, Y5, Y13  \
	VMULPS    Y0, Y5, Y3    \
	VMAXPS    Y8, Y13, Y13  \
	VMAXPS    Y8, Y3, Y3    \
	VMINPS    Y9, Y13, Y13  \
	VMINPS    Y9, Y3, Y3    \
	VROUNDPS  $0, Y13, Y13  \
	VROUNDPS  $0, Y3, Y3    \
	VMULPS    Y13, Y5, Y14  \
	VMULPS    Y3, Y5, Y4    \
	VADDPS    Y14, Y11, Y11 \
	VADDPS    Y4, Y1, Y1    \
	VMULPS    Y13, Y13, Y13 \
	VMULPS    Y3, Y3, Y3    \
	VADDPS    Y13, Y12, Y12 \
	VADDPS    Y3, Y2, Y2

// WSTEP adds (w*x)*l to Y11 and (w*l)*l to Y12.
#define WSTEP(off) \
	VMOVUPS off(SI), Y14  \
	LEVEL                 \
	VMULPS  off(BX), Y14, Y14 \
	VMULPS  Y13, Y14, Y14 \
	VADDPS  Y14, Y11, Y11 \
	VMULPS  off(BX), Y13, Y15 \
	VMULPS  Y13, Y15, Y15 \
	VADDPS  Y15, Y12, Y12

// WSTEP2(off): WSTEP for two candidates at once, inverse scales Y10 and
// Y0, sums in Y11/Y12 and Y1/Y2; w*x (Y6) is taken once for both.
#define WSTEP2(off) \
	VMOVUPS   off(SI), Y5       \
	VMULPS    off(BX), Y5, Y6   \
	VMULPS    Y10, Y5, Y13      \
	VMULPS    Y0, Y5, Y3        \
	VMAXPS    Y8, Y13, Y13      \
	VMAXPS    Y8, Y3, Y3        \
	VMINPS    Y9, Y13, Y13      \
	VMINPS    Y9, Y3, Y3        \
	VROUNDPS  $0, Y13, Y13      \
	VROUNDPS  $0, Y3, Y3        \
	VMULPS    Y13, Y6, Y14      \
	VMULPS    Y3, Y6, Y4        \
	VADDPS    Y14, Y11, Y11     \
	VADDPS    Y4, Y1, Y1        \
	VMULPS    off(BX), Y13, Y15 \
	VMULPS    off(BX), Y3, Y7   \
	VMULPS    Y13, Y15, Y15     \
	VMULPS    Y3, Y7, Y7        \
	VADDPS    Y15, Y12, Y12     \
	VADDPS    Y7, Y2, Y2

// REDUCE(acc) leaves ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) in the low lane.
#define REDUCE(Y, X) \
	VEXTRACTF128 $1, Y, X15 \
	VADDPS       X15, X, X  \
	VMOVHLPS     X, X, X15  \
	VADDPS       X15, X, X  \
	VMOVSHDUP    X, X15     \
	VADDSS       X15, X, X

// func q2ScoreAVX2(x *float32, inv *float32, n int, out *float32)
TEXT ·q2ScoreAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ inv+8(FP), DX
	MOVQ n+16(FP), CX
	MOVQ out+24(FP), DI
	VBROADCASTSS q2consts<>+0(SB), Y8
	VBROADCASTSS q2consts<>+4(SB), Y9

pairloop:
	CMPQ CX, $2
	JLT  scoreloop
	VBROADCASTSS (DX), Y10
	VBROADCASTSS 4(DX), Y0
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	STEP2(0)
	STEP2(32)
	STEP2(64)
	STEP2(96)
	STEP2(128)
	STEP2(160)
	STEP2(192)
	STEP2(224)
	REDUCE(Y11, X11)
	REDUCE(Y12, X12)
	REDUCE(Y1, X1)
	REDUCE(Y2, X2)
	VMOVSS X11, (DI)
	VMOVSS X12, 4(DI)
	VMOVSS X1, 8(DI)
	VMOVSS X2, 12(DI)
	ADDQ $8, DX
	ADDQ $16, DI
	SUBQ $2, CX
	JMP  pairloop

scoreloop:
	TESTQ CX, CX
	JZ    scoredone
	VBROADCASTSS (DX), Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	STEP(0)
	STEP(32)
	STEP(64)
	STEP(96)
	STEP(128)
	STEP(160)
	STEP(192)
	STEP(224)
	REDUCE(Y11, X11)
	REDUCE(Y12, X12)
	VMOVSS X11, (DI)
	VMOVSS X12, 4(DI)
	ADDQ $4, DX
	ADDQ $8, DI
	DECQ CX
	JMP  scoreloop

scoredone:
	VZEROUPPER
	RET

// func q2ScoreWeightedAVX2(x, w *float32, inv *float32, n int, out *float32)
TEXT ·q2ScoreWeightedAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), BX
	MOVQ inv+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DI
	VBROADCASTSS q2consts<>+0(SB), Y8
	VBROADCASTSS q2consts<>+4(SB), Y9

wpairloop:
	CMPQ CX, $2
	JLT  wscoreloop
	VBROADCASTSS (DX), Y10
	VBROADCASTSS 4(DX), Y0
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	WSTEP2(0)
	WSTEP2(32)
	WSTEP2(64)
	WSTEP2(96)
	WSTEP2(128)
	WSTEP2(160)
	WSTEP2(192)
	WSTEP2(224)
	REDUCE(Y11, X11)
	REDUCE(Y12, X12)
	REDUCE(Y1, X1)
	REDUCE(Y2, X2)
	VMOVSS X11, (DI)
	VMOVSS X12, 4(DI)
	VMOVSS X1, 8(DI)
	VMOVSS X2, 12(DI)
	ADDQ $8, DX
	ADDQ $16, DI
	SUBQ $2, CX
	JMP  wpairloop

wscoreloop:
	TESTQ CX, CX
	JZ    wscoredone
	VBROADCASTSS (DX), Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	WSTEP(0)
	WSTEP(32)
	WSTEP(64)
	WSTEP(96)
	WSTEP(128)
	WSTEP(160)
	WSTEP(192)
	WSTEP(224)
	REDUCE(Y11, X11)
	REDUCE(Y12, X12)
	VMOVSS X11, (DI)
	VMOVSS X12, 4(DI)
	ADDQ $4, DX
	ADDQ $8, DI
	DECQ CX
	JMP  wscoreloop

wscoredone:
	VZEROUPPER
	RET

// CODES(off, Y): Y = (level + 1) << 2*(j%4) as int32 lanes.
#define CODES(off, Y) \
	VMOVUPS   off(SI), Y14  \
	LEVEL                   \
	VCVTPS2DQ Y13, Y        \
	VPADDD    Y12, Y, Y     \
	VPSLLVD   Y11, Y, Y

// func q2PackAVX2(x *float32, inv float32, qs *byte)
TEXT ·q2PackAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ qs+16(FP), DI
	VBROADCASTSS inv+8(FP), Y10
	VBROADCASTSS q2consts<>+0(SB), Y8
	VBROADCASTSS q2consts<>+4(SB), Y9
	VPBROADCASTD q2consts<>+8(SB), Y12
	VMOVDQU      ·q2shifts(SB), Y11
	CODES(0, Y0)
	CODES(32, Y1)
	CODES(64, Y2)
	CODES(96, Y3)
	CODES(128, Y4)
	CODES(160, Y5)
	CODES(192, Y6)
	CODES(224, Y7)
	// Codes in a byte occupy disjoint bits, so adding neighbours is OR-ing
	// them. Two horizontal adds gather each group of four lanes: the low
	// 128-bit half then holds bytes 0,2,4,6 and the high half 1,3,5,7.
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y0
	VPHADDD Y5, Y4, Y4
	VPHADDD Y7, Y6, Y6
	VPHADDD Y6, Y4, Y4
	// words: low half bytes 0,2,...,14, high half bytes 1,3,...,15
	VPACKUSDW    Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPSLLW       $8, X1, X1
	VPOR         X1, X0, X0
	VMOVDQU      X0, (DI)
	VZEROUPPER
	RET

//go:build amd64 && !noasm

#include "textflag.h"

// groupScore's layout (score.go): d [32]float32 at 0, inv at 128, ne
// [64][32] at 256, t [64][32] at 8448, loss [32] at 16640.
#define S_D 0
#define S_INV 128
#define S_NE 256
#define S_T 8448
#define S_LOSS 16640

DATA scoreconst<>+0(SB)/4, $0xbf800000 // -1
DATA scoreconst<>+4(SB)/4, $0x40000000 // 2
DATA scoreconst<>+8(SB)/4, $0x80000000 // sign bit
GLOBL scoreconst<>(SB), RODATA|NOPTR, $12

// LANES quantizes one column for lanes 8i..8i+7 of accumulator T: the
// level, the error (Y4 holds 1/U_kk), its square added to SUM, −e and t
// stored at DI (ne row) and R9 (t row).
#define LANES(T, SUM, OFF) \
	VMULPS   (S_INV+OFF)(R8), T, Y5 \
	VMAXPS   Y9, Y5, Y5             \
	VMINPS   Y10, Y5, Y5            \
	VROUNDPS $0, Y5, Y5             \
	VMULPS   (S_D+OFF)(R8), Y5, Y5  \
	VSUBPS   Y5, T, Y6              \
	VMULPS   Y4, Y6, Y6             \
	VMULPS   Y6, Y6, Y7             \
	VADDPS   Y7, SUM, SUM           \
	VXORPS   Y11, Y6, Y6            \
	VMOVUPS  Y6, OFF(DI)            \
	VMOVUPS  T, OFF(R9)

// func scoreGroupAVX2(w, invDiag, bandT *float32, s *groupScore)
TEXT ·scoreGroupAVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), AX
	MOVQ invDiag+8(FP), BX
	MOVQ bandT+16(FP), DX
	MOVQ s+24(FP), R8
	VBROADCASTSS scoreconst<>+0(SB), Y9
	VBROADCASTSS scoreconst<>+4(SB), Y10
	VBROADCASTSS scoreconst<>+8(SB), Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	LEAQ   S_NE(R8), DI  // ne row k
	LEAQ   S_T(R8), R9   // t row k
	XORQ   R10, R10      // k

colloop:
	VBROADCASTSS (AX)(R10*4), Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y2
	VMOVAPS      Y0, Y3
	MOVQ         R10, CX
	TESTQ        CX, CX
	JZ           quant
	MOVQ         R10, SI
	SHLQ         $8, SI
	ADDQ         DX, SI  // bandT row k
	LEAQ         S_NE(R8), R11

comploop:
	VBROADCASTSS (SI), Y4
	VMULPS       (R11), Y4, Y5
	VMULPS       32(R11), Y4, Y6
	VMULPS       64(R11), Y4, Y7
	VMULPS       96(R11), Y4, Y8
	VADDPS       Y5, Y0, Y0
	VADDPS       Y6, Y1, Y1
	VADDPS       Y7, Y2, Y2
	VADDPS       Y8, Y3, Y3
	ADDQ         $4, SI
	ADDQ         $128, R11
	DECQ         CX
	JNZ          comploop

quant:
	VBROADCASTSS (BX)(R10*4), Y4
	LANES(Y0, Y12, 0)
	LANES(Y1, Y13, 32)
	LANES(Y2, Y14, 64)
	LANES(Y3, Y15, 96)
	ADDQ $128, DI
	ADDQ $128, R9
	INCQ R10
	CMPQ R10, $64
	JLT  colloop

	VMOVUPS Y12, S_LOSS(R8)
	VMOVUPS Y13, (S_LOSS+32)(R8)
	VMOVUPS Y14, (S_LOSS+64)(R8)
	VMOVUPS Y15, (S_LOSS+96)(R8)
	VZEROUPPER
	RET

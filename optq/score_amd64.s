//go:build amd64 && !noasm

#include "textflag.h"

// groupScore's layout (score.go): d [32]float32 at 0, inv at 128, ne
// [64][32] at 256, l [64][32] at 8448, loss [32] at 16640.
#define S_D 0
#define S_INV 128
#define S_NE 256
#define S_L 8448
#define S_LOSS 16640

// 8 lanes each of -1, 2 and the sign bit.
DATA scoreconst<>+0(SB)/8, $0xbf800000bf800000
DATA scoreconst<>+8(SB)/8, $0xbf800000bf800000
DATA scoreconst<>+16(SB)/8, $0xbf800000bf800000
DATA scoreconst<>+24(SB)/8, $0xbf800000bf800000
DATA scoreconst<>+32(SB)/8, $0x4000000040000000
DATA scoreconst<>+40(SB)/8, $0x4000000040000000
DATA scoreconst<>+48(SB)/8, $0x4000000040000000
DATA scoreconst<>+56(SB)/8, $0x4000000040000000
DATA scoreconst<>+64(SB)/8, $0x8000000080000000
DATA scoreconst<>+72(SB)/8, $0x8000000080000000
DATA scoreconst<>+80(SB)/8, $0x8000000080000000
DATA scoreconst<>+88(SB)/8, $0x8000000080000000
GLOBL scoreconst<>(SB), RODATA|NOPTR, $96

// LANES quantizes column k for lanes OFF/4..OFF/4+7 of accumulator T: the
// level, the error (Y8 holds 1/U_kk), its square added to SUM, −e and the
// level stored at DI (ne row k) and R9 (l row k). Y9-Y11 are scratch.
#define LANES(T, SUM, OFF) \
	VMULPS   (S_INV+OFF)(R8), T, Y9      \
	VMAXPS   scoreconst<>+0(SB), Y9, Y9  \
	VMINPS   scoreconst<>+32(SB), Y9, Y9 \
	VROUNDPS $0, Y9, Y9                  \
	VMOVUPS  Y9, OFF(R9)                 \
	VMULPS   (S_D+OFF)(R8), Y9, Y9       \
	VSUBPS   Y9, T, Y10                  \
	VMULPS   Y8, Y10, Y10                \
	VMULPS   Y10, Y10, Y11               \
	VADDPS   Y11, SUM, SUM               \
	VXORPS   scoreconst<>+64(SB), Y10, Y10 \
	VMOVUPS  Y10, OFF(DI)

// TERM adds ne[j] (at R11) times the broadcast factors Y8 (to A, column
// k) and Y9 (to B, column k+1) for lanes OFF/4..OFF/4+7.
#define TERM(A, B, OFF) \
	VMOVUPS OFF(R11), Y10 \
	VMULPS  Y10, Y8, Y11  \
	VADDPS  Y11, A, A     \
	VMULPS  Y10, Y9, Y10  \
	VADDPS  Y10, B, B

// func scoreGroupAVX2(w, invDiag, bandT *float32, s *groupScore)
// Columns go in pairs k, k+1: both compensated weights gather the terms
// of the columns before k together, then column k is quantized, its term
// added to column k+1's, and column k+1 quantized. Every sum keeps
// scoreGroupGo's order.
TEXT ·scoreGroupAVX2(SB), NOSPLIT, $0-32
	MOVQ   w+0(FP), AX
	MOVQ   invDiag+8(FP), BX
	MOVQ   bandT+16(FP), DX
	MOVQ   s+24(FP), R8
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	LEAQ   S_NE(R8), DI  // ne row k
	LEAQ   S_L(R8), R9   // l row k
	XORQ   R10, R10      // k

pairloop:
	VBROADCASTSS (AX)(R10*4), Y0     // row b of w for lanes 8b..8b+7
	VBROADCASTSS 256(AX)(R10*4), Y1
	VBROADCASTSS 512(AX)(R10*4), Y2
	VBROADCASTSS 768(AX)(R10*4), Y3
	VBROADCASTSS 4(AX)(R10*4), Y4
	VBROADCASTSS 260(AX)(R10*4), Y5
	VBROADCASTSS 516(AX)(R10*4), Y6
	VBROADCASTSS 772(AX)(R10*4), Y7
	MOVQ         R10, SI
	SHLQ         $8, SI
	ADDQ         DX, SI  // bandT row k; row k+1 at 256(SI)
	MOVQ         R10, CX
	TESTQ        CX, CX
	JZ           quantk
	LEAQ         S_NE(R8), R11

termloop:
	VBROADCASTSS (SI), Y8
	VBROADCASTSS 256(SI), Y9
	TERM(Y0, Y4, 0)
	TERM(Y1, Y5, 32)
	TERM(Y2, Y6, 64)
	TERM(Y3, Y7, 96)
	ADDQ         $4, SI
	ADDQ         $128, R11
	DECQ         CX
	JNZ          termloop

quantk:
	VBROADCASTSS (BX)(R10*4), Y8
	LANES(Y0, Y12, 0)
	LANES(Y1, Y13, 32)
	LANES(Y2, Y14, 64)
	LANES(Y3, Y15, 96)

	// Column k's term of column k+1 (SI is bandT row k + 4k).
	VBROADCASTSS 256(SI), Y8
	VMULPS       0(DI), Y8, Y9
	VADDPS       Y9, Y4, Y4
	VMULPS       32(DI), Y8, Y9
	VADDPS       Y9, Y5, Y5
	VMULPS       64(DI), Y8, Y9
	VADDPS       Y9, Y6, Y6
	VMULPS       96(DI), Y8, Y9
	VADDPS       Y9, Y7, Y7
	ADDQ         $128, DI
	ADDQ         $128, R9

	VBROADCASTSS 4(BX)(R10*4), Y8
	LANES(Y4, Y12, 0)
	LANES(Y5, Y13, 32)
	LANES(Y6, Y14, 64)
	LANES(Y7, Y15, 96)
	ADDQ $128, DI
	ADDQ $128, R9
	ADDQ $2, R10
	CMPQ R10, $64
	JLT  pairloop

	VMOVUPS Y12, S_LOSS(R8)
	VMOVUPS Y13, (S_LOSS+32)(R8)
	VMOVUPS Y14, (S_LOSS+64)(R8)
	VMOVUPS Y15, (S_LOSS+96)(R8)
	VZEROUPPER
	RET

// func fp16RoundF16C(v *float32, n int)
// v[i] through binary16 and back, 8 at a time (n a multiple of 8):
// VCVTPS2PH rounding to nearest even, then VCVTPH2PS (both exact IEEE).
TEXT ·fp16RoundF16C(SB), NOSPLIT, $0-16
	MOVQ v+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ   f16done

f16loop:
	VMOVUPS   (DI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, DI
	DECQ      CX
	JNZ       f16loop

f16done:
	VZEROUPPER
	RET

// 16 lanes each of -1, 2 and the sign bit (scoreGroupAVX512's constants).
DATA score512<>+0(SB)/4, $0xbf800000
DATA score512<>+4(SB)/4, $0x40000000
DATA score512<>+8(SB)/4, $0x80000000
GLOBL score512<>(SB), RODATA|NOPTR, $12

// LANES512 is LANES for 16 lanes in a ZMM register (Z8 holds 1/U_kk,
// Z16-Z18 the constants -1, 2 and the sign bit; Z9-Z11 scratch).
// VRNDSCALEPS $0 rounds to nearest even, as VROUNDPS $0.
#define LANES512(T, SUM, OFF) \
	VMULPS      (S_INV+OFF)(R8), T, Z9 \
	VMAXPS      Z16, Z9, Z9            \
	VMINPS      Z17, Z9, Z9            \
	VRNDSCALEPS $0, Z9, Z9             \
	VMOVUPS     Z9, OFF(R9)            \
	VMULPS      (S_D+OFF)(R8), Z9, Z9  \
	VSUBPS      Z9, T, Z10             \
	VMULPS      Z8, Z10, Z10           \
	VMULPS      Z10, Z10, Z11          \
	VADDPS      Z11, SUM, SUM          \
	VPXORD      Z18, Z10, Z10          \
	VMOVUPS     Z10, OFF(DI)

// TERM512 adds ne[j] (16 lanes at R11+OFF, into Z10) times the
// broadcast factors Z8, Z9, Z14, Z15 (of columns k..k+3) to A, B, C, D.
#define TERM512(A, B, C, D, OFF) \
	VMOVUPS OFF(R11), Z10 \
	VMULPS  Z10, Z8, Z11  \
	VADDPS  Z11, A, A     \
	VMULPS  Z10, Z9, Z11  \
	VADDPS  Z11, B, B     \
	VMULPS  Z10, Z14, Z11 \
	VADDPS  Z11, C, C     \
	VMULPS  Z10, Z15, Z11 \
	VADDPS  Z11, D, D

// ROWS512 sets Z to rows R and R+1 of w at column offset OFF (bytes): the
// low 8 lanes row R's weight, the high 8 row R+1's.
#define ROWS512(Z, Y, R, OFF) \
	VBROADCASTSS (R*256+OFF)(AX)(R10*4), Y    \
	VBROADCASTSS ((R+1)*256+OFF)(AX)(R10*4), Y10 \
	VINSERTF64X4 $1, Y10, Z, Z

// NEXT512 adds the term of the column just quantized (−e at DI) with the
// factor at OFF(SI) to the 32 lanes A, B of a later column of the quad.
#define NEXT512(A, B, OFF) \
	VBROADCASTSS OFF(SI), Z8 \
	VMULPS       0(DI), Z8, Z9 \
	VADDPS       Z9, A, A \
	VMULPS       64(DI), Z8, Z9 \
	VADDPS       Z9, B, B

// ROWSQUAD512: lanes 8b..8b+7 take row b of the blockRows at AX.
#define ROWSQUAD512(A) \
	ROWS512(Z0, Y0, 0, 0)  \
	ROWS512(Z1, Y1, 2, 0)  \
	ROWS512(Z2, Y2, 0, 4)  \
	ROWS512(Z3, Y3, 2, 4)  \
	ROWS512(Z4, Y4, 0, 8)  \
	ROWS512(Z5, Y5, 2, 8)  \
	ROWS512(Z6, Y6, 0, 12) \
	ROWS512(Z7, Y7, 2, 12)

// LANESQUAD512: lane c takes its own row, w[k][c] of the laneWeights at
// AX (columns k..k+3 are 512 contiguous bytes from k·128).
#define LANESQUAD512(A) \
	MOVQ    R10, R11   \
	SHLQ    $7, R11    \
	ADDQ    A, R11     \
	VMOVUPS (R11), Z0  \
	VMOVUPS 64(R11), Z1  \
	VMOVUPS 128(R11), Z2 \
	VMOVUPS 192(R11), Z3 \
	VMOVUPS 256(R11), Z4 \
	VMOVUPS 320(R11), Z5 \
	VMOVUPS 384(R11), Z6 \
	VMOVUPS 448(R11), Z7

// SCOREPRE512, a QUAD and SCOREPOST512 are scoreGroupAVX512's body, the
// QUAD setting Z0-Z7 to the 32 lanes' compensated weights of columns
// k..k+3 before their terms (R10 = k): ROWSQUAD512 broadcasts rows of
// blockRows, LANESQUAD512 loads laneWeights' columns.
#define SCOREPRE512 \
	VBROADCASTSS score512<>+0(SB), Z16 \
	VBROADCASTSS score512<>+4(SB), Z17 \
	VBROADCASTSS score512<>+8(SB), Z18 \
	VPXORD       Z12, Z12, Z12 \
	VPXORD       Z13, Z13, Z13 \
	LEAQ         S_NE(R8), DI \
	LEAQ         S_L(R8), R9 \
	XORQ         R10, R10 \
quad512:

#define SCOREPOST512 \
	MOVQ  R10, SI \
	SHLQ  $8, SI \
	ADDQ  DX, SI \
	MOVQ  R10, CX \
	TESTQ CX, CX \
	JZ    quant512 \
	LEAQ  S_NE(R8), R11 \
term512: \
	VBROADCASTSS (SI), Z8 \
	VBROADCASTSS 256(SI), Z9 \
	VBROADCASTSS 512(SI), Z14 \
	VBROADCASTSS 768(SI), Z15 \
	TERM512(Z0, Z2, Z4, Z6, 0) \
	TERM512(Z1, Z3, Z5, Z7, 64) \
	ADDQ         $4, SI \
	ADDQ         $128, R11 \
	DECQ         CX \
	JNZ          term512 \
quant512: \
	VBROADCASTSS (BX)(R10*4), Z8 \
	LANES512(Z0, Z12, 0) \
	LANES512(Z1, Z13, 64) \
	NEXT512(Z2, Z3, 256) \
	NEXT512(Z4, Z5, 512) \
	NEXT512(Z6, Z7, 768) \
	ADDQ         $128, DI \
	ADDQ         $128, R9 \
	VBROADCASTSS 4(BX)(R10*4), Z8 \
	LANES512(Z2, Z12, 0) \
	LANES512(Z3, Z13, 64) \
	NEXT512(Z4, Z5, 516) \
	NEXT512(Z6, Z7, 772) \
	ADDQ         $128, DI \
	ADDQ         $128, R9 \
	VBROADCASTSS 8(BX)(R10*4), Z8 \
	LANES512(Z4, Z12, 0) \
	LANES512(Z5, Z13, 64) \
	NEXT512(Z6, Z7, 776) \
	ADDQ         $128, DI \
	ADDQ         $128, R9 \
	VBROADCASTSS 12(BX)(R10*4), Z8 \
	LANES512(Z6, Z12, 0) \
	LANES512(Z7, Z13, 64) \
	ADDQ $128, DI \
	ADDQ $128, R9 \
	ADDQ $4, R10 \
	CMPQ R10, $64 \
	JLT  quad512 \
	VMOVUPS Z12, S_LOSS(R8) \
	VMOVUPS Z13, (S_LOSS+64)(R8) \
	VZEROUPPER \
	RET

// func scoreGroupAVX512(w, invDiag, bandT *float32, s *groupScore)
// scoreGroupGo with the 32 lanes in two ZMM registers and the columns in
// fours k..k+3 (eight independent sums): the four compensated weights
// gather the terms of the columns before k together, then each column of
// the quad is quantized in order and its term added to the later ones.
// Every sum keeps scoreGroupGo's order.
TEXT ·scoreGroupAVX512(SB), NOSPLIT, $0-32
	MOVQ         w+0(FP), AX
	MOVQ         invDiag+8(FP), BX
	MOVQ         bandT+16(FP), DX
	MOVQ         s+24(FP), R8
	SCOREPRE512
	ROWSQUAD512(AX)
	SCOREPOST512

// func scoreLanesAVX512(w, invDiag, bandT *float32, s *groupScore)
// scoreLaneRowsGo: scoreGroupAVX512 with each lane's own row.
TEXT ·scoreLanesAVX512(SB), NOSPLIT, $0-32
	MOVQ         w+0(FP), AX
	MOVQ         invDiag+8(FP), BX
	MOVQ         bandT+16(FP), DX
	MOVQ         s+24(FP), R8
	SCOREPRE512
	LANESQUAD512(AX)
	SCOREPOST512

// func absMaxBits64AVX2(v *float32) uint32
// The largest of v's 64 values' bits with the sign cleared (VPAND, then a
// VPMAXUD tree: the order of an unsigned max does not matter).
TEXT ·absMaxBits64AVX2(SB), NOSPLIT, $0-12
	MOVQ         v+0(FP), SI
	VPCMPEQD     Y15, Y15, Y15
	VPSRLD       $1, Y15, Y15
	VPAND        (SI), Y15, Y0
	VPAND        32(SI), Y15, Y1
	VPAND        64(SI), Y15, Y2
	VPAND        96(SI), Y15, Y3
	VPAND        128(SI), Y15, Y4
	VPAND        160(SI), Y15, Y5
	VPAND        192(SI), Y15, Y6
	VPAND        224(SI), Y15, Y7
	VPMAXUD      Y1, Y0, Y0
	VPMAXUD      Y3, Y2, Y2
	VPMAXUD      Y5, Y4, Y4
	VPMAXUD      Y7, Y6, Y6
	VPMAXUD      Y2, Y0, Y0
	VPMAXUD      Y6, Y4, Y4
	VPMAXUD      Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD      X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPMAXUD      X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPMAXUD      X1, X0, X0
	VMOVD        X0, AX
	MOVL         AX, ret+8(FP)
	VZEROUPPER
	RET

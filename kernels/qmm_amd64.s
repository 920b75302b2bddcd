//go:build amd64 && !noasm

#include "textflag.h"
#include "qmm_amd64.h"

// q8dotTile2AVX2 is q8dotDecodedAVX2 (qdot_amd64.s) for two activation
// rows at once, over the rows of a tile: each decoded weight sub-block is loaded, its absolute value
// and multiplier formed once, and multiplied with both rows' codes. Per
// group and row: 8 exact int32 sums (lane j = sub-block j), converted to
// float32, times (dw_j * dx_j), added to that row's lanes, as DotQ8 does.
// VPSIGNB moves the weights' signs onto the activations (never -128), so
// VPMADDUBSW multiplies |w| (at most 128) by signed x exactly (pair sums
// at most 2*128*127); VPMADDWD by the multiplier (at most 31) sums pairs
// exactly in int32.
//
// Registers: SI weights, R9 multipliers, R10 weight scales, DI and R12 the
// rows' codes, DX and R13 their scales, CX groups left, R11 and R8 the
// lanes; Y12 and Y14 the two rows' lanes; Y4..Y7 and Y8..Y11 the rows'
// partial sums (reduced as they come, as REDUCE8 does); Y0..Y3 and Y13
// temporaries.

// SUB2(j, P0, P1): P0, P1 = 8 int32 partial sums of sub-block j against row
// 0 and row 1, times the multiplier.
#define SUB2(j, P0, P1) \
	VMOVDQU (32*j)(SI), Y0 \
	VPSIGNB Y0, Y0, Y2 \
	VPBROADCASTW (2*j)(R9), Y3 \
	VMOVDQU (32*j)(DI), Y1 \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Y2, Y1 \
	VPMADDWD Y3, Y1, P0 \
	VMOVDQU (32*j)(R12), Y1 \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Y2, Y1 \
	VPMADDWD Y3, Y1, P1

// FINISH(C, D, XD, ACC): ACC += float(C|D reduced) * (dw * 8 scales at XD).
#define FINISH(C, D, XD, ACC) \
	VPERM2I128 $0x20, D, C, Y0 \
	VPERM2I128 $0x31, D, C, Y1 \
	VPADDD Y1, Y0, Y0 \
	VCVTDQ2PS Y0, Y0 \
	VMULPS (XD), Y13, Y2 \
	VMULPS Y2, Y0, Y0 \
	VADDPS Y0, ACC, ACC

// HALF2: the first 4 sub-blocks of a group against both rows (the other 4
// decoded as zeros: their sums are left 0).
#define HALF2 \
	SUB2(0, Y4, Y8) \
	SUB2(1, Y5, Y9) \
	VPHADDD Y5, Y4, Y4 \
	VPHADDD Y9, Y8, Y8 \
	SUB2(2, Y6, Y10) \
	SUB2(3, Y7, Y11) \
	VPHADDD Y7, Y6, Y6 \
	VPHADDD Y11, Y10, Y10 \
	VPHADDD Y6, Y4, Y4 \
	VPHADDD Y10, Y8, Y8 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y9, Y9, Y9 \
	VMOVUPS (R10), Y13 \
	FINISH(Y4, Y5, DX, Y12) \
	FINISH(Y8, Y9, R13, Y14)

// FOLD(Y, X, O): the lanes in Y (X its low half) folded as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) and stored as one float32 at O.
#define FOLD(Y, X, O) \
	VEXTRACTF128 $1, Y, X0 \
	VADDPS       X0, X, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1 \
	VADDSS       X1, X0, X0 \
	VMOVSS       X0, O

// func q8dotTile2AVX2(d *q8Decoded, rows, groups, half int, xq0 *int8, xd0 *float32, xq1 *int8, xd1 *float32, l0, l1 *[8]float32, o0, o1 *float32)
//
// For each of rows decoded chunks d[i] (q8Decoded: 2048 weights, then 64
// multipliers at 2048, then 64 scales at 2176, then the halves' 128
// multipliers at 2432; 2688 bytes each): groups
// whole groups and, when half is not 0, the first half of one more, against
// both rows, added to l0[i] and l1[i], or, when o0 is not nil, folded and
// stored to o0[i] and o1[i]. rows >= 1. AX walks the chunks, BX counts the
// rows left, R14 and R15 walk o0 and o1.
TEXT ·q8dotTile2AVX2(SB), NOSPLIT, $0-96
	MOVQ d+0(FP), AX
	MOVQ rows+8(FP), BX
	MOVQ l0+64(FP), R11
	MOVQ l1+72(FP), R8
	MOVQ o0+80(FP), R14
	MOVQ o1+88(FP), R15

tilerow:
	MOVQ AX, SI
	LEAQ 2048(AX), R9
	LEAQ 2176(AX), R10
	MOVQ xq0+32(FP), DI
	MOVQ xd0+40(FP), DX
	MOVQ xq1+48(FP), R12
	MOVQ xd1+56(FP), R13
	MOVQ groups+16(FP), CX
	VMOVUPS (R11), Y12
	VMOVUPS (R8), Y14
	TESTQ CX, CX
	JZ    tilehalf

tileloop:
	TILESUMS(SUB2)
	VMOVUPS (R10), Y13
	FINISH(Y4, Y5, DX, Y12)
	FINISH(Y8, Y9, R13, Y14)
	ADDQ $256, SI
	ADDQ $16, R9
	ADDQ $32, R10
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $256, R12
	ADDQ $32, R13
	DECQ CX
	JNZ  tileloop

tilehalf:
	MOVQ half+24(FP), CX
	TESTQ CX, CX
	JZ    tilestore
	HALF2

tilestore:
	TESTQ R14, R14
	JNZ   tilefold
	VMOVUPS Y12, (R11)
	VMOVUPS Y14, (R8)
	JMP   tilenext

tilefold:
	FOLD(Y12, X12, (R14))
	FOLD(Y14, X14, (R15))
	ADDQ $4, R14
	ADDQ $4, R15

tilenext:
	ADDQ $2688, AX
	ADDQ $32, R11
	ADDQ $32, R8
	DECQ BX
	JNZ  tilerow
	VZEROUPPER
	RET

// SUB2H(j, P0, P1) is SUB2 with a multiplier per 16-weight half: the
// low 128 bits' pair sums (weights 0..15) times mh[2j], the high ones
// (16..31) times mh[2j+1].
#define SUB2H(j, P0, P1) \
	VMOVDQU (32*j)(SI), Y0 \
	VPSIGNB Y0, Y0, Y2 \
	VPBROADCASTW (4*j)(R9), X3 \
	VPBROADCASTW (4*j+2)(R9), X15 \
	VINSERTI128 $1, X15, Y3, Y3 \
	VMOVDQU (32*j)(DI), Y1 \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Y2, Y1 \
	VPMADDWD Y3, Y1, P0 \
	VMOVDQU (32*j)(R12), Y1 \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Y2, Y1 \
	VPMADDWD Y3, Y1, P1

// func q8dotTile2HAVX2(d *q8Decoded, rows, groups int, xq0 *int8, xd0 *float32, xq1 *int8, xd1 *float32, l0, l1 *[8]float32, o0, o1 *float32)
//
// q8dotTile2AVX2 for the types with a multiplier per half (q8Decoded.mh at
// 2432, R9 walking it 32 bytes a group), whole groups only (groups >= 1).
TEXT ·q8dotTile2HAVX2(SB), NOSPLIT, $0-88
	MOVQ d+0(FP), AX
	MOVQ rows+8(FP), BX
	MOVQ l0+56(FP), R11
	MOVQ l1+64(FP), R8
	MOVQ o0+72(FP), R14
	MOVQ o1+80(FP), R15

htilerow:
	MOVQ AX, SI
	LEAQ 2432(AX), R9
	LEAQ 2176(AX), R10
	MOVQ xq0+24(FP), DI
	MOVQ xd0+32(FP), DX
	MOVQ xq1+40(FP), R12
	MOVQ xd1+48(FP), R13
	MOVQ groups+16(FP), CX
	VMOVUPS (R11), Y12
	VMOVUPS (R8), Y14

htileloop:
	TILESUMS(SUB2H)
	VMOVUPS (R10), Y13
	FINISH(Y4, Y5, DX, Y12)
	FINISH(Y8, Y9, R13, Y14)
	ADDQ $256, SI
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $256, R12
	ADDQ $32, R13
	DECQ CX
	JNZ  htileloop

	TESTQ R14, R14
	JNZ   htilefold
	VMOVUPS Y12, (R11)
	VMOVUPS Y14, (R8)
	JMP   htilenext

htilefold:
	FOLD(Y12, X12, (R14))
	FOLD(Y14, X14, (R15))
	ADDQ $4, R14
	ADDQ $4, R15

htilenext:
	ADDQ $2688, AX
	ADDQ $32, R11
	ADDQ $32, R8
	DECQ BX
	JNZ  htilerow
	VZEROUPPER
	RET

// ---- AVX-512 (F, BW, VNNI): the tiles' two-row kernel with VPDPBUSD. Only
// Z0..Z15 are used, so VZEROUPPER leaves no dirty upper state.
//
// Each group's 256 decoded weights of a row are biased to unsigned bytes
// once (w XOR 0x80 = w + 128, Z0..Z3, two sub-blocks a register), and
// VPDPBUSD sums (w + 128) * x four products a dword, exactly, for each of
// the two activation rows (Z4..Z7, Z8..Z11: 8 dwords per sub-block). The
// 64 dwords of both rows reduce to 16 sums (two unpack levels and one
// 128-bit lane level, all exact int32 adds, then one dword permutation:
// row 0's 8 sub-blocks in the low half, row 1's in the high), from which
// 128 x the rows' code sums (Q8Row.sums) come off: sum w*x, each
// sub-block's exact integer. Then, as q8dotTile2AVX2 does per lane: times
// the multiplier (exact in int32), to float32, times (dw * dx), added to
// the lanes, the two rows' lanes in the halves of Z12. The padded
// sub-blocks of a last partial group (zero weights, multiplier and scale,
// against zero codes and sums) add +0, as there.

DATA t2bias<>+0(SB)/8, $0x8080808080808080
DATA t2bias<>+8(SB)/8, $0x8080808080808080
DATA t2bias<>+16(SB)/8, $0x8080808080808080
DATA t2bias<>+24(SB)/8, $0x8080808080808080
DATA t2bias<>+32(SB)/8, $0x8080808080808080
DATA t2bias<>+40(SB)/8, $0x8080808080808080
DATA t2bias<>+48(SB)/8, $0x8080808080808080
DATA t2bias<>+56(SB)/8, $0x8080808080808080
GLOBL t2bias<>(SB), RODATA|NOPTR, $64

// After the lane level the dwords are row 0's sub-blocks 0 2 4 6 1 3 5 7,
// then row 1's: this puts each row's in order.
DATA t2perm<>+0(SB)/8, $0x0000000400000000
DATA t2perm<>+8(SB)/8, $0x0000000500000001
DATA t2perm<>+16(SB)/8, $0x0000000600000002
DATA t2perm<>+24(SB)/8, $0x0000000700000003
DATA t2perm<>+32(SB)/8, $0x0000000c00000008
DATA t2perm<>+40(SB)/8, $0x0000000d00000009
DATA t2perm<>+48(SB)/8, $0x0000000e0000000a
DATA t2perm<>+56(SB)/8, $0x0000000f0000000b
GLOBL t2perm<>(SB), RODATA|NOPTR, $64

// PAIR(A, B): A = the per-lane pair sums of A and B's 128-bit lanes, A's
// two first (Z15 a temporary).
#define PAIR(A, B) \
	VPUNPCKHQDQ B, A, Z15 \
	VPUNPCKLQDQ B, A, A \
	VPADDD Z15, A, A

// QUAD(A, C): A = per 128-bit lane the four sums of A's and C's halves
// (A's pairs then C's).
#define QUAD(A, C) \
	VSHUFPS $0xDD, C, A, Z15 \
	VSHUFPS $0x88, C, A, A \
	VPADDD Z15, A, A

// func q8dotTile2VNNI(d *q8Decoded, rows, groups int, xq0 *int8, xd0 *float32, xs0 *int32, xq1 *int8, xd1 *float32, xs1 *int32, l0, l1 *[8]float32, o0, o1 *float32)
//
// q8dotTile2AVX2 with the rows' code sums (xs0, xs1) and whole groups only
// (groups >= 1, rows >= 1): a half group runs as a whole one over its
// padding. AX walks the chunks, BX counts the rows left, CX is 16 x groups,
// R9 16 x the group (the multipliers' offset; 32 x it, as R9*2, the
// scales', codes sums' and weight scales'), R10 256 x the group (the
// weights' and codes'), R11 4 x the row (its lanes at R11*8, its output at
// R11).
TEXT ·q8dotTile2VNNI(SB), NOSPLIT, $0-104
	MOVQ d+0(FP), AX
	MOVQ rows+8(FP), BX
	MOVQ groups+16(FP), CX
	SHLQ $4, CX
	MOVQ xq0+24(FP), DI
	MOVQ xd0+32(FP), DX
	MOVQ xs0+40(FP), SI
	MOVQ xq1+48(FP), R12
	MOVQ xd1+56(FP), R13
	MOVQ xs1+64(FP), R8
	XORQ R11, R11
	VMOVDQU32 t2bias<>(SB), Z13
	VMOVDQU32 t2perm<>(SB), Z14

vtrow:
	MOVQ l0+72(FP), R14
	MOVQ l1+80(FP), R15
	VMOVUPS (R14)(R11*8), Y12
	VINSERTF64X4 $1, (R15)(R11*8), Z12, Z12
	XORQ R9, R9
	XORQ R10, R10

vtloop:
	VPXORD (AX)(R10*1), Z13, Z0
	VPXORD 64(AX)(R10*1), Z13, Z1
	VPXORD 128(AX)(R10*1), Z13, Z2
	VPXORD 192(AX)(R10*1), Z13, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPDPBUSD (DI)(R10*1), Z0, Z4
	VPDPBUSD 64(DI)(R10*1), Z1, Z5
	VPDPBUSD 128(DI)(R10*1), Z2, Z6
	VPDPBUSD 192(DI)(R10*1), Z3, Z7
	VPDPBUSD (R12)(R10*1), Z0, Z8
	VPDPBUSD 64(R12)(R10*1), Z1, Z9
	VPDPBUSD 128(R12)(R10*1), Z2, Z10
	VPDPBUSD 192(R12)(R10*1), Z3, Z11
	PAIR(Z4, Z5)
	PAIR(Z6, Z7)
	PAIR(Z8, Z9)
	PAIR(Z10, Z11)
	QUAD(Z4, Z6)
	QUAD(Z8, Z10)
	VSHUFI64X2 $0xDD, Z8, Z4, Z15
	VSHUFI64X2 $0x88, Z8, Z4, Z4
	VPADDD Z15, Z4, Z4
	VPERMD Z4, Z14, Z4
	// Less 128 x the codes' sums; times the multipliers.
	VMOVDQU (SI)(R9*2), Y0
	VINSERTI64X4 $1, (R8)(R9*2), Z0, Z0
	VPSLLD $7, Z0, Z0
	VPSUBD Z0, Z4, Z4
	VPMOVSXWD 2048(AX)(R9*1), Y1
	VINSERTI64X4 $1, Y1, Z1, Z1
	VPMULLD Z1, Z4, Z4
	// To float32, times dw * dx, into the lanes.
	VCVTDQ2PS Z4, Z4
	VBROADCASTF64X4 2176(AX)(R9*2), Z2
	VMOVUPS (DX)(R9*2), Y3
	VINSERTF64X4 $1, (R13)(R9*2), Z3, Z3
	VMULPS Z3, Z2, Z2
	VMULPS Z2, Z4, Z4
	VADDPS Z4, Z12, Z12
	ADDQ $16, R9
	ADDQ $256, R10
	CMPQ R9, CX
	JNE  vtloop

	VEXTRACTF64X4 $1, Z12, Y11
	MOVQ o0+88(FP), R14
	TESTQ R14, R14
	JNZ   vtfold
	MOVQ l0+72(FP), R14
	VMOVUPS Y12, (R14)(R11*8)
	VMOVUPS Y11, (R15)(R11*8)
	JMP   vtnext

vtfold:
	FOLD(Y12, X12, (R14)(R11*1))
	MOVQ o1+96(FP), R14
	FOLD(Y11, X11, (R14)(R11*1))

vtnext:
	ADDQ $2688, AX
	ADDQ $4, R11
	DECQ BX
	JNZ  vtrow
	VZEROUPPER
	RET

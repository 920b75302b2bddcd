//go:build amd64 && !noasm

#include "textflag.h"
#include "qmm_amd64.h"
#include "qdot_amd64.h"

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

// ---- AVX-512 (F, BW, VNNI): the tiles' two-input kernel with VPDPBUSD,
// on chunks in plane order. Only Z0..Z15 are used, so VZEROUPPER leaves no
// dirty upper state.
//
// A group's 256 codes as an 8 x 8 matrix of dwords, sub-block s's dword k
// at 8s+k, are transposed to plane order, at 8k+s, so that dword lane s of
// a register holds sub-block s's bytes 4k..4k+3 and VPDPBUSD sums every
// sub-block in its own lane: no reduction across lanes (qmmPlanesAVX512).
// The weights' chunks are transposed once per decode and biased to
// unsigned bytes (w XOR 0x80 = w + 128), each input's codes once per call.
// VPDPBUSD sums (w + 128) * x four products a dword, exactly; 128 x the
// inputs' code sums (Q8Row.sums) come off: sum w*x, each sub-block's exact
// integer. Then, as q8dotTile2AVX2 does per lane: times the multiplier
// (exact in int32), to float32, times (dw * dx), added to the lanes, the
// two inputs' lanes in the halves of Z12. The padded sub-blocks of a last
// partial group (zero weights, multiplier and scale, against zero codes
// and sums) add +0, as there.

// Output register r (planes 2r and 2r+1) lane L is sub-block s = L%8's
// dword k = 2r + L/8; the index picks it from a register pair holding
// sub-blocks s%4 of four (s>>1 & 1 the register, s&1 its half); the pair
// of sub-blocks 0-3 gives lanes s < 4, that of 4-7 lanes s >= 4.
DATA planeidx<>+0(SB)/8, $0x0000000800000000
DATA planeidx<>+8(SB)/8, $0x0000001800000010
DATA planeidx<>+16(SB)/8, $0x0000000800000000
DATA planeidx<>+24(SB)/8, $0x0000001800000010
DATA planeidx<>+32(SB)/8, $0x0000000900000001
DATA planeidx<>+40(SB)/8, $0x0000001900000011
DATA planeidx<>+48(SB)/8, $0x0000000900000001
DATA planeidx<>+56(SB)/8, $0x0000001900000011
GLOBL planeidx<>(SB), RODATA|NOPTR, $64

// PLANE(IDX, OFF): output register IDX's planes, biased, stored at OFF(DI).
#define PLANE(IDX, OFF) \
	VMOVDQA64 IDX, Z8 \
	VPERMI2D Z1, Z0, Z8 \
	VMOVDQA64 IDX, Z9 \
	VPERMI2D Z3, Z2, Z9 \
	VPBLENDMD Z9, Z8, K1, Z8 \
	VPXORD Z13, Z8, Z8 \
	VMOVDQU32 Z8, OFF(DI)

// func qmmPlanesAVX512(src, dst *int8, groups int, bias uint32)
//
// dst's groups = src's in plane order, each byte XOR the low byte of bias
// (bias holds it in every byte); src may be dst. groups >= 1.
TEXT ·qmmPlanesAVX512(SB), NOSPLIT, $0-28
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ groups+16(FP), CX
	MOVL bias+24(FP), AX
	VPBROADCASTD AX, Z13
	// The four outputs' indices: planeidx + 2r to every lane's k.
	VMOVDQU32 planeidx<>(SB), Z4
	MOVL $2, AX
	VPBROADCASTD AX, Z12
	VPADDD Z12, Z4, Z5
	VPADDD Z12, Z5, Z6
	VPADDD Z12, Z6, Z7
	MOVW $0xF0F0, AX
	KMOVW AX, K1

planeloop:
	VMOVDQU32 (SI), Z0
	VMOVDQU32 64(SI), Z1
	VMOVDQU32 128(SI), Z2
	VMOVDQU32 192(SI), Z3
	PLANE(Z4, 0)
	PLANE(Z5, 64)
	PLANE(Z6, 128)
	PLANE(Z7, 192)
	ADDQ $256, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  planeloop
	VZEROUPPER
	RET

// func q8dotTilePlanesVNNI(d *q8Decoded, rows, groups int, xq0 *int8, xd0 *float32, xs0 *int32, xq1 *int8, xd1 *float32, xs1 *int32, l0, l1 *[8]float32, o0, o1 *float32, mul, first int)
//
// q8dotTile2AVX2 on plane-order chunks, whole groups only (groups >= 1,
// rows >= 1; a half group runs as a whole one over its padding): d's
// weights biased and in plane order (qmmPlanesAVX512), xq0 and xq1 the
// inputs' codes in plane order, xs0 and xs1 -128 x their sums per
// sub-block, the multipliers applied only where mul is not 0 (they are 1
// otherwise). Per group and input, from the sums, four VPDPBUSD leave
// sub-block s's sum in lanes s and 8+s (the even and the odd planes); one
// exact add of the halves, both inputs' at once, gives row 0's 8 sums in
// the low half, row 1's in the high. AX walks the chunks, BX counts the
// rows left, CX is 16 x groups, R9 16 x the group (the multipliers'
// offset; 32 x it, as R9*2, the scales', sums' and weight scales'), R10
// 256 x the group (the weights' and codes'), R11 4 x the row (its lanes at
// R11*8, its output at R11).
TEXT ·q8dotTilePlanesVNNI(SB), NOSPLIT, $0-120
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

prow:
	MOVQ l0+72(FP), R14
	MOVQ l1+80(FP), R15
	// The lanes start at +0 on a row's first chunk (first not 0), else
	// from l0 and l1.
	VPXORD Z12, Z12, Z12
	CMPQ first+112(FP), $0
	JNE  pstart
	VMOVUPS (R14)(R11*8), Y12
	VINSERTF64X4 $1, (R15)(R11*8), Z12, Z12

pstart:
	XORQ R9, R9
	XORQ R10, R10

ploop:
	VMOVDQU32 (AX)(R10*1), Z0
	VMOVDQU32 64(AX)(R10*1), Z1
	VMOVDQU32 128(AX)(R10*1), Z2
	VMOVDQU32 192(AX)(R10*1), Z3
	// Z4 and Z8 from -128 x the codes' sums (their upper halves zero).
	VMOVDQU (SI)(R9*2), Y4
	VPXORD Z5, Z5, Z5
	VMOVDQU (R8)(R9*2), Y8
	VPXORD Z9, Z9, Z9
	VPDPBUSD (DI)(R10*1), Z0, Z4
	VPDPBUSD 64(DI)(R10*1), Z1, Z5
	VPDPBUSD (R12)(R10*1), Z0, Z8
	VPDPBUSD 64(R12)(R10*1), Z1, Z9
	VPDPBUSD 128(DI)(R10*1), Z2, Z4
	VPDPBUSD 192(DI)(R10*1), Z3, Z5
	VPDPBUSD 128(R12)(R10*1), Z2, Z8
	VPDPBUSD 192(R12)(R10*1), Z3, Z9
	VPADDD Z5, Z4, Z4
	VPADDD Z9, Z8, Z8
	VSHUFI64X2 $0xEE, Z8, Z4, Z15
	VSHUFI64X2 $0x44, Z8, Z4, Z4
	VPADDD Z15, Z4, Z4
	// Times the multipliers, where they are not all 1.
	CMPQ mul+104(FP), $0
	JEQ  pconv
	VPMOVSXWD 2048(AX)(R9*1), Y1
	VINSERTI64X4 $1, Y1, Z1, Z1
	VPMULLD Z1, Z4, Z4

pconv:
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
	JNE  ploop

	VEXTRACTF64X4 $1, Z12, Y11
	MOVQ o0+88(FP), R14
	TESTQ R14, R14
	JNZ   pfold
	MOVQ l0+72(FP), R14
	VMOVUPS Y12, (R14)(R11*8)
	VMOVUPS Y11, (R15)(R11*8)
	JMP   pnext

pfold:
	FOLD(Y12, X12, (R14)(R11*1))
	MOVQ o1+96(FP), R14
	FOLD(Y11, X11, (R14)(R11*1))

pnext:
	ADDQ $2688, AX
	ADDQ $4, R11
	DECQ BX
	JNZ  prow
	VZEROUPPER
	RET

// ---- The nibble types' decoder to plane order (AVX-512 F, BW, VBMI;
// F16C): a group of 8 IQ4_NL or Q4_0 blocks (18 bytes: fp16 d, 16 bytes
// of nibbles) straight into the plane tiles' layout, weights biased, as
// qmmDecodeNibAVX and qmmPlanesAVX512 leave it. Plane k < 4 of sub-block
// s is the low nibbles of its bytes 4k..4k+3, plane 4+k their high
// nibbles: the bytes of planes 0-1 and 2-3 gathered by VPERMI2B from the
// group's first 128 bytes (block 7's, at 128, by VPERMB under K2 from the
// 64 bytes at 80), each nibble then looked up by VPSHUFB in the biased
// table. Each group prefetches the lines 2 KiB on (the tile's next rows,
// or the row's next groups): the tiles' small batches left the decoder
// waiting on the weights.

// Per output byte 32p' + 4s + j: the source byte 18s + 2 + 4p + j (p =
// p' or 2 + p'), for block 7 its offset in the bytes at 80.
DATA nibplane0<>+0(SB)/8, $0x1716151405040302
DATA nibplane0<>+8(SB)/8, $0x3b3a393829282726
DATA nibplane0<>+16(SB)/8, $0x5f5e5d5c4d4c4b4a
DATA nibplane0<>+24(SB)/8, $0x3332313071706f6e
DATA nibplane0<>+32(SB)/8, $0x1b1a191809080706
DATA nibplane0<>+40(SB)/8, $0x3f3e3d3c2d2c2b2a
DATA nibplane0<>+48(SB)/8, $0x6362616051504f4e
DATA nibplane0<>+56(SB)/8, $0x3736353475747372
GLOBL nibplane0<>(SB), RODATA|NOPTR, $64

DATA nibplane1<>+0(SB)/8, $0x1f1e1d1c0d0c0b0a
DATA nibplane1<>+8(SB)/8, $0x4342414031302f2e
DATA nibplane1<>+16(SB)/8, $0x6766656455545352
DATA nibplane1<>+24(SB)/8, $0x3b3a393879787776
DATA nibplane1<>+32(SB)/8, $0x2322212011100f0e
DATA nibplane1<>+40(SB)/8, $0x4746454435343332
DATA nibplane1<>+48(SB)/8, $0x6b6a696859585756
DATA nibplane1<>+56(SB)/8, $0x3f3e3d3c7d7c7b7a
GLOBL nibplane1<>(SB), RODATA|NOPTR, $64

DATA nibscales<>+0(SB)/8, $0x001b001200090000
DATA nibscales<>+8(SB)/8, $0x003f0036002d0024
GLOBL nibscales<>(SB), RODATA|NOPTR, $16

// NIBPLANES(tail): the weights of the group at SI (its blocks' nibbles
// gathered by the byte indices Z10 and Z11, block 7's from the 64 bytes
// at tail under K2) to plane order at DI, biased through Z15; Z0 and Z1
// keep the group's first 128 bytes for its scales. Z13 holds 0x0f bytes.
#define NIBPLANES(tail) \
	PREFETCHT0 2048(SI) \
	PREFETCHT0 2112(SI) \
	PREFETCHT0 2176(SI) \
	VMOVDQU32 (SI), Z0 \
	VMOVDQU32 64(SI), Z1 \
	VMOVDQU32 tail(SI), Z2 \
	VMOVDQA64 Z10, Z3 \
	VPERMI2B Z1, Z0, Z3 \
	VPERMB Z2, Z10, K2, Z3 \
	VMOVDQA64 Z11, Z4 \
	VPERMI2B Z1, Z0, Z4 \
	VPERMB Z2, Z11, K2, Z4 \
	VPSRLW $4, Z3, Z6 \
	VPSRLW $4, Z4, Z7 \
	VPANDD Z13, Z3, Z3 \
	VPANDD Z13, Z4, Z4 \
	VPANDD Z13, Z6, Z6 \
	VPANDD Z13, Z7, Z7 \
	VPSHUFB Z3, Z15, Z3 \
	VPSHUFB Z4, Z15, Z4 \
	VPSHUFB Z6, Z15, Z6 \
	VPSHUFB Z7, Z15, Z7 \
	VMOVDQU32 Z3, (DI) \
	VMOVDQU32 Z4, 64(DI) \
	VMOVDQU32 Z6, 128(DI) \
	VMOVDQU32 Z7, 192(DI)

// NIBPLANESETUP(t0, t1): the arguments, the biased table (at table), the 0x0f bytes,
// the 16-bit ones in X12, the index tables t0 and t1 in Z10 and Z11, K2
// the lanes of block 7.
#define NIBPLANESETUP(t0, t1) \
	MOVQ w+0(FP), SI \
	MOVQ groups+8(FP), CX \
	MOVQ table+16(FP), AX \
	MOVQ out+24(FP), DI \
	MOVQ m+32(FP), R9 \
	MOVQ dw+40(FP), R11 \
	VBROADCASTI32X4 (AX), Z15 \
	MOVL $0x80808080, AX \
	VPBROADCASTD AX, Z14 \
	VPXORD Z14, Z15, Z15 \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z13 \
	MOVL $0x00010001, AX \
	VPBROADCASTD AX, X12 \
	VMOVDQU32 t0<>(SB), Z10 \
	VMOVDQU32 t1<>(SB), Z11 \
	MOVQ $0xF0000000F0000000, AX \
	KMOVQ AX, K2

// func qmmDecodeNibPlanesAVX512(w *byte, groups int, table *int8, out *int8, m *int16, dw *float32)
TEXT ·qmmDecodeNibPlanesAVX512(SB), NOSPLIT, $0-48
	NIBPLANESETUP(nibplane0, nibplane1)
	VMOVDQU nibscales<>(SB), X9

nibploop:
	NIBPLANES(80)
	VMOVDQA64 Z9, Z5
	VPERMI2W Z1, Z0, Z5
	VCVTPH2PS X5, Y5
	VMOVUPS Y5, (R11)
	VMOVDQU X12, (R9)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $16, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  nibploop
	VZEROUPPER
	RET

// ---- MXFP4 to plane order (AVX-512 F, BW, VBMI; AVX2): a group of 8
// blocks of 17 bytes (the E8M0 exponent e, 16 bytes of nibbles) as the
// nibble types' (NIBPLANES, block 7's nibbles from the 64 bytes at 72), the
// exponents gathered by VPERMI2B and widened, each factor E8M0HALF's
// (quant.E8M0Half) by integer operations.

// Per output byte 32p' + 4s + j: the source byte 17s + 1 + 4p + j (p =
// p' or 2 + p'), for block 7 its offset in the bytes at 72.
DATA mxplane0<>+0(SB)/8, $0x1514131204030201
DATA mxplane0<>+8(SB)/8, $0x3736353426252423
DATA mxplane0<>+16(SB)/8, $0x5958575648474645
DATA mxplane0<>+24(SB)/8, $0x333231306a696867
DATA mxplane0<>+32(SB)/8, $0x1918171608070605
DATA mxplane0<>+40(SB)/8, $0x3b3a39382a292827
DATA mxplane0<>+48(SB)/8, $0x5d5c5b5a4c4b4a49
DATA mxplane0<>+56(SB)/8, $0x373635346e6d6c6b
GLOBL mxplane0<>(SB), RODATA|NOPTR, $64

DATA mxplane1<>+0(SB)/8, $0x1d1c1b1a0c0b0a09
DATA mxplane1<>+8(SB)/8, $0x3f3e3d3c2e2d2c2b
DATA mxplane1<>+16(SB)/8, $0x61605f5e504f4e4d
DATA mxplane1<>+24(SB)/8, $0x3b3a39387271706f
DATA mxplane1<>+32(SB)/8, $0x21201f1e100f0e0d
DATA mxplane1<>+40(SB)/8, $0x434241403231302f
DATA mxplane1<>+48(SB)/8, $0x6564636254535251
DATA mxplane1<>+56(SB)/8, $0x3f3e3d3c76757473
GLOBL mxplane1<>(SB), RODATA|NOPTR, $64

// The exponents' bytes 17s, s = 0..7 (the rest of the 64 bytes unused).
DATA mxexps<>+0(SB)/8, $0x7766554433221100
GLOBL mxexps<>(SB), RODATA|NOPTR, $64

// func qmmDecodeMXFP4PlanesAVX512(w *byte, groups int, table *int8, out *int8, m *int16, dw *float32)
TEXT ·qmmDecodeMXFP4PlanesAVX512(SB), NOSPLIT, $0-48
	NIBPLANESETUP(mxplane0, mxplane1)
	VMOVDQU32 mxexps<>(SB), Z9
	MOVL $1, AX
	VPBROADCASTD AX, Y8

mxploop:
	NIBPLANES(72)
	VMOVDQA64 Z9, Z5
	VPERMI2B Z1, Z0, Z5
	VPMOVZXBD X5, Y5
	E8M0HALF(Y5, Y8, Y6)
	VMOVDQU Y5, (R11)
	VMOVDQU X12, (R9)
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $16, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  mxploop
	VZEROUPPER
	RET

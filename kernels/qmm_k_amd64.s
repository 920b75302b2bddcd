//go:build amd64 && !noasm

#include "textflag.h"
#include "qmm_amd64.h"

// The K-quants' tiles (qmm_k.go): decoders of whole 256-weight blocks (one
// group of 8 sub-blocks each) into kDecoded (Q2_K, Q4_K, Q5_K) or
// q8Decoded's halves layout (Q3_K), and the min tiles' kernel. AVX2 and
// F16C (the fp16 scales by VCVTPH2PS).
//
// kDecoded (KG = kminGroups groups): codes at 0 (256*KG bytes), the
// halves' scales at KDSC and mins KDMN further (16*KG int16 each), d at KDD
// and dmin KDMN further (8*KG float32 each); KDSIZE bytes (qmm_k_amd64.go
// checks the layout). Each decoder walks SI over the blocks, DI over the codes (256 a
// group), R9 over the scales (32 a group; the mins KDMN further) and R11
// over d (32 a group; dmin KDMN further).

#define KG 4
#define KDSC (256*KG)
#define KDMN (32*KG)
#define KDD (320*KG)
#define KDSIZE (384*KG)

DATA qmk03<>+0(SB)/8, $0x0303030303030303
DATA qmk03<>+8(SB)/8, $0x0303030303030303
DATA qmk03<>+16(SB)/8, $0x0303030303030303
DATA qmk03<>+24(SB)/8, $0x0303030303030303
GLOBL qmk03<>(SB), RODATA|NOPTR, $32

DATA qmk04<>+0(SB)/8, $0x0404040404040404
DATA qmk04<>+8(SB)/8, $0x0404040404040404
DATA qmk04<>+16(SB)/8, $0x0404040404040404
DATA qmk04<>+24(SB)/8, $0x0404040404040404
GLOBL qmk04<>(SB), RODATA|NOPTR, $32

DATA qmk0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA qmk0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA qmk0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA qmk0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL qmk0f<>(SB), RODATA|NOPTR, $32

DATA qmk10<>+0(SB)/8, $0x1010101010101010
DATA qmk10<>+8(SB)/8, $0x1010101010101010
DATA qmk10<>+16(SB)/8, $0x1010101010101010
DATA qmk10<>+24(SB)/8, $0x1010101010101010
GLOBL qmk10<>(SB), RODATA|NOPTR, $32

DATA qmk20<>+0(SB)/8, $0x2020202020202020
DATA qmk20<>+8(SB)/8, $0x2020202020202020
GLOBL qmk20<>(SB), RODATA|NOPTR, $16

// qmkq3shifts: Q3_K's high scale bits of scale k are bits 2*(k/4) of byte k%4.
DATA qmkq3shifts<>+0(SB)/8, $0x0000000200000000
DATA qmkq3shifts<>+8(SB)/8, $0x0000000600000004
GLOBL qmkq3shifts<>(SB), RODATA|NOPTR, $16

#define KDPROLOGUE \
	MOVQ w+0(FP), SI \
	MOVQ groups+8(FP), CX \
	MOVQ d+16(FP), DI \
	LEAQ KDSC(DI), R9 \
	LEAQ KDD(DI), R11

// KDFACTORS(doff, moff): d (fp16 at doff(SI)) to 8 float32 at (R11), dmin
// (at moff(SI)) to KDMN(R11).
#define KDFACTORS(doff, moff) \
	VPBROADCASTW doff(SI), X3 \
	VCVTPH2PS X3, Y3 \
	VMOVUPS Y3, (R11) \
	VPBROADCASTW moff(SI), X3 \
	VCVTPH2PS X3, Y3 \
	VMOVUPS Y3, KDMN(R11)

// KDSTEP(lbl): R10 and R13 the steps of KDNEXTV: a group's 256 codes and
// 32 bytes of scales and factors further in d, or, where next (argument at
// 24) is not 0, the next kDecoded (each group a one-block row's chunk).
#define KDSTEP(lbl) \
	MOVQ $256, R10 \
	MOVQ $32, R13 \
	CMPQ next+24(FP), $0 \
	JEQ  lbl \
	MOVQ $KDSIZE, R10 \
	MOVQ $KDSIZE, R13 \
lbl:

#define KDNEXTV(bytes) \
	ADDQ $bytes, SI \
	ADDQ R10, DI \
	ADDQ R13, R9 \
	ADDQ R13, R11 \
	DECQ CX

#define KDNEXT(bytes) \
	ADDQ $bytes, SI \
	ADDQ $256, DI \
	ADDQ $32, R9 \
	ADDQ $32, R11 \
	DECQ CX

// ---- Q2_K: scales[16] (scale low nibble, min high nibble, per 16; k =
// 2*sub-block + half, already the halves' order), qs[64] at 16 (sub-block
// 4h+i: bits 2i of qs[16+32h:]), d at 80, dmin at 82.

// Q2KCODES(h): the 4 sub-blocks of qs half h (Y15 0x03).
#define Q2KCODES(h) \
	VMOVDQU (16+32*h)(SI), Y0 \
	VPAND   Y15, Y0, Y1 \
	VMOVDQU Y1, (128*h)(DI) \
	VPSRLW  $2, Y0, Y1 \
	VPAND   Y15, Y1, Y1 \
	VMOVDQU Y1, (128*h+32)(DI) \
	VPSRLW  $4, Y0, Y1 \
	VPAND   Y15, Y1, Y1 \
	VMOVDQU Y1, (128*h+64)(DI) \
	VPSRLW  $6, Y0, Y1 \
	VPAND   Y15, Y1, Y1 \
	VMOVDQU Y1, (128*h+96)(DI)

// func kminDecodeQ2KAVX2(w *byte, groups int, d *kDecoded)
TEXT ·kminDecodeQ2KAVX2(SB), NOSPLIT, $0-24
	KDPROLOGUE
	VMOVDQU qmk03<>(SB), Y15
	VMOVDQU qmk0f<>(SB), X14
	TESTQ CX, CX
	JZ    q2kdone

q2kloop:
	Q2KCODES(0)
	Q2KCODES(1)
	VMOVDQU   (SI), X0
	VPAND     X14, X0, X1
	VPMOVZXBW X1, Y1
	VMOVDQU   Y1, (R9)
	VPSRLW    $4, X0, X2
	VPAND     X14, X2, X2
	VPMOVZXBW X2, Y2
	VMOVDQU   Y2, KDMN(R9)
	KDFACTORS(80, 82)
	KDNEXT(84)
	JNZ  q2kloop

q2kdone:
	VZEROUPPER
	RET

// ---- Q4_K and Q5_K: d at 0, dmin at 2, scales[12] at 4 (8 six-bit scales
// and mins, ggml's packing), Q5_K's qh[32] at 16, qs[128] at 16 (Q4_K) or
// 48 (Q5_K): sub-block 2c is the low nibbles of qs[32c:], 2c+1 the high,
// plus 16 for bit s of qh[j] (Q5_K).

// K4HALVES: the 8 scales and 8 mins (quant.ScaleMinK4: the 12 bytes as
// words w0, w1, w2; scales 0..3 w0&0x3f.., mins 0..3 w1&0x3f.., scales 4..7
// the low nibbles of w2 with w0's top 2 bits above, mins 4..7 the high
// nibbles of w2 with w1's top 2 bits above), each written for both halves
// of its sub-block: scales at (R9), mins at KDMN(R9). AX, BX, DX, R8, R12
// and X2..X5 clobbered.
#define K4HALVES \
	MOVL  4(SI), AX \
	MOVL  8(SI), BX \
	MOVL  12(SI), DX \
	MOVL  DX, R8 \
	SHRL  $4, R8 \
	ANDL  $0x0f0f0f0f, R8 \
	MOVL  BX, R12 \
	SHRL  $6, R12 \
	ANDL  $0x03030303, R12 \
	SHLL  $4, R12 \
	ORL   R12, R8 \
	ANDL  $0x3f3f3f3f, BX \
	ANDL  $0x0f0f0f0f, DX \
	MOVL  AX, R12 \
	SHRL  $6, R12 \
	ANDL  $0x03030303, R12 \
	SHLL  $4, R12 \
	ORL   R12, DX \
	ANDL  $0x3f3f3f3f, AX \
	VMOVD AX, X2 \
	VPINSRD $1, DX, X2, X2 \
	VPMOVZXBW X2, X2 \
	VPUNPCKLWD X2, X2, X3 \
	VPUNPCKHWD X2, X2, X4 \
	VMOVDQU X3, (R9) \
	VMOVDQU X4, 16(R9) \
	VMOVD BX, X2 \
	VPINSRD $1, R8, X2, X2 \
	VPMOVZXBW X2, X2 \
	VPUNPCKLWD X2, X2, X3 \
	VPUNPCKHWD X2, X2, X4 \
	VMOVDQU X3, KDMN(R9) \
	VMOVDQU X4, (KDMN+16)(R9)

// Q4KPAIR(c): sub-blocks 2c and 2c+1 (Y14 0x0f).
#define Q4KPAIR(c) \
	VMOVDQU (16+32*c)(SI), Y0 \
	VPAND   Y14, Y0, Y1 \
	VMOVDQU Y1, (64*c)(DI) \
	VPSRLW  $4, Y0, Y1 \
	VPAND   Y14, Y1, Y1 \
	VMOVDQU Y1, (64*c+32)(DI)

// func kminDecodeQ4KAVX2(w *byte, groups int, d *kDecoded)
TEXT ·kminDecodeQ4KAVX2(SB), NOSPLIT, $0-24
	KDPROLOGUE
	VMOVDQU qmk0f<>(SB), Y14
	TESTQ CX, CX
	JZ    q4kdone

q4kloop:
	Q4KPAIR(0)
	Q4KPAIR(1)
	Q4KPAIR(2)
	Q4KPAIR(3)
	K4HALVES
	KDFACTORS(0, 2)
	KDNEXT(144)
	JNZ  q4kloop

q4kdone:
	VZEROUPPER
	RET

// Q5KSUB(s, SH, n): sub-block s: its nibbles (in Y1) with bit s of qh (Y13)
// moved to bit 4 by SH n (a 16-bit shift: bit 4 of each byte comes from bit
// s of the same byte), Y12 0x10.
#define Q5KSUB(s, SH, n) \
	SH $n, Y13, Y2 \
	VPAND   Y12, Y2, Y2 \
	VPOR    Y2, Y1, Y1 \
	VMOVDQU Y1, (32*(s))(DI)

// Q5KPAIR(c, SH0, n0, SH1, n1): sub-blocks 2c (low nibbles of qs[32c:]) and
// 2c+1 (high).
#define Q5KPAIR(c, SH0, n0, SH1, n1) \
	VMOVDQU (48+32*c)(SI), Y0 \
	VPAND   Y14, Y0, Y1 \
	Q5KSUB(2*c, SH0, n0) \
	VPSRLW  $4, Y0, Y1 \
	VPAND   Y14, Y1, Y1 \
	Q5KSUB(2*c+1, SH1, n1)

// func kminDecodeQ5KAVX2(w *byte, groups int, d *kDecoded)
TEXT ·kminDecodeQ5KAVX2(SB), NOSPLIT, $0-24
	KDPROLOGUE
	VMOVDQU qmk0f<>(SB), Y14
	VMOVDQU qmk10<>(SB), Y12
	TESTQ CX, CX
	JZ    q5kdone

q5kloop:
	VMOVDQU 16(SI), Y13
	Q5KPAIR(0, VPSLLW, 4, VPSLLW, 3)
	Q5KPAIR(1, VPSLLW, 2, VPSLLW, 1)
	Q5KPAIR(2, VPSRLW, 0, VPSRLW, 1)
	Q5KPAIR(3, VPSRLW, 2, VPSRLW, 3)
	K4HALVES
	KDFACTORS(0, 2)
	KDNEXT(176)
	JNZ  q5kloop

q5kdone:
	VZEROUPPER
	RET

// ---- Q3_K into q8Decoded's halves layout: hmask[32] (bit s of byte j set:
// code j of sub-block s as it is, else 4 less), qs[64] at 32 (as Q2_K's),
// scales[12] at 96 (16 signed 6-bit scales, quant.Q3KScale's packing), d at
// 108. Per block: 256 codes at DI, the 16 scales as int16 at R9 (the
// multipliers of the halves, in order), d eight times at R11.

// Q3KSUB(s, SH, n): sub-block s: bits 2*(s%4) of qs[32*(s/4):] (Y15 0x03),
// with bit s of hmask (Y13) moved to bit 2 by SH n (bit 2 of each byte
// comes from bit s of the same byte), minus 4 (Y14 0x04).
#define Q3KSUB(s, SH, n) \
	VMOVDQU (32+32*(s/4))(SI), Y0 \
	VPSRLW  $(2*(s%4)), Y0, Y0 \
	VPAND   Y15, Y0, Y0 \
	SH $n, Y13, Y1 \
	VPAND   Y14, Y1, Y1 \
	VPOR    Y1, Y0, Y0 \
	VPSUBB  Y14, Y0, Y0 \
	VMOVDQU Y0, (32*s)(DI)

// func qmmDecodeQ3KAVX2(w *byte, groups int, out *int8, mh *int16, dw *float32)
TEXT ·qmmDecodeQ3KAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ mh+24(FP), R9
	MOVQ dw+32(FP), R11
	VMOVDQU qmk03<>(SB), Y15
	VMOVDQU qmk04<>(SB), Y14
	TESTQ CX, CX
	JZ    q3kdone

q3kloop:
	VMOVDQU (SI), Y13
	Q3KSUB(0, VPSLLW, 2)
	Q3KSUB(1, VPSLLW, 1)
	Q3KSUB(2, VPSRLW, 0)
	Q3KSUB(3, VPSRLW, 1)
	Q3KSUB(4, VPSRLW, 2)
	Q3KSUB(5, VPSRLW, 3)
	Q3KSUB(6, VPSRLW, 4)
	Q3KSUB(7, VPSRLW, 5)
	// The scales: low 4 bits (bytes 0..7, then their high nibbles), high
	// 2 bits (bits 2*(k/4) of byte 8+k%4), minus 32.
	VMOVQ   96(SI), X0
	VPSRLW  $4, X0, X1
	VPUNPCKLQDQ X1, X0, X0
	VPAND   qmk0f<>(SB), X0, X0
	VPBROADCASTD 104(SI), X1
	VPSRLVD qmkq3shifts<>(SB), X1, X1
	VPAND   qmk03<>(SB), X1, X1
	VPSLLW  $4, X1, X1
	VPOR    X1, X0, X0
	VPSUBB  qmk20<>(SB), X0, X0
	VPMOVSXBW X0, Y0
	VMOVDQU Y0, (R9)
	VPBROADCASTW 108(SI), X3
	VCVTPH2PS X3, Y3
	VMOVUPS Y3, (R11)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $32, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  q3kloop

q3kdone:
	VZEROUPPER
	RET

// ---- The min tiles' kernel.
//
// KSUB2(j, P0, P1): P0, P1 = 8 int32 partial sums of sub-block j's codes
// (unsigned, at most 31: VPMADDUBSW's pair sums at most 2*31*127, no
// saturation) against input 0's and input 1's codes, the low 128 bits'
// (weights 0..15) times the first half's scale, the high ones' times the
// second's (exact in int32).
#define KSUB2(j, P0, P1) \
	VMOVDQU (32*j)(SI), Y0 \
	VPBROADCASTW (4*j)(R9), X3 \
	VPBROADCASTW (4*j+2)(R9), X15 \
	VINSERTI128 $1, X15, Y3, Y3 \
	VPMADDUBSW (32*j)(DI), Y0, Y1 \
	VPMADDWD Y3, Y1, P0 \
	VPMADDUBSW (32*j)(R12), Y0, Y1 \
	VPMADDWD Y3, Y1, P1

// KFIN(C, D, KX, ACC): A = C|D reduced (8 int32, sub-block order), B = the
// group's 16 mins (KDMN(R9)) times the input's 16 half sums (32(KX)) pairwise;
// ACC += float(A)*(d*dx) - float(B)*(dmin*dx), d at (R10), dmin at
// KDMN(R10), dx at (KX): kTerm's steps, each rounded to float32.
#define KFIN(C, D, KX, ACC) \
	VPERM2I128 $0x20, D, C, Y0 \
	VPERM2I128 $0x31, D, C, Y1 \
	VPADDD Y1, Y0, Y0 \
	VCVTDQ2PS Y0, Y0 \
	VMOVUPS (KX), Y6 \
	VMULPS (R10), Y6, Y2 \
	VMULPS Y2, Y0, Y0 \
	VMOVDQU KDMN(R9), Y1 \
	VPMADDWD 32(KX), Y1, Y1 \
	VCVTDQ2PS Y1, Y1 \
	VMULPS KDMN(R10), Y6, Y2 \
	VMULPS Y2, Y1, Y1 \
	VSUBPS Y1, Y0, Y0 \
	VADDPS Y0, ACC, ACC

// KFOLD(Y, X, O): the lanes in Y (X its low half) folded as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) and stored as one float32 at O.
#define KFOLD(Y, X, O) \
	VEXTRACTF128 $1, Y, X0 \
	VADDPS       X0, X, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1 \
	VADDSS       X1, X0, X0 \
	VMOVSS       X0, O

// func kminTile2AVX2(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)
//
// For each of rows decoded chunks d[i] (KDSIZE bytes apart): groups (>= 1)
// groups against inputs 0 and 1 (codes xq, records kx: 64 bytes a group),
// added to l0[i] and l1[i], or, when o0 is not nil, folded and stored to
// o0[i] and o1[i]. rows >= 1. AX walks the chunks, BX counts the rows
// left, SI the codes, R9 the scales, R10 d, DI and R12 the inputs' codes,
// DX and R13 their records, CX the groups left, R11 and R8 the lanes, R14
// and R15 the outputs; Y12 and Y14 the lanes, Y4..Y11 partial sums.
TEXT ·kminTile2AVX2(SB), NOSPLIT, $0-88
	MOVQ d+0(FP), AX
	MOVQ rows+8(FP), BX
	MOVQ l0+56(FP), R11
	MOVQ l1+64(FP), R8
	MOVQ o0+72(FP), R14
	MOVQ o1+80(FP), R15

ktilerow:
	MOVQ AX, SI
	LEAQ KDSC(AX), R9
	LEAQ KDD(AX), R10
	MOVQ xq0+24(FP), DI
	MOVQ kx0+32(FP), DX
	MOVQ xq1+40(FP), R12
	MOVQ kx1+48(FP), R13
	MOVQ groups+16(FP), CX
	VMOVUPS (R11), Y12
	VMOVUPS (R8), Y14

ktileloop:
	TILESUMS(KSUB2)
	KFIN(Y4, Y5, DX, Y12)
	KFIN(Y8, Y9, R13, Y14)
	ADDQ $256, SI
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $256, DI
	ADDQ $64, DX
	ADDQ $256, R12
	ADDQ $64, R13
	DECQ CX
	JNZ  ktileloop

	TESTQ R14, R14
	JNZ   ktilefold
	VMOVUPS Y12, (R11)
	VMOVUPS Y14, (R8)
	JMP   ktilenext

ktilefold:
	KFOLD(Y12, X12, (R14))
	KFOLD(Y14, X14, (R15))
	ADDQ $4, R14
	ADDQ $4, R15

ktilenext:
	ADDQ $KDSIZE, AX
	ADDQ $32, R11
	ADDQ $32, R8
	DECQ BX
	JNZ  ktilerow
	VZEROUPPER
	RET

// ---- AVX-512 (F, BW, VNNI): the min tiles' kernels on plane-order chunks
// (qmm_amd64.s's plane order: sub-block s's dword k at 8k+s), the decoded
// codes and the inputs' codes transposed by qmmPlanesAVX512 (no bias: the
// codes are unsigned, at most 31). Register r of a group holds planes 2r
// and 2r+1, so VPDPBUSD of registers 0 and 1 sums the first 16 weights of
// sub-block s in lanes s and 8+s, of registers 2 and 3 the last 16: each
// half's exact integer once the register's halves are added. The two
// inputs' sums are gathered into the halves of a register and times the
// scales (exact in int32): A of sub-block s for input 0 in lane s, input 1
// in lane 8+s; B by VPMADDWD of the mins against both inputs' half sums;
// then kTerm's float steps as KFIN's, on both inputs' lanes in the halves
// of Z12. kminTilePlanesVNNI keeps the halves apart (Q2_K: a scale each);
// kminTilePlanes1VNNI, for the types whose halves share their scale (Q4_K,
// Q5_K: sc_0*lo + sc_1*hi = sc_0*(lo + hi)), sums all four registers in one
// accumulator per input. Only Z0..Z15 are used.

// kminscidx: the halves' scales (int16 sc[2s+h] widened to dword 2s+h)
// picked for half 0 (Z13) and half 1 (Z15), sub-block s in lanes s and 8+s.
DATA kminscidx<>+0(SB)/8, $0x0000000200000000
DATA kminscidx<>+8(SB)/8, $0x0000000600000004
DATA kminscidx<>+16(SB)/8, $0x0000000a00000008
DATA kminscidx<>+24(SB)/8, $0x0000000e0000000c
DATA kminscidx<>+32(SB)/8, $0x0000000200000000
DATA kminscidx<>+40(SB)/8, $0x0000000600000004
DATA kminscidx<>+48(SB)/8, $0x0000000a00000008
DATA kminscidx<>+56(SB)/8, $0x0000000e0000000c
DATA kminscidx<>+64(SB)/8, $0x0000000300000001
DATA kminscidx<>+72(SB)/8, $0x0000000700000005
DATA kminscidx<>+80(SB)/8, $0x0000000b00000009
DATA kminscidx<>+88(SB)/8, $0x0000000f0000000d
DATA kminscidx<>+96(SB)/8, $0x0000000300000001
DATA kminscidx<>+104(SB)/8, $0x0000000700000005
DATA kminscidx<>+112(SB)/8, $0x0000000b00000009
DATA kminscidx<>+120(SB)/8, $0x0000000f0000000d
GLOBL kminscidx<>(SB), RODATA|NOPTR, $128

// KPDOT(off, A0, A1): register off/64 of the group's weights against both
// inputs' codes, into A0 (input 0) and A1 (input 1).
#define KPDOT(off, A0, A1) \
	VMOVDQU64 off(SI), Z0 \
	VPDPBUSD  off(DI), Z0, A0 \
	VPDPBUSD  off(R12), Z0, A1

// KPGATHER(A0, A1, S, T): S = the sums of A0's halves in lanes 0-7 and of
// A1's in lanes 8-15 (T clobbered).
#define KPGATHER(A0, A1, S, T) \
	VSHUFI64X2 $0x44, A1, A0, S \
	VSHUFI64X2 $0xee, A1, A0, T \
	VPADDD     T, S, S

// KPFOLD2: both inputs' lanes in Z12 folded (KFOLD's steps, foldLanes'
// order: halves, then pairs, then the two left) in one register, stored to
// (R14) and (R15).
#define KPFOLD2 \
	VSHUFF64X2    $0x31, Z12, Z12, Z0 \
	VADDPS        Z0, Z12, Z0 \
	VPERMILPS     $0x0e, Z0, Z1 \
	VADDPS        Z1, Z0, Z0 \
	VMOVSHDUP     Z0, Z1 \
	VADDPS        Z1, Z0, Z0 \
	VMOVSS        X0, (R14) \
	VEXTRACTF32X4 $2, Z0, X1 \
	VMOVSS        X1, (R15)

// KPNEXT: the pointers to the next group.
#define KPNEXT \
	ADDQ $256, SI \
	ADDQ $32, R9 \
	ADDQ $32, R10 \
	ADDQ $256, DI \
	ADDQ $64, DX \
	ADDQ $256, R12 \
	ADDQ $64, R13 \
	DECQ CX

// KPFIN: Z0 = A of both inputs (int32) to their term, added to Z12 (KFIN's
// steps), and the pointers to the next group (KPNEXT).
#define KPFIN \
	VCVTDQ2PS  Z0, Z0 \
	VMOVUPS    (DX), Y6 \
	VINSERTF64X4 $1, (R13), Z6, Z6 \
	VBROADCASTF64X4 (R10), Z2 \
	VMULPS     Z2, Z6, Z2 \
	VMULPS     Z2, Z0, Z0 \
	VBROADCASTI64X4 KDMN(R9), Z1 \
	VMOVDQU    32(DX), Y3 \
	VINSERTI64X4 $1, 32(R13), Z3, Z3 \
	VPMADDWD   Z3, Z1, Z1 \
	VCVTDQ2PS  Z1, Z1 \
	VBROADCASTF64X4 KDMN(R10), Z2 \
	VMULPS     Z2, Z6, Z2 \
	VMULPS     Z2, Z1, Z1 \
	VSUBPS     Z1, Z0, Z0 \
	VADDPS     Z0, Z12, Z12 \
	KPNEXT

// KPROW: the row's pointers and its lanes into Z12.
#define KPROW \
	MOVQ AX, SI \
	LEAQ KDSC(AX), R9 \
	LEAQ KDD(AX), R10 \
	MOVQ xq0+24(FP), DI \
	MOVQ kx0+32(FP), DX \
	MOVQ xq1+40(FP), R12 \
	MOVQ kx1+48(FP), R13 \
	MOVQ groups+16(FP), CX \
	VMOVUPS (R11), Y12 \
	VINSERTF64X4 $1, (R8), Z12, Z12

#define KPARGS \
	MOVQ d+0(FP), AX \
	MOVQ rows+8(FP), BX \
	MOVQ l0+56(FP), R11 \
	MOVQ l1+64(FP), R8 \
	MOVQ o0+72(FP), R14 \
	MOVQ o1+80(FP), R15

// KQHALVES: the sums of the halves of both inputs' group (registers 0-1 and
// 2-3 apart) times the halves' scales (sign-extended: Q6_K's are signed;
// picked by Z13, Z15), added: A of both inputs in Z0.
#define KQHALVES \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	KPDOT(0, Z4, Z8) \
	KPDOT(64, Z4, Z8) \
	KPDOT(128, Z5, Z9) \
	KPDOT(192, Z5, Z9) \
	KPGATHER(Z4, Z8, Z0, Z1) \
	KPGATHER(Z5, Z9, Z1, Z2) \
	VPMOVSXWD  (R9), Z2 \
	VPERMD     Z2, Z13, Z3 \
	VPERMD     Z2, Z15, Z2 \
	VPMULLD    Z3, Z0, Z0 \
	VPMULLD    Z2, Z1, Z1 \
	VPADDD     Z1, Z0, Z0

// func kminTilePlanesVNNI(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)
//
// kminTile2AVX2's contract and registers, with the codes of d and of the
// inputs in plane order; Z12 the lanes of both inputs, Z4/Z5 input 0's
// sums of registers 0-1 and 2-3, Z8/Z9 input 1's.
TEXT ·kminTilePlanesVNNI(SB), NOSPLIT, $0-88
	KPARGS
	VMOVDQU64 kminscidx<>+0(SB), Z13
	VMOVDQU64 kminscidx<>+64(SB), Z15

kptilerow:
	KPROW

kptileloop:
	KQHALVES
	KPFIN
	JNZ  kptileloop

	TESTQ R14, R14
	JNZ   kptilefold
	VEXTRACTF64X4 $1, Z12, Y14
	VMOVUPS Y12, (R11)
	VMOVUPS Y14, (R8)
	JMP   kptilenext

kptilefold:
	KPFOLD2
	ADDQ $4, R14
	ADDQ $4, R15

kptilenext:
	ADDQ $KDSIZE, AX
	ADDQ $32, R11
	ADDQ $32, R8
	DECQ BX
	JNZ  kptilerow
	VZEROUPPER
	RET

// func kminTilePlanes1VNNI(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)
//
// kminTilePlanesVNNI for halves that share their scale (sc[2s] used): Z4
// input 0's sums of all four registers, Z8 input 1's.
TEXT ·kminTilePlanes1VNNI(SB), NOSPLIT, $0-88
	KPARGS
	VMOVDQU64 kminscidx<>+0(SB), Z13

kp1tilerow:
	KPROW

kp1tileloop:
	VPXORD Z4, Z4, Z4
	VPXORD Z8, Z8, Z8
	KPDOT(0, Z4, Z8)
	KPDOT(64, Z4, Z8)
	KPDOT(128, Z4, Z8)
	KPDOT(192, Z4, Z8)
	KPGATHER(Z4, Z8, Z0, Z1)
	VPMOVZXWD  (R9), Z2
	VPERMD     Z2, Z13, Z3
	VPMULLD    Z3, Z0, Z0
	KPFIN
	JNZ  kp1tileloop

	TESTQ R14, R14
	JNZ   kp1tilefold
	VEXTRACTF64X4 $1, Z12, Y14
	VMOVUPS Y12, (R11)
	VMOVUPS Y14, (R8)
	JMP   kp1tilenext

kp1tilefold:
	KPFOLD2
	ADDQ $4, R14
	ADDQ $4, R15

kp1tilenext:
	ADDQ $KDSIZE, AX
	ADDQ $32, R11
	ADDQ $32, R8
	DECQ BX
	JNZ  kp1tilerow
	VZEROUPPER
	RET

// ---- Q4_K straight to the min tiles' plane order (AVX-512 F): register r
// of a group (planes 2r and 2r+1) lane L is sub-block s = L%8's dword
// k = 2r + L/8, the low (s even) or high (s odd) nibbles of qs's dword
// 8*(s/2) + k: picked from the 128 bytes of qs by VPERMI2D (kq4pidx + 64r),
// shifted by 0 or 4 (kq4pidx + 256), masked; the scales, mins and factors
// as kminDecodeQ4KAVX2 writes them.
DATA kq4pidx<>+0(SB)/8, $0x0000000000000000
DATA kq4pidx<>+8(SB)/8, $0x0000000800000008
DATA kq4pidx<>+16(SB)/8, $0x0000001000000010
DATA kq4pidx<>+24(SB)/8, $0x0000001800000018
DATA kq4pidx<>+32(SB)/8, $0x0000000100000001
DATA kq4pidx<>+40(SB)/8, $0x0000000900000009
DATA kq4pidx<>+48(SB)/8, $0x0000001100000011
DATA kq4pidx<>+56(SB)/8, $0x0000001900000019
DATA kq4pidx<>+64(SB)/8, $0x0000000200000002
DATA kq4pidx<>+72(SB)/8, $0x0000000a0000000a
DATA kq4pidx<>+80(SB)/8, $0x0000001200000012
DATA kq4pidx<>+88(SB)/8, $0x0000001a0000001a
DATA kq4pidx<>+96(SB)/8, $0x0000000300000003
DATA kq4pidx<>+104(SB)/8, $0x0000000b0000000b
DATA kq4pidx<>+112(SB)/8, $0x0000001300000013
DATA kq4pidx<>+120(SB)/8, $0x0000001b0000001b
DATA kq4pidx<>+128(SB)/8, $0x0000000400000004
DATA kq4pidx<>+136(SB)/8, $0x0000000c0000000c
DATA kq4pidx<>+144(SB)/8, $0x0000001400000014
DATA kq4pidx<>+152(SB)/8, $0x0000001c0000001c
DATA kq4pidx<>+160(SB)/8, $0x0000000500000005
DATA kq4pidx<>+168(SB)/8, $0x0000000d0000000d
DATA kq4pidx<>+176(SB)/8, $0x0000001500000015
DATA kq4pidx<>+184(SB)/8, $0x0000001d0000001d
DATA kq4pidx<>+192(SB)/8, $0x0000000600000006
DATA kq4pidx<>+200(SB)/8, $0x0000000e0000000e
DATA kq4pidx<>+208(SB)/8, $0x0000001600000016
DATA kq4pidx<>+216(SB)/8, $0x0000001e0000001e
DATA kq4pidx<>+224(SB)/8, $0x0000000700000007
DATA kq4pidx<>+232(SB)/8, $0x0000000f0000000f
DATA kq4pidx<>+240(SB)/8, $0x0000001700000017
DATA kq4pidx<>+248(SB)/8, $0x0000001f0000001f
DATA kq4pidx<>+256(SB)/8, $0x0000000400000000
DATA kq4pidx<>+264(SB)/8, $0x0000000400000000
DATA kq4pidx<>+272(SB)/8, $0x0000000400000000
DATA kq4pidx<>+280(SB)/8, $0x0000000400000000
DATA kq4pidx<>+288(SB)/8, $0x0000000400000000
DATA kq4pidx<>+296(SB)/8, $0x0000000400000000
DATA kq4pidx<>+304(SB)/8, $0x0000000400000000
DATA kq4pidx<>+312(SB)/8, $0x0000000400000000
GLOBL kq4pidx<>(SB), RODATA|NOPTR, $320

// KQ4PLANE(r, IDX): plane register r from qs in Z0 and Z1.
#define KQ4PLANE(r, IDX) \
	VMOVDQA64 IDX, Z6 \
	VPERMI2D  Z1, Z0, Z6 \
	VPSRLVD   Z12, Z6, Z6 \
	VPANDD    Z13, Z6, Z6 \
	VMOVDQU64 Z6, (64*r)(DI)

// func kminDecodeQ4KPlanesAVX512(w *byte, groups int, d *kDecoded, next int)
TEXT ·kminDecodeQ4KPlanesAVX512(SB), NOSPLIT, $0-32
	KDPROLOGUE
	KDSTEP(q4kpstep)
	VMOVDQU64 kq4pidx<>+0(SB), Z8
	VMOVDQU64 kq4pidx<>+64(SB), Z9
	VMOVDQU64 kq4pidx<>+128(SB), Z10
	VMOVDQU64 kq4pidx<>+192(SB), Z11
	VMOVDQU64 kq4pidx<>+256(SB), Z12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z13
	TESTQ CX, CX
	JZ    q4kpdone

q4kploop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	VMOVDQU64 16(SI), Z0
	VMOVDQU64 80(SI), Z1
	KQ4PLANE(0, Z8)
	KQ4PLANE(1, Z9)
	KQ4PLANE(2, Z10)
	KQ4PLANE(3, Z11)
	K4HALVES
	KDFACTORS(0, 2)
	KDNEXTV(144)
	JNZ  q4kploop

q4kpdone:
	VZEROUPPER
	RET

// ---- Q5_K straight to plane order: Q4_K's nibbles (qs at 48), and bit 4
// of sub-block s's byte j from bit s of qh[j] (at 16): plane register r
// lane L takes qh's dword k = 2r + L/8 (VPERMD by kq5pidx + 64r), rotated
// left by 4 - s (mod 32, kq5pidx + 256) so that bit s of each byte is at
// its bit 4 (a rotation by less than 8 either way moves each byte's bit s
// within the byte), masked by 0x10 and or-ed into the nibbles (VPTERNLOGD
// 0xf8: A | B&C).
DATA kq5pidx<>+0(SB)/8, $0x0000000000000000
DATA kq5pidx<>+8(SB)/8, $0x0000000000000000
DATA kq5pidx<>+16(SB)/8, $0x0000000000000000
DATA kq5pidx<>+24(SB)/8, $0x0000000000000000
DATA kq5pidx<>+32(SB)/8, $0x0000000100000001
DATA kq5pidx<>+40(SB)/8, $0x0000000100000001
DATA kq5pidx<>+48(SB)/8, $0x0000000100000001
DATA kq5pidx<>+56(SB)/8, $0x0000000100000001
DATA kq5pidx<>+64(SB)/8, $0x0000000200000002
DATA kq5pidx<>+72(SB)/8, $0x0000000200000002
DATA kq5pidx<>+80(SB)/8, $0x0000000200000002
DATA kq5pidx<>+88(SB)/8, $0x0000000200000002
DATA kq5pidx<>+96(SB)/8, $0x0000000300000003
DATA kq5pidx<>+104(SB)/8, $0x0000000300000003
DATA kq5pidx<>+112(SB)/8, $0x0000000300000003
DATA kq5pidx<>+120(SB)/8, $0x0000000300000003
DATA kq5pidx<>+128(SB)/8, $0x0000000400000004
DATA kq5pidx<>+136(SB)/8, $0x0000000400000004
DATA kq5pidx<>+144(SB)/8, $0x0000000400000004
DATA kq5pidx<>+152(SB)/8, $0x0000000400000004
DATA kq5pidx<>+160(SB)/8, $0x0000000500000005
DATA kq5pidx<>+168(SB)/8, $0x0000000500000005
DATA kq5pidx<>+176(SB)/8, $0x0000000500000005
DATA kq5pidx<>+184(SB)/8, $0x0000000500000005
DATA kq5pidx<>+192(SB)/8, $0x0000000600000006
DATA kq5pidx<>+200(SB)/8, $0x0000000600000006
DATA kq5pidx<>+208(SB)/8, $0x0000000600000006
DATA kq5pidx<>+216(SB)/8, $0x0000000600000006
DATA kq5pidx<>+224(SB)/8, $0x0000000700000007
DATA kq5pidx<>+232(SB)/8, $0x0000000700000007
DATA kq5pidx<>+240(SB)/8, $0x0000000700000007
DATA kq5pidx<>+248(SB)/8, $0x0000000700000007
DATA kq5pidx<>+256(SB)/8, $0x0000000300000004
DATA kq5pidx<>+264(SB)/8, $0x0000000100000002
DATA kq5pidx<>+272(SB)/8, $0x0000001f00000000
DATA kq5pidx<>+280(SB)/8, $0x0000001d0000001e
DATA kq5pidx<>+288(SB)/8, $0x0000000300000004
DATA kq5pidx<>+296(SB)/8, $0x0000000100000002
DATA kq5pidx<>+304(SB)/8, $0x0000001f00000000
DATA kq5pidx<>+312(SB)/8, $0x0000001d0000001e
GLOBL kq5pidx<>(SB), RODATA|NOPTR, $320

// KQ5PLANE(r, IDX, HIDX): plane register r from qs in Z0 and Z1, qh in Z2.
#define KQ5PLANE(r, IDX, HIDX) \
	VMOVDQA64 IDX, Z6 \
	VPERMI2D  Z1, Z0, Z6 \
	VPSRLVD   Z12, Z6, Z6 \
	VPANDD    Z13, Z6, Z6 \
	VMOVDQU64 HIDX, Z7 \
	VPERMD    Z2, Z7, Z7 \
	VPROLVD   Z14, Z7, Z7 \
	VPTERNLOGD $0xf8, Z15, Z7, Z6 \
	VMOVDQU64 Z6, (64*r)(DI)

// func kminDecodeQ5KPlanesAVX512(w *byte, groups int, d *kDecoded, next int)
TEXT ·kminDecodeQ5KPlanesAVX512(SB), NOSPLIT, $0-32
	KDPROLOGUE
	KDSTEP(q5kpstep)
	VMOVDQU64 kq4pidx<>+0(SB), Z8
	VMOVDQU64 kq4pidx<>+64(SB), Z9
	VMOVDQU64 kq4pidx<>+128(SB), Z10
	VMOVDQU64 kq4pidx<>+192(SB), Z11
	VMOVDQU64 kq4pidx<>+256(SB), Z12
	VMOVDQU64 kq5pidx<>+256(SB), Z14
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z13
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    q5kpdone

q5kploop:
	VMOVDQU64 48(SI), Z0
	VMOVDQU64 112(SI), Z1
	VMOVDQU   16(SI), Y2
	KQ5PLANE(0, Z8, kq5pidx<>+0(SB))
	KQ5PLANE(1, Z9, kq5pidx<>+64(SB))
	KQ5PLANE(2, Z10, kq5pidx<>+128(SB))
	KQ5PLANE(3, Z11, kq5pidx<>+192(SB))
	K4HALVES
	KDFACTORS(0, 2)
	KDNEXTV(176)
	JNZ  q5kploop

q5kpdone:
	VZEROUPPER
	RET

// func kTilePlanesBiasVNNI(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)
//
// kminTilePlanesVNNI for the K-quants without a min (Q6_K): d's codes are
// biased to unsigned, each half's code bias times its scale in d's mins, so
// the sub-block's A is its halves' sums times their scales less the mins
// times the half sums (VPMADDWD), exact; its term float32(A)*(d*dx) added
// to the lanes (kTerm's steps without the min's).
TEXT ·kTilePlanesBiasVNNI(SB), NOSPLIT, $0-88
	KPARGS
	VMOVDQU64 kminscidx<>+0(SB), Z13
	VMOVDQU64 kminscidx<>+64(SB), Z15

kbtilerow:
	KPROW

kbtileloop:
	KQHALVES
	VBROADCASTI64X4 KDMN(R9), Z1
	VMOVDQU    32(DX), Y3
	VINSERTI64X4 $1, 32(R13), Z3, Z3
	VPMADDWD   Z3, Z1, Z1
	VPSUBD     Z1, Z0, Z0
	VCVTDQ2PS  Z0, Z0
	VMOVUPS    (DX), Y6
	VINSERTF64X4 $1, (R13), Z6, Z6
	VBROADCASTF64X4 (R10), Z2
	VMULPS     Z2, Z6, Z2
	VMULPS     Z2, Z0, Z0
	VADDPS     Z0, Z12, Z12
	KPNEXT
	JNZ  kbtileloop

	TESTQ R14, R14
	JNZ   kbtilefold
	VEXTRACTF64X4 $1, Z12, Y14
	VMOVUPS Y12, (R11)
	VMOVUPS Y14, (R8)
	JMP   kbtilenext

kbtilefold:
	KPFOLD2
	ADDQ $4, R14
	ADDQ $4, R15

kbtilenext:
	ADDQ $KDSIZE, AX
	ADDQ $32, R11
	ADDQ $32, R8
	DECQ BX
	JNZ  kbtilerow
	VZEROUPPER
	RET

// ---- Q6_K straight to the tiles' plane order, its codes biased (0..63):
// ql[128], qh[64] at 128, scales[16] (int8) at 192, d at 208. Sub-block s
// (half h = s/4, i = s%4) byte j is the low (i < 2) or high nibble of
// ql[64h + 32*(i%2) + j] and bits 2i, 2i+1 of qh[32h + j] as bits 4-5.
// Plane register r lane L (s = L%8, k = 2r + L/8): ql's dword
// 16h + 8*(i%2) + k by VPERMI2D (kq6pidx + 64r), shifted by 0 or 4
// (kq6pidx + 512), masked; qh's dword 8h + k by VPERMD (kq6pidx + 256 +
// 64r) rotated left by 4 - 2i (mod 32, kq6pidx + 576: bits 2i and 2i+1 of
// each byte to its bits 4 and 5, within the byte), masked by 0x30 and
// or-ed in. The scales sign-extended, the mins 32 times them (the bias),
// d, and dmin 0 (kSub's).
DATA kq6pidx<>+0(SB)/8, $0x0000000800000000
DATA kq6pidx<>+8(SB)/8, $0x0000000800000000
DATA kq6pidx<>+16(SB)/8, $0x0000001800000010
DATA kq6pidx<>+24(SB)/8, $0x0000001800000010
DATA kq6pidx<>+32(SB)/8, $0x0000000900000001
DATA kq6pidx<>+40(SB)/8, $0x0000000900000001
DATA kq6pidx<>+48(SB)/8, $0x0000001900000011
DATA kq6pidx<>+56(SB)/8, $0x0000001900000011
DATA kq6pidx<>+64(SB)/8, $0x0000000a00000002
DATA kq6pidx<>+72(SB)/8, $0x0000000a00000002
DATA kq6pidx<>+80(SB)/8, $0x0000001a00000012
DATA kq6pidx<>+88(SB)/8, $0x0000001a00000012
DATA kq6pidx<>+96(SB)/8, $0x0000000b00000003
DATA kq6pidx<>+104(SB)/8, $0x0000000b00000003
DATA kq6pidx<>+112(SB)/8, $0x0000001b00000013
DATA kq6pidx<>+120(SB)/8, $0x0000001b00000013
DATA kq6pidx<>+128(SB)/8, $0x0000000c00000004
DATA kq6pidx<>+136(SB)/8, $0x0000000c00000004
DATA kq6pidx<>+144(SB)/8, $0x0000001c00000014
DATA kq6pidx<>+152(SB)/8, $0x0000001c00000014
DATA kq6pidx<>+160(SB)/8, $0x0000000d00000005
DATA kq6pidx<>+168(SB)/8, $0x0000000d00000005
DATA kq6pidx<>+176(SB)/8, $0x0000001d00000015
DATA kq6pidx<>+184(SB)/8, $0x0000001d00000015
DATA kq6pidx<>+192(SB)/8, $0x0000000e00000006
DATA kq6pidx<>+200(SB)/8, $0x0000000e00000006
DATA kq6pidx<>+208(SB)/8, $0x0000001e00000016
DATA kq6pidx<>+216(SB)/8, $0x0000001e00000016
DATA kq6pidx<>+224(SB)/8, $0x0000000f00000007
DATA kq6pidx<>+232(SB)/8, $0x0000000f00000007
DATA kq6pidx<>+240(SB)/8, $0x0000001f00000017
DATA kq6pidx<>+248(SB)/8, $0x0000001f00000017
DATA kq6pidx<>+256(SB)/8, $0x0000000000000000
DATA kq6pidx<>+264(SB)/8, $0x0000000000000000
DATA kq6pidx<>+272(SB)/8, $0x0000000800000008
DATA kq6pidx<>+280(SB)/8, $0x0000000800000008
DATA kq6pidx<>+288(SB)/8, $0x0000000100000001
DATA kq6pidx<>+296(SB)/8, $0x0000000100000001
DATA kq6pidx<>+304(SB)/8, $0x0000000900000009
DATA kq6pidx<>+312(SB)/8, $0x0000000900000009
DATA kq6pidx<>+320(SB)/8, $0x0000000200000002
DATA kq6pidx<>+328(SB)/8, $0x0000000200000002
DATA kq6pidx<>+336(SB)/8, $0x0000000a0000000a
DATA kq6pidx<>+344(SB)/8, $0x0000000a0000000a
DATA kq6pidx<>+352(SB)/8, $0x0000000300000003
DATA kq6pidx<>+360(SB)/8, $0x0000000300000003
DATA kq6pidx<>+368(SB)/8, $0x0000000b0000000b
DATA kq6pidx<>+376(SB)/8, $0x0000000b0000000b
DATA kq6pidx<>+384(SB)/8, $0x0000000400000004
DATA kq6pidx<>+392(SB)/8, $0x0000000400000004
DATA kq6pidx<>+400(SB)/8, $0x0000000c0000000c
DATA kq6pidx<>+408(SB)/8, $0x0000000c0000000c
DATA kq6pidx<>+416(SB)/8, $0x0000000500000005
DATA kq6pidx<>+424(SB)/8, $0x0000000500000005
DATA kq6pidx<>+432(SB)/8, $0x0000000d0000000d
DATA kq6pidx<>+440(SB)/8, $0x0000000d0000000d
DATA kq6pidx<>+448(SB)/8, $0x0000000600000006
DATA kq6pidx<>+456(SB)/8, $0x0000000600000006
DATA kq6pidx<>+464(SB)/8, $0x0000000e0000000e
DATA kq6pidx<>+472(SB)/8, $0x0000000e0000000e
DATA kq6pidx<>+480(SB)/8, $0x0000000700000007
DATA kq6pidx<>+488(SB)/8, $0x0000000700000007
DATA kq6pidx<>+496(SB)/8, $0x0000000f0000000f
DATA kq6pidx<>+504(SB)/8, $0x0000000f0000000f
DATA kq6pidx<>+512(SB)/8, $0x0000000000000000
DATA kq6pidx<>+520(SB)/8, $0x0000000400000004
DATA kq6pidx<>+528(SB)/8, $0x0000000000000000
DATA kq6pidx<>+536(SB)/8, $0x0000000400000004
DATA kq6pidx<>+544(SB)/8, $0x0000000000000000
DATA kq6pidx<>+552(SB)/8, $0x0000000400000004
DATA kq6pidx<>+560(SB)/8, $0x0000000000000000
DATA kq6pidx<>+568(SB)/8, $0x0000000400000004
DATA kq6pidx<>+576(SB)/8, $0x0000000200000004
DATA kq6pidx<>+584(SB)/8, $0x0000001e00000000
DATA kq6pidx<>+592(SB)/8, $0x0000000200000004
DATA kq6pidx<>+600(SB)/8, $0x0000001e00000000
DATA kq6pidx<>+608(SB)/8, $0x0000000200000004
DATA kq6pidx<>+616(SB)/8, $0x0000001e00000000
DATA kq6pidx<>+624(SB)/8, $0x0000000200000004
DATA kq6pidx<>+632(SB)/8, $0x0000001e00000000
GLOBL kq6pidx<>(SB), RODATA|NOPTR, $640

// KQ6PLANE(r, IDX, HIDX): plane register r from ql in Z0 and Z1, qh in Z2.
#define KQ6PLANE(r, IDX, HIDX) \
	VMOVDQA64 IDX, Z6 \
	VPERMI2D  Z1, Z0, Z6 \
	VPSRLVD   Z12, Z6, Z6 \
	VPANDD    Z13, Z6, Z6 \
	VPERMD    Z2, HIDX, Z7 \
	VPROLVD   Z14, Z7, Z7 \
	VPTERNLOGD $0xf8, Z15, Z7, Z6 \
	VMOVDQU64 Z6, (64*r)(DI)

// func kDecodeQ6KPlanesAVX512(w *byte, groups int, d *kDecoded, next int)
TEXT ·kDecodeQ6KPlanesAVX512(SB), NOSPLIT, $0-32
	KDPROLOGUE
	KDSTEP(q6kpstep)
	VMOVDQU64 kq6pidx<>+0(SB), Z8
	VMOVDQU64 kq6pidx<>+64(SB), Z9
	VMOVDQU64 kq6pidx<>+128(SB), Z10
	VMOVDQU64 kq6pidx<>+192(SB), Z11
	VMOVDQU64 kq6pidx<>+256(SB), Z16
	VMOVDQU64 kq6pidx<>+320(SB), Z17
	VMOVDQU64 kq6pidx<>+384(SB), Z18
	VMOVDQU64 kq6pidx<>+448(SB), Z19
	VMOVDQU64 kq6pidx<>+512(SB), Z12
	VMOVDQU64 kq6pidx<>+576(SB), Z14
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z13
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z15
	VPXOR Y4, Y4, Y4
	TESTQ CX, CX
	JZ    q6kpdone

q6kploop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	KQ6PLANE(0, Z8, Z16)
	KQ6PLANE(1, Z9, Z17)
	KQ6PLANE(2, Z10, Z18)
	KQ6PLANE(3, Z11, Z19)
	VPMOVSXBW 192(SI), Y3
	VMOVDQU   Y3, (R9)
	VPSLLW    $5, Y3, Y3
	VMOVDQU   Y3, KDMN(R9)
	VPBROADCASTW 208(SI), X3
	VCVTPH2PS X3, Y3
	VMOVUPS   Y3, (R11)
	VMOVUPS   Y4, KDMN(R11)
	KDNEXTV(210)
	JNZ  q6kploop

q6kpdone:
	VZEROUPPER
	RET

// func kminTile1GVNNI(d *kDecoded, rows int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, o0, o1 *float32, kind int)
//
// The plane tiles for rows of one group (a 256-weight row: the whole row
// one chunk, the lanes starting at +0 and folded at once): each of rows
// decoded chunks (KDSIZE bytes apart) against both inputs, whose codes
// (Z16-Z19, Z20-Z23), scales (Z6) and half sums (Z7) stay in registers for
// all rows, the folded sums stored to o0[i] and o1[i]. kind 0: halves of
// one scale (Q4_K, Q5_K); 1: halves of their own scales with a min (Q2_K);
// 2: halves of their own scales, codes biased (Q6_K): the steps of
// kminTilePlanes1VNNI, kminTilePlanesVNNI and kTilePlanesBiasVNNI. AX walks
// the chunks, BX counts the rows, R14 and R15 the outputs, CX the kind.
TEXT ·kminTile1GVNNI(SB), NOSPLIT, $0-72
	MOVQ d+0(FP), AX
	MOVQ rows+8(FP), BX
	MOVQ xq0+16(FP), SI
	MOVQ kx0+24(FP), DX
	MOVQ xq1+32(FP), DI
	MOVQ kx1+40(FP), R13
	MOVQ o0+48(FP), R14
	MOVQ o1+56(FP), R15
	MOVQ kind+64(FP), CX
	VMOVDQU64 0(SI), Z16
	VMOVDQU64 64(SI), Z17
	VMOVDQU64 128(SI), Z18
	VMOVDQU64 192(SI), Z19
	VMOVDQU64 0(DI), Z20
	VMOVDQU64 64(DI), Z21
	VMOVDQU64 128(DI), Z22
	VMOVDQU64 192(DI), Z23
	VMOVUPS      (DX), Y6
	VINSERTF64X4 $1, (R13), Z6, Z6
	VMOVDQU      32(DX), Y7
	VINSERTI64X4 $1, 32(R13), Z7, Z7
	VMOVDQU64 kminscidx<>+0(SB), Z13
	VMOVDQU64 kminscidx<>+64(SB), Z15
	VPXORD    Z11, Z11, Z11

k1grow:
	VMOVDQU64 (AX), Z24
	VMOVDQU64 64(AX), Z25
	VMOVDQU64 128(AX), Z26
	VMOVDQU64 192(AX), Z27
	VPMOVSXWD KDSC(AX), Z2
	TESTQ CX, CX
	JNZ   k1ghalves
	VPXORD   Z4, Z4, Z4
	VPXORD   Z8, Z8, Z8
	VPDPBUSD Z16, Z24, Z4
	VPDPBUSD Z20, Z24, Z8
	VPDPBUSD Z17, Z25, Z4
	VPDPBUSD Z21, Z25, Z8
	VPDPBUSD Z18, Z26, Z4
	VPDPBUSD Z22, Z26, Z8
	VPDPBUSD Z19, Z27, Z4
	VPDPBUSD Z23, Z27, Z8
	KPGATHER(Z4, Z8, Z0, Z1)
	VPERMD   Z2, Z13, Z3
	VPMULLD  Z3, Z0, Z0
	JMP      k1gsums

k1ghalves:
	VPXORD   Z4, Z4, Z4
	VPXORD   Z5, Z5, Z5
	VPXORD   Z8, Z8, Z8
	VPXORD   Z9, Z9, Z9
	VPDPBUSD Z16, Z24, Z4
	VPDPBUSD Z20, Z24, Z8
	VPDPBUSD Z17, Z25, Z4
	VPDPBUSD Z21, Z25, Z8
	VPDPBUSD Z18, Z26, Z5
	VPDPBUSD Z22, Z26, Z9
	VPDPBUSD Z19, Z27, Z5
	VPDPBUSD Z23, Z27, Z9
	KPGATHER(Z4, Z8, Z0, Z1)
	KPGATHER(Z5, Z9, Z1, Z3)
	VPERMD   Z2, Z13, Z3
	VPERMD   Z2, Z15, Z2
	VPMULLD  Z3, Z0, Z0
	VPMULLD  Z2, Z1, Z1
	VPADDD   Z1, Z0, Z0

k1gsums:
	VBROADCASTI64X4 (KDSC+KDMN)(AX), Z1
	VPMADDWD        Z7, Z1, Z1
	VBROADCASTF64X4 KDD(AX), Z2
	VMULPS          Z2, Z6, Z2
	CMPQ CX, $2
	JNE  k1gmin
	VPSUBD    Z1, Z0, Z0
	VCVTDQ2PS Z0, Z0
	VMULPS    Z2, Z0, Z0
	JMP  k1gfold

k1gmin:
	VCVTDQ2PS Z0, Z0
	VMULPS    Z2, Z0, Z0
	VCVTDQ2PS Z1, Z1
	VBROADCASTF64X4 (KDD+KDMN)(AX), Z2
	VMULPS    Z2, Z6, Z2
	VMULPS    Z2, Z1, Z1
	VSUBPS    Z1, Z0, Z0

k1gfold:
	VADDPS Z0, Z11, Z12
	KPFOLD2
	ADDQ $KDSIZE, AX
	ADDQ $4, R14
	ADDQ $4, R15
	DECQ BX
	JNZ  k1grow
	VZEROUPPER
	RET

//go:build amd64 && !noasm

#include "textflag.h"

// The DotQ8 kernels (qdot.go's order). Each loop iteration takes 8
// sub-blocks of 32 weights: 8 exact int32 dot products, reduced to one
// vector of 8 sums (lane j = sub-block j), converted to float32, times
// (dw_j * dx_j), added to the 8 lane accumulators in Y12. The weights are
// signed bytes; VPSIGNB moves their signs onto the activations (never -128,
// see Q8Row) so VPMADDUBSW multiplies |w| by signed x exactly (pair sums at
// most 2*128*127, no saturation).
//
// Registers: SI weights, DI activation codes, DX activation scales, BX
// activation block sums, CX groups left, R8 lanes; Y15 16-bit ones; Y12
// accumulators; Y4..Y11 the 8 sums; Y0..Y3, Y13, Y14 temporaries.

#include "qdot_amd64.h"

// SUMUNSIGNED: the same for w unsigned (Y0, 0..3) and signed x.
#define SUMUNSIGNED(xoff, Yout) \
	VPMADDUBSW xoff(DI), Y0, Y2 \
	VPMADDWD Y15, Y2, Yout

// ACCUMULATE: Y12 += float(Y0) * (X13's 8 fp16 weight scales * 8 scales at DX).
#define ACCUMULATE \
	VCVTDQ2PS Y0, Y0 \
	VCVTPH2PS X13, Y13 \
	VMULPS (DX), Y13, Y13 \
	VMULPS Y13, Y0, Y0 \
	VADDPS Y0, Y12, Y12

#define PROLOGUE \
	MOVQ w+0(FP), SI \
	MOVQ xq+8(FP), DI \
	MOVQ xd+16(FP), DX \
	MOVQ xs+24(FP), BX \
	MOVQ groups+32(FP), CX \
	MOVQ lanes+40(FP), R8 \
	VMOVDQU q8ones16<>(SB), Y15 \
	VMOVUPS (R8), Y12

#define EPILOGUE \
	VMOVUPS Y12, (R8) \
	VZEROUPPER \
	RET

// Q8_0: block j of the group at 34*j(SI).
#define Q8SUB(j, Yout) \
	VMOVDQU (2+34*j)(SI), Y0 \
	SUMSIGNED(32*j, Yout)

// func q8dotQ8_0AVX2(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32)
TEXT ·q8dotQ8_0AVX2(SB), NOSPLIT, $0-48
	PROLOGUE
	TESTQ CX, CX
	JZ    q8done

q8loop:
	Q8SUB(0, Y4)
	Q8SUB(1, Y5)
	Q8SUB(2, Y6)
	Q8SUB(3, Y7)
	Q8SUB(4, Y8)
	Q8SUB(5, Y9)
	Q8SUB(6, Y10)
	Q8SUB(7, Y11)
	REDUCE8
	SCALES8(34)
	ACCUMULATE
	ADDQ $272, SI
	ADDQ $256, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  q8loop

q8done:
	EPILOGUE

// IQ4_NL and Q4_0: block j at 18*j(SI); X14 is the 16-entry value table.
#define NLSUB(j, Yout) \
	NIB32((2+18*j)(SI)) \
	SUMSIGNED(32*j, Yout)

// func q8dotNib32AVX2(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32, table *int8)
TEXT ·q8dotNib32AVX2(SB), NOSPLIT, $0-56
	PROLOGUE
	MOVQ    table+48(FP), AX
	VMOVDQU (AX), X14
	TESTQ   CX, CX
	JZ      nldone

nlloop:
	NLSUB(0, Y4)
	NLSUB(1, Y5)
	NLSUB(2, Y6)
	NLSUB(3, Y7)
	NLSUB(4, Y8)
	NLSUB(5, Y9)
	NLSUB(6, Y10)
	NLSUB(7, Y11)
	REDUCE8
	SCALES8(18)
	ACCUMULATE
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  nlloop

nldone:
	EPILOGUE

// Q2NEXT: the 8 sub-blocks' scales (each block's d twice) into the
// accumulators, then on to the next group of 4 blocks.
#define Q2NEXT \
	MOVWLZX 0(SI), AX \
	VMOVD   AX, X13 \
	VPINSRW $1, 0(SI), X13, X13 \
	VPINSRW $2, 18(SI), X13, X13 \
	VPINSRW $3, 18(SI), X13, X13 \
	VPINSRW $4, 36(SI), X13, X13 \
	VPINSRW $5, 36(SI), X13, X13 \
	VPINSRW $6, 54(SI), X13, X13 \
	VPINSRW $7, 54(SI), X13, X13 \
	ACCUMULATE \
	ADDQ $72, SI \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $32, BX \
	DECQ CX

// Q2_0: sub-block j is half j%2 of block j/2 (codes at 2+18*(j/2)+8*(j%2)).
// The codes c (0..3) are multiplied unsigned, and sum(c-1)*x is
// sum c*x minus the activation block's code sum (BX).
#define Q2SUB(off, j, Yout) \
	VPBROADCASTD off(SI), X0 \
	VPBROADCASTD (off+4)(SI), X1 \
	VINSERTI128 $1, X1, Y0, Y0 \
	VPSRLVD ·q2shifts(SB), Y0, Y0 \
	VPAND q2three512<>(SB), Y0, Y0 \
	VPSHUFB q2trans512<>(SB), Y0, Y0 \
	SUMUNSIGNED(32*j, Yout)

// func q8dotQ2_0AVX2(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32)
TEXT ·q8dotQ2_0AVX2(SB), NOSPLIT, $0-48
	PROLOGUE
	TESTQ CX, CX
	JZ    q2done

q2loop:
	Q2SUB(2, 0, Y4)
	Q2SUB(10, 1, Y5)
	Q2SUB(20, 2, Y6)
	Q2SUB(28, 3, Y7)
	Q2SUB(38, 4, Y8)
	Q2SUB(46, 5, Y9)
	Q2SUB(56, 6, Y10)
	Q2SUB(64, 7, Y11)
	REDUCE8
	VPSUBD  (BX), Y0, Y0
	Q2NEXT
	JNZ  q2loop

q2done:
	EPILOGUE

// IQ3_S (110-byte blocks of 256: fp16 d, qs[64], qh[8], signs[32],
// scales[4]); a group is one block, its 8 sub-blocks of 32. Registers: SI
// block, DI codes, DX scales, R8 grid, R11 lanes, CX blocks left, R10 the
// sub-block's qh byte. The grid entries are scalar loads (a VPGATHERDD per
// sub-block measured 1.4x slower on this CPU).

// IQ3GRID(off, k): R = iq3s_grid[qs[off] | (qh bit k) << 8].
#define IQ3GRID(off, k, R) \
	MOVBLZX off(SI), R \
	MOVL    R10, BX \
	SHLL    $(8-(k)), BX \
	ANDL    $0x100, BX \
	ORL     BX, R \
	MOVL    (R8)(R*4), R

// IQ3PAIRQ(off, k): AX = grid of k (low dword) and of k+1 (high dword).
#define IQ3PAIRQ(off, k) \
	IQ3GRID(off, k, AX) \
	IQ3GRID(off+1, k+1, R12) \
	SHLQ    $32, R12 \
	ORQ     R12, AX

// IQ3GRIDSIGNS(s): sub-block s of the block at SI: Y0 = its 32 grid bytes,
// Y1 = 0xff where its sign bit is set.
#define IQ3GRIDSIGNS(s) \
	MOVBLZX (66+s)(SI), R10 \
	IQ3PAIRQ(2+8*s, 0) \
	VMOVQ   AX, X0 \
	IQ3PAIRQ(4+8*s, 2) \
	VPINSRQ $1, AX, X0, X0 \
	IQ3PAIRQ(6+8*s, 4) \
	VMOVQ   AX, X1 \
	IQ3PAIRQ(8+8*s, 6) \
	VPINSRQ $1, AX, X1, X1 \
	VINSERTI128 $1, X1, Y0, Y0 \
	VPBROADCASTD (74+4*s)(SI), Y1 \
	VPSHUFB q8sgnshuf<>(SB), Y1, Y1 \
	VPAND   q8sgnbit<>(SB), Y1, Y1 \
	VPCMPEQB q8sgnbit<>(SB), Y1, Y1

// IQ3LS(s): AX = 1 + 2*(sub-block s's scale nibble).
#define IQ3LS(s) \
	MOVBLZX (106+s/2)(SI), AX \
	SHRL    $(4*(s%2)), AX \
	ANDL    $15, AX \
	LEAL    1(AX)(AX*1), AX

#define IQ3Q8SUB(s, Yout) \
	IQ3GRIDSIGNS(s) \
	VMOVDQU (32*s)(DI), Y2 \
	VPXOR   Y1, Y2, Y2 \
	VPSUBB  Y1, Y2, Y2 \
	VPMADDUBSW Y2, Y0, Y0 \
	IQ3LS(s) \
	VMOVD   AX, X3 \
	VPBROADCASTW X3, Y3 \
	VPMADDWD Y3, Y0, Yout

// func q8dotIQ3SAVX2(w *byte, xq *int8, xd *float32, blocks int, lanes *[8]float32, grid *uint32)
TEXT ·q8dotIQ3SAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ lanes+32(FP), R11
	MOVQ grid+40(FP), R8
	VMOVUPS (R11), Y12
	TESTQ CX, CX
	JZ    iq3done

iq3loop:
	IQ3Q8SUB(0, Y4)
	IQ3Q8SUB(1, Y5)
	IQ3Q8SUB(2, Y6)
	IQ3Q8SUB(3, Y7)
	IQ3Q8SUB(4, Y8)
	IQ3Q8SUB(5, Y9)
	IQ3Q8SUB(6, Y10)
	IQ3Q8SUB(7, Y11)
	REDUCE8
	VPBROADCASTW (SI), X13
	ACCUMULATE
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  iq3loop

iq3done:
	VMOVUPS Y12, (R11)
	VZEROUPPER
	RET

// ---- Decoded weights, for DotQ8Rows: a group of 8 sub-blocks as 256
// signed bytes (the integer weights, IQ3_S's without its sub-block scale),
// 8 int16 multipliers (IQ3_S's 1+2*scale, else 1) and 8 float32 scales.

// func q8dotDecodedAVX2(w *int8, m *int16, dw *float32, xq *int8, xd *float32, groups int, lanes *[8]float32)
TEXT ·q8dotDecodedAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ m+8(FP), R9
	MOVQ dw+16(FP), R10
	MOVQ xq+24(FP), DI
	MOVQ xd+32(FP), DX
	MOVQ groups+40(FP), CX
	MOVQ lanes+48(FP), R11
	VMOVUPS (R11), Y12
	TESTQ CX, CX
	JZ    decdone

#define DECSUB(j, Yout) \
	VMOVDQU (32*j)(SI), Y0 \
	VMOVDQU (32*j)(DI), Y1 \
	VPSIGNB Y0, Y0, Y2 \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Y2, Y2 \
	VPBROADCASTW (2*j)(R9), Y3 \
	VPMADDWD Y3, Y2, Yout

decloop:
	DECSUB(0, Y4)
	DECSUB(1, Y5)
	DECSUB(2, Y6)
	DECSUB(3, Y7)
	DECSUB(4, Y8)
	DECSUB(5, Y9)
	DECSUB(6, Y10)
	DECSUB(7, Y11)
	REDUCE8
	VCVTDQ2PS Y0, Y0
	VMOVUPS (R10), Y13
	VMULPS  (DX), Y13, Y13
	VMULPS  Y13, Y0, Y0
	VADDPS  Y0, Y12, Y12
	ADDQ $256, SI
	ADDQ $16, R9
	ADDQ $32, R10
	ADDQ $256, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  decloop

decdone:
	VMOVUPS Y12, (R11)
	VZEROUPPER
	RET

// func q8decodeIQ3SAVX2(w *byte, blocks int, grid *uint32, out *int8, m *int16, dw *float32)
// One group per block: the grid bytes with the signs applied, 1+2*scale
// per sub-block, and d eight times.
TEXT ·q8decodeIQ3SAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ grid+16(FP), R8
	MOVQ out+24(FP), DI
	MOVQ m+32(FP), R9
	MOVQ dw+40(FP), R11
	TESTQ CX, CX
	JZ    iq3ddone

#define IQ3DEC(s) \
	IQ3GRIDSIGNS(s) \
	VPXOR   Y1, Y0, Y0 \
	VPSUBB  Y1, Y0, Y0 \
	VMOVDQU Y0, (32*s)(DI) \
	IQ3LS(s) \
	MOVW    AX, (2*s)(R9)

iq3dloop:
	IQ3DEC(0)
	IQ3DEC(1)
	IQ3DEC(2)
	IQ3DEC(3)
	IQ3DEC(4)
	IQ3DEC(5)
	IQ3DEC(6)
	IQ3DEC(7)
	VPBROADCASTW (SI), X13
	VCVTPH2PS X13, Y13
	VMOVUPS Y13, (R11)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $16, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  iq3dloop

iq3ddone:
	VZEROUPPER
	RET

// ---- AVX-512 (F, BW, VNNI): Q2_0 with one ZMM per block (its 64 codes,
// two sub-blocks) and VPDPBUSD. Only Z0..Z15 are used, so VZEROUPPER
// leaves no dirty upper state. Z14 holds the dword permutation, Z15 the
// shifts.

DATA q2perm512<>+0(SB)/8, $0x0000000000000000
DATA q2perm512<>+8(SB)/8, $0x0000000000000000
DATA q2perm512<>+16(SB)/8, $0x0000000100000001
DATA q2perm512<>+24(SB)/8, $0x0000000100000001
DATA q2perm512<>+32(SB)/8, $0x0000000200000002
DATA q2perm512<>+40(SB)/8, $0x0000000200000002
DATA q2perm512<>+48(SB)/8, $0x0000000300000003
DATA q2perm512<>+56(SB)/8, $0x0000000300000003
GLOBL q2perm512<>(SB), RODATA|NOPTR, $64

DATA ·q2shifts+0(SB)/8, $0x0000000200000000
DATA ·q2shifts+8(SB)/8, $0x0000000600000004
DATA ·q2shifts+16(SB)/8, $0x0000000200000000
DATA ·q2shifts+24(SB)/8, $0x0000000600000004
DATA ·q2shifts+32(SB)/8, $0x0000000200000000
DATA ·q2shifts+40(SB)/8, $0x0000000600000004
DATA ·q2shifts+48(SB)/8, $0x0000000200000000
DATA ·q2shifts+56(SB)/8, $0x0000000600000004
GLOBL ·q2shifts(SB), RODATA|NOPTR, $64

DATA q2three512<>+0(SB)/8, $0x0303030303030303
DATA q2three512<>+8(SB)/8, $0x0303030303030303
DATA q2three512<>+16(SB)/8, $0x0303030303030303
DATA q2three512<>+24(SB)/8, $0x0303030303030303
DATA q2three512<>+32(SB)/8, $0x0303030303030303
DATA q2three512<>+40(SB)/8, $0x0303030303030303
DATA q2three512<>+48(SB)/8, $0x0303030303030303
DATA q2three512<>+56(SB)/8, $0x0303030303030303
GLOBL q2three512<>(SB), RODATA|NOPTR, $64

DATA q2trans512<>+0(SB)/8, $0x0d0905010c080400
DATA q2trans512<>+8(SB)/8, $0x0f0b07030e0a0602
DATA q2trans512<>+16(SB)/8, $0x0d0905010c080400
DATA q2trans512<>+24(SB)/8, $0x0f0b07030e0a0602
DATA q2trans512<>+32(SB)/8, $0x0d0905010c080400
DATA q2trans512<>+40(SB)/8, $0x0f0b07030e0a0602
DATA q2trans512<>+48(SB)/8, $0x0d0905010c080400
DATA q2trans512<>+56(SB)/8, $0x0f0b07030e0a0602
GLOBL q2trans512<>(SB), RODATA|NOPTR, $64

// Q2BLK512(b, Zs, Yhi): block b of the group; Zs's low 8 dwords are the
// partial sums of sub-block 2b, and its high 8 (moved to Yhi) of 2b+1.
#define Q2BLK512(b, Zs, Yhi) \
	VMOVDQU (2+18*b)(SI), X0 \
	VPERMD  Z0, Z14, Z0 \
	VPSRLVD Z15, Z0, Z0 \
	VPANDD  q2three512<>(SB), Z0, Z0 \
	VPSHUFB q2trans512<>(SB), Z0, Z0 \
	VPXORD  Zs, Zs, Zs \
	VPDPBUSD (64*b)(DI), Z0, Zs \
	VEXTRACTI64X4 $1, Zs, Yhi

// func q8dotQ2_0AVX512(w *byte, xq *int8, xd *float32, xs *int32, groups int, lanes *[8]float32)
TEXT ·q8dotQ2_0AVX512(SB), NOSPLIT, $0-48
	PROLOGUE
	VMOVDQU32 q2perm512<>(SB), Z14
	VMOVDQU32 ·q2shifts(SB), Z15
	TESTQ CX, CX
	JZ    q25done

q25loop:
	Q2BLK512(0, Z4, Y5)
	Q2BLK512(1, Z6, Y7)
	Q2BLK512(2, Z8, Y9)
	Q2BLK512(3, Z10, Y11)
	REDUCE8
	VPSUBD  (BX), Y0, Y0
	Q2NEXT
	JNZ  q25loop

q25done:
	EPILOGUE

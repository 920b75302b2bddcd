//go:build amd64 && !noasm

#include "textflag.h"
#include "prefetch_amd64.h"
#include "qdot_amd64.h"

// DotQ8 on IQ4_XS and MXFP4 (qdot.go's order, AVX2): a group is 8
// sub-blocks of 32 nibble weights through a 16-entry value table, 136 bytes
// of weights (one IQ4_XS block, or 8 MXFP4 blocks), each sub-block's factor
// dw given as float32 (the Go side computes them). Registers as in
// qdot_amd64.s: SI weights, DI activation codes, DX activation scales, R9
// weight factors, CX groups left, R8 lanes; X14 the table, Y15 16-bit ones,
// Y12 the lane accumulators, Y4..Y11 the 8 sums.

#define IQPROLOGUE \
	MOVQ    w+0(FP), SI \
	MOVQ    xq+8(FP), DI \
	MOVQ    xd+16(FP), DX \
	MOVQ    dw+24(FP), R9 \
	MOVQ    groups+32(FP), CX \
	MOVQ    lanes+40(FP), R8 \
	MOVQ    table+48(FP), AX \
	VMOVDQU (AX), X14 \
	VMOVDQU q8ones16<>(SB), Y15 \
	VMOVUPS (R8), Y12

// IQACC(st): Y12 += float(Y0) * (8 factors at R9 * 8 activation scales at
// DX), then on to the next group, st bytes on.
#define IQACC(st) \
	VCVTDQ2PS Y0, Y0 \
	VMOVUPS   (R9), Y13 \
	VMULPS    (DX), Y13, Y13 \
	VMULPS    Y13, Y0, Y0 \
	VADDPS    Y0, Y12, Y12 \
	ADDQ      $(st), SI \
	ADDQ      $256, DI \
	ADDQ      $32, DX \
	ADDQ      $32, R9 \
	DECQ      CX

// ---- IQ2_XXS and IQ3_XXS: grid magnitudes (scalar loads, R10 the grid)
// and signs from ksigns_iq2xs (R11) by the four 7-bit fields of a word.

// KSIGNS(woff): Y1 = 0xff where the sign bit is set, for the 32 weights
// whose sign word is at woff(SI). Uses AX, BX, R12.
#define KSIGN(sh) \
	MOVL    BX, AX \
	SHRL    $(sh), AX \
	ANDL    $127, AX \
	MOVBLZX (R11)(AX*1), AX \
	SHLL    $((sh)/7*8), AX \
	ORL     AX, R12

#define KSIGNS(woff) \
	MOVL    woff(SI), BX \
	XORL    R12, R12 \
	KSIGN(0) \
	KSIGN(7) \
	KSIGN(14) \
	KSIGN(21) \
	VMOVD   R12, X1 \
	VPBROADCASTD X1, Y1 \
	VPSHUFB q8sgnshuf<>(SB), Y1, Y1 \
	VPAND   q8sgnbit<>(SB), Y1, Y1 \
	VPCMPEQB q8sgnbit<>(SB), Y1, Y1

// GRIDQ8(s, Yout): Yout = the 8 int32 partial sums of sub-block s: grid
// bytes Y0 (unsigned) times the activations with the signs Y1 moved onto
// them.
#define GRIDQ8(s, Yout) \
	VMOVDQU (32*s)(DI), Y2 \
	VPXOR   Y1, Y2, Y2 \
	VPSUBB  Y1, Y2, Y2 \
	VPMADDUBSW Y2, Y0, Y0 \
	VPMADDWD Y15, Y0, Yout

// IQ2XXSSUB(s, Yout): IQ2_XXS (66-byte blocks: fp16 d, then per sub-block
// 4 grid indices and a sign/scale word).
#define IQ2XXSG(off, R) \
	MOVBLZX off(SI), AX \
	MOVQ    (R10)(AX*8), R

#define IQ2XXSSUB(s, Yout) \
	IQ2XXSG(2+8*s, BX) \
	VMOVQ   BX, X0 \
	IQ2XXSG(3+8*s, BX) \
	VPINSRQ $1, BX, X0, X0 \
	IQ2XXSG(4+8*s, BX) \
	VMOVQ   BX, X3 \
	IQ2XXSG(5+8*s, BX) \
	VPINSRQ $1, BX, X3, X3 \
	VINSERTI128 $1, X3, Y0, Y0 \
	KSIGNS(6+8*s) \
	GRIDQ8(s, Yout)

// IQ3XXSPAIR(off): BX = the grid entries of qs bytes off and off+1.
#define IQ3XXSPAIR(off) \
	MOVBLZX off(SI), AX \
	MOVL    (R10)(AX*4), BX \
	MOVBLZX (off+1)(SI), AX \
	MOVL    (R10)(AX*4), AX \
	SHLQ    $32, AX \
	ORQ     AX, BX

// IQ3XXSSUB(s, Yout): IQ3_XXS (98-byte blocks: fp16 d, qs[64] grid
// indices, 8 sign/scale words).
#define IQ3XXSSUB(s, Yout) \
	IQ3XXSPAIR(2+8*s) \
	VMOVQ   BX, X0 \
	IQ3XXSPAIR(4+8*s) \
	VPINSRQ $1, BX, X0, X0 \
	IQ3XXSPAIR(6+8*s) \
	VMOVQ   BX, X3 \
	IQ3XXSPAIR(8+8*s) \
	VPINSRQ $1, BX, X3, X3 \
	VINSERTI128 $1, X3, Y0, Y0 \
	KSIGNS(66+4*s) \
	GRIDQ8(s, Yout)

// HALVESQ8(s, Yout): GRIDQ8 for IQ2_XS and IQ2_S, whose halves (the two
// 128-bit lanes) have multipliers 1+2*sc_h, sc from the scale byte at
// scoff(SI): VPMADDWD by them instead of ones.
#define HALVESQ8(s, scoff, Yout) \
	MOVBLZX scoff(SI), AX \
	MOVL    AX, BX \
	ANDL    $15, AX \
	LEAL    1(AX)(AX*1), AX \
	SHRL    $4, BX \
	LEAL    1(BX)(BX*1), BX \
	VMOVD   AX, X3 \
	VPBROADCASTW X3, X3 \
	VMOVD   BX, X14 \
	VPBROADCASTW X14, X14 \
	VINSERTI128 $1, X14, Y3, Y3 \
	VMOVDQU (32*s)(DI), Y2 \
	VPXOR   Y1, Y2, Y2 \
	VPSUBB  Y1, Y2, Y2 \
	VPMADDUBSW Y2, Y0, Y0 \
	VPMADDWD Y3, Y0, Yout

// IQ2XSSUB(s, Yout): IQ2_XS (74-byte blocks: fp16 d, 32 words of a 9-bit
// grid index and a 7-bit ksigns index, scales[8]). Uses AX, BX, R12, R13.
#define IQ2XSG(off, R) \
	MOVWLZX off(SI), AX \
	ANDL    $511, AX \
	MOVQ    (R10)(AX*8), R

#define IQ2XSSIGN(off, sh) \
	MOVWLZX off(SI), AX \
	SHRL    $9, AX \
	MOVBLZX (R11)(AX*1), AX \
	SHLL    $(sh), AX \
	ORL     AX, R12

#define IQ2XSSUB(s, Yout) \
	IQ2XSG(2+8*s, BX) \
	VMOVQ   BX, X0 \
	IQ2XSG(4+8*s, BX) \
	VPINSRQ $1, BX, X0, X0 \
	IQ2XSG(6+8*s, BX) \
	VMOVQ   BX, X3 \
	IQ2XSG(8+8*s, BX) \
	VPINSRQ $1, BX, X3, X3 \
	VINSERTI128 $1, X3, Y0, Y0 \
	XORL    R12, R12 \
	IQ2XSSIGN(2+8*s, 0) \
	IQ2XSSIGN(4+8*s, 8) \
	IQ2XSSIGN(6+8*s, 16) \
	IQ2XSSIGN(8+8*s, 24) \
	VMOVD   R12, X1 \
	VPBROADCASTD X1, Y1 \
	VPSHUFB q8sgnshuf<>(SB), Y1, Y1 \
	VPAND   q8sgnbit<>(SB), Y1, Y1 \
	VPCMPEQB q8sgnbit<>(SB), Y1, Y1 \
	HALVESQ8(s, 66+s, Yout)

// IQ2SSUB(s, Yout): IQ2_S (82-byte blocks: fp16 d, qs[32], signs[32],
// qh[8], scales[8]); grid index qs | 2 bits of qh << 8.
#define IQ2SG(s, l, R) \
	MOVBLZX (66+s)(SI), AX \
	SHRL    $(2*(l)), AX \
	ANDL    $3, AX \
	SHLL    $8, AX \
	MOVBLZX (2+4*s+l)(SI), R13 \
	ORL     R13, AX \
	MOVQ    (R10)(AX*8), R

#define IQ2SSUB(s, Yout) \
	IQ2SG(s, 0, BX) \
	VMOVQ   BX, X0 \
	IQ2SG(s, 1, BX) \
	VPINSRQ $1, BX, X0, X0 \
	IQ2SG(s, 2, BX) \
	VMOVQ   BX, X3 \
	IQ2SG(s, 3, BX) \
	VPINSRQ $1, BX, X3, X3 \
	VINSERTI128 $1, X3, Y0, Y0 \
	VPBROADCASTD (34+4*s)(SI), Y1 \
	VPSHUFB q8sgnshuf<>(SB), Y1, Y1 \
	VPAND   q8sgnbit<>(SB), Y1, Y1 \
	VPCMPEQB q8sgnbit<>(SB), Y1, Y1 \
	HALVESQ8(s, 74+s, Yout)

// ---- IQ1_S and IQ1_M: the integers 8*grid +- 1 (grid bytes -1, 0, +1 of
// iq1s_grid at R10), signed weights for SUMSIGNED.

// IQ1G(R): R = iq1s_grid[AX], AX the 11-bit index.
#define IQ1G(R) \
	MOVQ    (R10)(AX*8), R

// IQ1TIMES8: Y0 = 8 * Y0 (grid bytes -1, 0, +1), in place.
#define IQ1TIMES8 \
	VPADDB  Y0, Y0, Y0 \
	VPADDB  Y0, Y0, Y0 \
	VPADDB  Y0, Y0, Y0

// IQ1SIDX(s, l): AX = qs[4s+l] | (3 bits l of the sub-block's word) << 8,
// IQ1_S (50-byte blocks: fp16 d, qs[32], 8 words: index highs, scale, sign).
#define IQ1SIDX(s, l) \
	MOVWLZX (34+2*s)(SI), AX \
	SHRL    $(3*(l)), AX \
	ANDL    $7, AX \
	SHLL    $8, AX \
	MOVBLZX (2+4*s+l)(SI), BX \
	ORL     BX, AX

#define IQ1SSUB(s, Yout) \
	IQ1SIDX(s, 0) \
	IQ1G(BX) \
	VMOVQ   BX, X0 \
	IQ1SIDX(s, 1) \
	IQ1G(BX) \
	VPINSRQ $1, BX, X0, X0 \
	IQ1SIDX(s, 2) \
	IQ1G(BX) \
	VMOVQ   BX, X3 \
	IQ1SIDX(s, 3) \
	IQ1G(BX) \
	VPINSRQ $1, BX, X3, X3 \
	VINSERTI128 $1, X3, Y0, Y0 \
	IQ1TIMES8 \
	MOVWLZX (34+2*s)(SI), AX \
	SHRL    $15, AX \
	ADDL    AX, AX \
	NEGL    AX \
	INCL    AX \
	VMOVD   AX, X1 \
	VPBROADCASTB X1, Y1 \
	VPADDB  Y1, Y0, Y0 \
	SUMSIGNED(32*s, Yout)

// IQ1M (56-byte blocks: qs[32], qh[16], 4 scale words). Group g = 4s+l:
// its qh nibble q = qh[g/2] >> 4*(g%2): index qs[g] | (q&7) << 8, delta's
// sign q&8.
#define IQ1MQ(g) \
	MOVBLZX (32+(g)/2)(SI), AX \
	SHRL    $(4*((g)%2)), AX

#define IQ1MIDX(g) \
	IQ1MQ(g) \
	ANDL    $7, AX \
	SHLL    $8, AX \
	MOVBLZX (g)(SI), BX \
	ORL     BX, AX

// IQ1ME(g, sh): R12 |= (1 or -1 by delta's sign) << sh, as a byte.
#define IQ1ME(g, sh) \
	IQ1MQ(g) \
	SHRL    $3, AX \
	ANDL    $1, AX \
	ADDL    AX, AX \
	NEGL    AX \
	INCL    AX \
	ANDL    $0xff, AX \
	SHLL    $(sh), AX \
	ORL     AX, R12

// IQ1MSUB(s, Yout): the two halves' multipliers 1+2*sc from the scale
// word's 3-bit fields 2*(s%2) and 2*(s%2)+1, by VPMADDWD per 128-bit lane.
#define IQ1MSUB(s, Yout) \
	IQ1MIDX(4*s) \
	IQ1G(BX) \
	VMOVQ   BX, X0 \
	IQ1MIDX(4*s+1) \
	IQ1G(BX) \
	VPINSRQ $1, BX, X0, X0 \
	IQ1MIDX(4*s+2) \
	IQ1G(BX) \
	VMOVQ   BX, X3 \
	IQ1MIDX(4*s+3) \
	IQ1G(BX) \
	VPINSRQ $1, BX, X3, X3 \
	VINSERTI128 $1, X3, Y0, Y0 \
	IQ1TIMES8 \
	XORL    R12, R12 \
	IQ1ME(4*s, 0) \
	IQ1ME(4*s+1, 8) \
	IQ1ME(4*s+2, 16) \
	IQ1ME(4*s+3, 24) \
	VMOVD   R12, X1 \
	VPBROADCASTD X1, Y1 \
	VPSHUFB q8sgnshuf<>(SB), Y1, Y1 \
	VPADDB  Y1, Y0, Y0 \
	MOVWLZX (48+2*(s/2))(SI), AX \
	SHRL    $(6*(s%2)), AX \
	MOVL    AX, BX \
	ANDL    $7, AX \
	LEAL    1(AX)(AX*1), AX \
	SHRL    $3, BX \
	ANDL    $7, BX \
	LEAL    1(BX)(BX*1), BX \
	VMOVD   AX, X3 \
	VPBROADCASTW X3, X3 \
	VMOVD   BX, X14 \
	VPBROADCASTW X14, X14 \
	VINSERTI128 $1, X14, Y3, Y3 \
	VMOVDQU (32*s)(DI), Y1 \
	VPSIGNB Y0, Y0, Y2 \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Y2, Y2 \
	VPMADDWD Y3, Y2, Yout

#define GRIDPROLOGUE \
	MOVQ    w+0(FP), SI \
	MOVQ    xq+8(FP), DI \
	MOVQ    xd+16(FP), DX \
	MOVQ    dw+24(FP), R9 \
	MOVQ    groups+32(FP), CX \
	MOVQ    lanes+40(FP), R8 \
	MOVQ    grid+48(FP), R10 \
	MOVQ    signs+56(FP), R11 \
	VMOVDQU q8ones16<>(SB), Y15 \
	VMOVUPS (R8), Y12

// IQ4XSSUB, MXFP4SUB(j, Yout): sub-block j's nibbles at 8+16*j (IQ4_XS)
// or 1+17*j (MXFP4) of the group.
#define IQ4XSSUB(j, Yout) \
	NIB32((8+16*j)(SI)) \
	SUMSIGNED(32*j, Yout)

#define MXFP4SUB(j, Yout) \
	NIB32((1+17*j)(SI)) \
	SUMSIGNED(32*j, Yout)

// IQGROUP(SUB, st): one group: sub-blocks 0..7 by SUB into Y4..Y11, their
// sums, and their terms into the lanes; on to the next group, st bytes on.
#define IQGROUP(SUB, st) \
	SUB(0, Y4) \
	SUB(1, Y5) \
	SUB(2, Y6) \
	SUB(3, Y7) \
	SUB(4, Y8) \
	SUB(5, Y9) \
	SUB(6, Y10) \
	SUB(7, Y11) \
	REDUCE8 \
	IQACC(st)

// func q8dotIQ4XSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)
TEXT ·q8dotIQ4XSAVX2(SB), NOSPLIT, $0-56
	IQPROLOGUE

iq4xsloop:
	PFAHEAD3(136)
	IQGROUP(IQ4XSSUB, 136)
	JNZ iq4xsloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotMXFP4AVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)
TEXT ·q8dotMXFP4AVX2(SB), NOSPLIT, $0-56
	IQPROLOGUE

mxfp4loop:
	PFAHEAD3(136)
	IQGROUP(MXFP4SUB, 136)
	JNZ mxfp4loop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ2XXSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)
TEXT ·q8dotIQ2XXSAVX2(SB), NOSPLIT, $0-64
	GRIDPROLOGUE

iq2xxsloop:
	PFAHEAD2(66)
	IQGROUP(IQ2XXSSUB, 66)
	JNZ iq2xxsloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ3XXSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint32, signs *uint8)
TEXT ·q8dotIQ3XXSAVX2(SB), NOSPLIT, $0-64
	GRIDPROLOGUE

iq3xxsloop:
	PFAHEAD2(98)
	IQGROUP(IQ3XXSSUB, 98)
	JNZ iq3xxsloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ2XSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)
TEXT ·q8dotIQ2XSAVX2(SB), NOSPLIT, $0-64
	GRIDPROLOGUE

iq2xsloop:
	PFAHEAD2(74)
	IQGROUP(IQ2XSSUB, 74)
	JNZ iq2xsloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ2SAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)
// (signs unused: IQ2_S stores its sign bits.)
TEXT ·q8dotIQ2SAVX2(SB), NOSPLIT, $0-64
	GRIDPROLOGUE

iq2sloop:
	PFAHEAD2(82)
	IQGROUP(IQ2SSUB, 82)
	JNZ iq2sloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ1SAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)
// (signs unused.)
TEXT ·q8dotIQ1SAVX2(SB), NOSPLIT, $0-64
	GRIDPROLOGUE

iq1sloop:
	PFAHEAD1(50)
	IQGROUP(IQ1SSUB, 50)
	JNZ iq1sloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ1MAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64, signs *uint8)
// (signs unused.)
TEXT ·q8dotIQ1MAVX2(SB), NOSPLIT, $0-64
	GRIDPROLOGUE

iq1mloop:
	PFAHEAD1(56)
	IQGROUP(IQ1MSUB, 56)
	JNZ iq1mloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// ---- The groups' factors for the kernels above (AVX2, F16C), qdot_iq.go's
// iqGroupFactors in vectors: the same float32 operations in the same order
// (each a product or sum of float32s, rounded once), 8 per group at dw.

DATA iqfShift4<>+0(SB)/8, $0x0000000400000000
DATA iqfShift4<>+8(SB)/8, $0x0000000c00000008
DATA iqfShift4<>+16(SB)/8, $0x0000001400000010
DATA iqfShift4<>+24(SB)/8, $0x0000001c00000018
GLOBL iqfShift4<>(SB), RODATA|NOPTR, $32

DATA iqfShift2<>+0(SB)/8, $0x0000000200000000
DATA iqfShift2<>+8(SB)/8, $0x0000000600000004
DATA iqfShift2<>+16(SB)/8, $0x0000000a00000008
DATA iqfShift2<>+24(SB)/8, $0x0000000e0000000c
GLOBL iqfShift2<>(SB), RODATA|NOPTR, $32

DATA iqfNib<>+0(SB)/4, $15
GLOBL iqfNib<>(SB), RODATA|NOPTR, $4

DATA iqfThree<>+0(SB)/4, $3
GLOBL iqfThree<>(SB), RODATA|NOPTR, $4

DATA iqf32<>+0(SB)/4, $32
GLOBL iqf32<>(SB), RODATA|NOPTR, $4

DATA iqfHalf<>+0(SB)/4, $0x3f000000
GLOBL iqfHalf<>(SB), RODATA|NOPTR, $4

DATA iqfQuarter<>+0(SB)/4, $0x3e800000
GLOBL iqfQuarter<>(SB), RODATA|NOPTR, $4

// IQFD: Y13 = the group's d (fp16 at SI) in every lane.
#define IQFD \
	VPBROADCASTW (SI), X13 \
	VCVTPH2PS X13, Y13

// func iqFactorsIQ4XS(w *byte, groups int, dw *float32)
// d * float32(ls - 32), ls the 6-bit scale: its low 4 bits from
// scales_l[ib/2] >> 4*(ib%2), its high 2 from scales_h >> 2*ib.
TEXT ·iqFactorsIQ4XS(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ dw+16(FP), DI
	VPBROADCASTD iqfNib<>(SB), Y14
	VPBROADCASTD iqfThree<>(SB), Y15
	VPBROADCASTD iqf32<>(SB), Y3
	TESTQ CX, CX
	JZ    iq4xsfdone

iq4xsfloop:
	VPBROADCASTD (4)(SI), Y1
	VPSRLVD iqfShift4<>(SB), Y1, Y1
	VPAND   Y14, Y1, Y1
	VPBROADCASTW (2)(SI), Y2
	VPSRLVD iqfShift2<>(SB), Y2, Y2
	VPAND   Y15, Y2, Y2
	VPSLLD  $4, Y2, Y2
	VPOR    Y2, Y1, Y1
	VPSUBD  Y3, Y1, Y1
	VCVTDQ2PS Y1, Y1
	IQFD
	VMULPS  Y1, Y13, Y13
	VMOVUPS Y13, (DI)
	ADDQ $136, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  iq4xsfloop

iq4xsfdone:
	VZEROUPPER
	RET

// func iqFactorsIQ3XXS(w *byte, groups int, dw *float32)
// d * (0.5 + float32(word >> 28)) * 0.5, the 8 words at 66.
TEXT ·iqFactorsIQ3XXS(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ dw+16(FP), DI
	VBROADCASTSS iqfHalf<>(SB), Y14
	TESTQ CX, CX
	JZ    iq3xxsfdone

iq3xxsfloop:
	VMOVDQU (66)(SI), Y1
	VPSRLD  $28, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VADDPS  Y14, Y1, Y1
	IQFD
	VMULPS  Y1, Y13, Y13
	VMULPS  Y14, Y13, Y13
	VMOVUPS Y13, (DI)
	ADDQ $98, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  iq3xxsfloop

iq3xxsfdone:
	VZEROUPPER
	RET

// func iqFactorsIQ2XXS(w *byte, groups int, dw *float32)
// d * (0.5 + float32(word >> 28)) * 0.25, the words at 6+8*ib (the odd
// dwords of the 64 bytes at 2).
TEXT ·iqFactorsIQ2XXS(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ dw+16(FP), DI
	VBROADCASTSS iqfHalf<>(SB), Y14
	VBROADCASTSS iqfQuarter<>(SB), Y15
	TESTQ CX, CX
	JZ    iq2xxsfdone

iq2xxsfloop:
	VMOVDQU (2)(SI), Y1
	VMOVDQU (34)(SI), Y2
	VSHUFPS $0xdd, Y2, Y1, Y1
	VPERMQ  $0xd8, Y1, Y1
	VPSRLD  $28, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VADDPS  Y14, Y1, Y1
	IQFD
	VMULPS  Y1, Y13, Y13
	VMULPS  Y15, Y13, Y13
	VMOVUPS Y13, (DI)
	ADDQ $66, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  iq2xxsfloop

iq2xxsfdone:
	VZEROUPPER
	RET

// NIBDECGROUP(off, st): the 8 sub-blocks of the group at SI, sub-block
// j's 16 nibble bytes at off + st*j, through the value table X14 (NIB32) to
// DI, and the multipliers 1 (R11's words) to R9.
#define NIBDECGROUP(off, st) \
	NIB32((off)(SI)) \
	VMOVDQU Y0, (DI) \
	NIB32((off+st)(SI)) \
	VMOVDQU Y0, 32(DI) \
	NIB32((off+2*st)(SI)) \
	VMOVDQU Y0, 64(DI) \
	NIB32((off+3*st)(SI)) \
	VMOVDQU Y0, 96(DI) \
	NIB32((off+4*st)(SI)) \
	VMOVDQU Y0, 128(DI) \
	NIB32((off+5*st)(SI)) \
	VMOVDQU Y0, 160(DI) \
	NIB32((off+6*st)(SI)) \
	VMOVDQU Y0, 192(DI) \
	NIB32((off+7*st)(SI)) \
	VMOVDQU Y0, 224(DI) \
	MOVQ R11, (R9) \
	MOVQ R11, 8(R9)

// func q8decodeIQ4XSAVX2(w *byte, blocks int, table *int8, out *int8, m *int16)
// The tiles' decoder for IQ4_XS (the factors are the wrapper's,
// iqFactorsIQ4XS): each sub-block's 32 nibble weights through the value
// table (NIB32), and 1 as the 8 multipliers.
TEXT ·q8decodeIQ4XSAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ table+16(FP), AX
	MOVQ out+24(FP), DI
	MOVQ m+32(FP), R9
	VMOVDQU (AX), X14
	MOVQ    $0x0001000100010001, R11
	TESTQ CX, CX
	JZ    iq4xsddone

iq4xsdloop:
	NIBDECGROUP(8, 16)
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $16, R9
	DECQ CX
	JNZ  iq4xsdloop

iq4xsddone:
	VZEROUPPER
	RET

// func q8decodeMXFP4AVX2(w *byte, blocks int, table *int8, out *int8, m *int16)
// The tiles' decoder for MXFP4 (the factors are the wrapper's,
// iqFactorsMXFP4): groups of 8 blocks of 17 bytes, the nibbles at 1.
TEXT ·q8decodeMXFP4AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ table+16(FP), AX
	MOVQ out+24(FP), DI
	MOVQ m+32(FP), R9
	VMOVDQU (AX), X14
	MOVQ    $0x0001000100010001, R11
	TESTQ CX, CX
	JZ    mxfp4ddone

mxfp4dloop:
	NIBDECGROUP(1, 17)
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $16, R9
	DECQ CX
	JNZ  mxfp4dloop

mxfp4ddone:
	VZEROUPPER
	RET

// The offsets of a group's 8 exponents (blocks of 17 bytes).
DATA iqfE8M0At<>+0(SB)/4, $0
DATA iqfE8M0At<>+4(SB)/4, $17
DATA iqfE8M0At<>+8(SB)/4, $34
DATA iqfE8M0At<>+12(SB)/4, $51
DATA iqfE8M0At<>+16(SB)/4, $68
DATA iqfE8M0At<>+20(SB)/4, $85
DATA iqfE8M0At<>+24(SB)/4, $102
DATA iqfE8M0At<>+28(SB)/4, $119
GLOBL iqfE8M0At<>(SB), RODATA|NOPTR, $32

DATA iqfByte<>+0(SB)/4, $255
GLOBL iqfByte<>(SB), RODATA|NOPTR, $4

DATA iqfOne<>+0(SB)/4, $1
GLOBL iqfOne<>(SB), RODATA|NOPTR, $4

// func iqFactorsMXFP4(w *byte, groups int, dw *float32)
// quant.E8M0Half of each block's exponent: the 8 gathered as dwords (the
// 3 bytes after each are the group's), their low bytes kept, E8M0HALF.
TEXT ·iqFactorsMXFP4(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ dw+16(FP), DI
	VMOVDQU iqfE8M0At<>(SB), Y15
	VPBROADCASTD iqfByte<>(SB), Y14
	VPBROADCASTD iqfOne<>(SB), Y13
	TESTQ CX, CX
	JZ    mxfp4fdone

mxfp4floop:
	VPCMPEQD Y2, Y2, Y2
	VPXOR    Y1, Y1, Y1
	VPGATHERDD Y2, (SI)(Y15*1), Y1
	VPAND    Y14, Y1, Y1
	E8M0HALF(Y1, Y13, Y3)
	VMOVDQU  Y1, (DI)
	ADDQ $136, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  mxfp4floop

mxfp4fdone:
	VZEROUPPER
	RET

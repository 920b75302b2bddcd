//go:build amd64 && !noasm

#include "textflag.h"
#include "prefetch_amd64.h"
#include "qdot_amd64.h"
#include "qdot_ksigns_amd64.h"

// The tiles' decoders of IQ2_XS, IQ2_S, IQ1_S and IQ1_M in AVX-512 (F, BW,
// VL; IQ1_M also BMI2): each quarter of a block (two sub-blocks, eight
// groups of 8 weights) gathers its 8 grid entries by one VPGATHERDQ and
// stores the 64 signed weights at DI+64i, as iqHalvesSub and iqWeightSub
// write them (the multipliers and factors are the Go wrappers'):
//
//   IQ2_XS (74 bytes: fp16 d, qs[32] words of a 9-bit grid index and a
//   7-bit sign index, scales[8]): the signs ksigns_iq2xs of the fields
//   (KSIGNS), negating under a mask (the grid's values are at most 43, so
//   the negation is exact).
//   IQ2_S (82 bytes: fp16 d, qs[32], signs[32], qh[8], scales[8]): the index
//   qs | 2 bits of qh << 8, the sign bytes a mask as they are.
//   IQ1_S (50 bytes: fp16 d, qs[32], qh[8] words: 3 index bits per group,
//   the scale, the delta's sign in bit 15) and IQ1_M (56 bytes: qs[32],
//   qh[16] nibbles of 3 index bits and the delta's sign per group, the
//   scale words): 8*grid + 1, less 2 where the delta is negative (iq1Group8;
//   the grid bytes are -1, 0 or 1).
//
// Registers: SI block, CX blocks left, R10 grid, DI weights out, R13 0x01 in
// every byte; Y13 the index bits' shifts, Y14 511 (IQ2_XS), Y15 the index
// bits' mask; Z3 zero, Z12 2 and Z11 1 in every byte; Z0..Z2, AX, BX, R12
// temporaries.

DATA iqlShiftS<>+0(SB)/8, $0x0000000200000000
DATA iqlShiftS<>+8(SB)/8, $0x0000000600000004
DATA iqlShiftS<>+16(SB)/8, $0x0000000a00000008
DATA iqlShiftS<>+24(SB)/8, $0x0000000e0000000c
GLOBL iqlShiftS<>(SB), RODATA|NOPTR, $32

DATA iqlShift1S<>+0(SB)/8, $0x0000000300000000
DATA iqlShift1S<>+8(SB)/8, $0x0000000900000006
DATA iqlShift1S<>+16(SB)/8, $0x0000001300000010
DATA iqlShift1S<>+24(SB)/8, $0x0000001900000016
GLOBL iqlShift1S<>(SB), RODATA|NOPTR, $32

DATA iqlShift1M<>+0(SB)/8, $0x0000000400000000
DATA iqlShift1M<>+8(SB)/8, $0x0000000c00000008
DATA iqlShift1M<>+16(SB)/8, $0x0000001400000010
DATA iqlShift1M<>+24(SB)/8, $0x0000001c00000018
GLOBL iqlShift1M<>(SB), RODATA|NOPTR, $32

DATA iql511<>+0(SB)/4, $511
GLOBL iql511<>(SB), RODATA|NOPTR, $4

DATA iql3<>+0(SB)/4, $3
GLOBL iql3<>(SB), RODATA|NOPTR, $4

DATA iql7<>+0(SB)/4, $7
GLOBL iql7<>(SB), RODATA|NOPTR, $4

DATA iqlB1<>+0(SB)/4, $0x01010101
GLOBL iqlB1<>(SB), RODATA|NOPTR, $4

DATA iqlB2<>+0(SB)/4, $0x02020202
GLOBL iqlB2<>(SB), RODATA|NOPTR, $4

// IQLPROLOGUE(shifts, mask): the arguments, constants and zero.
#define IQLPROLOGUE(shifts, mask) \
	MOVQ    w+0(FP), SI \
	MOVQ    blocks+8(FP), CX \
	MOVQ    grid+16(FP), R10 \
	MOVQ    out+24(FP), DI \
	MOVQ    $0x0101010101010101, R13 \
	VMOVDQU shifts, Y13 \
	VPBROADCASTD iql511<>(SB), Y14 \
	VPBROADCASTD mask, Y15 \
	VPBROADCASTD iqlB2<>(SB), Z12 \
	VPBROADCASTD iqlB1<>(SB), Z11 \
	VPXORD  Z3, Z3, Z3

// IQLHIGH(src): the 8 groups' high index bits from the dword at src,
// shifted per group (Y13), masked (Y15) and or-ed in above Y0's low 8 bits.
#define IQLHIGH(src) \
	VPBROADCASTD src, Y2 \
	VPSRLVD Y13, Y2, Y2 \
	VPAND   Y15, Y2, Y2 \
	VPSLLD  $8, Y2, Y2 \
	VPOR    Y2, Y0, Y0

// IQLGATHER: Z1 = the 8 grid entries at Y0's indices.
#define IQLGATHER \
	KXNORB     K2, K2, K2 \
	VPGATHERDQ (R10)(Y0*8), K2, Z1

// IQLLOAD8: IQLGATHER by scalar loads (the indices stored at idx-32(SP),
// each entry a VMOVQ or VPINSRQ, assembled by VINSERTI128 and
// VINSERTI64X4; Y0 and X2 clobbered, R9 and R15 the indices): IQ1_M's
// DotQ8, tiny-qwen3moe decode 1448-1451 -> 1574-1626 tokens per CPU-s,
// where the other kernels here lost 2 to 7% by it.
#define IQLLOAD8 \
	VMOVDQU Y0, idx-32(SP) \
	MOVL    idx-32(SP), R9 \
	MOVL    idx-28(SP), R15 \
	VMOVQ   (R10)(R9*8), X1 \
	VPINSRQ $1, (R10)(R15*8), X1, X1 \
	MOVL    idx-24(SP), R9 \
	MOVL    idx-20(SP), R15 \
	VMOVQ   (R10)(R9*8), X2 \
	VPINSRQ $1, (R10)(R15*8), X2, X2 \
	VINSERTI128 $1, X2, Y1, Y1 \
	MOVL    idx-16(SP), R9 \
	MOVL    idx-12(SP), R15 \
	VMOVQ   (R10)(R9*8), X0 \
	VPINSRQ $1, (R10)(R15*8), X0, X0 \
	MOVL    idx-8(SP), R9 \
	MOVL    idx-4(SP), R15 \
	VMOVQ   (R10)(R9*8), X2 \
	VPINSRQ $1, (R10)(R15*8), X2, X2 \
	VINSERTI128 $1, X2, Y0, Y0 \
	VINSERTI64X4 $1, Y0, Z1, Z1

// IQLSIGNED(i): Z1 negated under K3, stored as quarter i.
#define IQLSIGNED(i) \
	VPSUBB   Z1, Z3, K3, Z1 \
	VMOVDQU8 Z1, (64*i)(DI)

// IQ1VAL(one, two): Z1 = 8*grid + 1, less 2 under K4 (one and two hold 1
// and 2 in every byte).
#define IQ1VAL(one, two) \
	VPADDB   Z1, Z1, Z1 \
	VPADDB   Z1, Z1, Z1 \
	VPADDB   Z1, Z1, Z1 \
	VPADDB   one, Z1, Z1 \
	VPSUBB   two, Z1, K4, Z1

// IQ1W(i): IQ1VAL's weights stored as quarter i.
#define IQ1W(i) \
	IQ1VAL(Z11, Z12) \
	VMOVDQU8 Z1, (64*i)(DI)

#define IQ2XSDEC(i) \
	VPMOVZXWD (2+16*i)(SI), Y2 \
	VPAND     Y14, Y2, Y0 \
	VPSRLD    $9, Y2, Y2 \
	VPMOVDB   Y2, X2 \
	VMOVQ     X2, AX \
	KSIGNS \
	IQLGATHER \
	IQLSIGNED(i)

#define IQ2SDEC(i) \
	VPMOVZXBD (2+8*i)(SI), Y0 \
	MOVWLZX   (66+2*i)(SI), AX \
	VMOVD     AX, X2 \
	IQLHIGH(X2) \
	IQLGATHER \
	KMOVQ     (34+8*i)(SI), K3 \
	IQLSIGNED(i)

// IQ1S delta signs: bit 15 of the quarter's first qh word for its low 32
// weights, bit 31 (the second word's) for its high 32.
#define IQ1SDEC(i) \
	VPMOVZXBD (2+8*i)(SI), Y0 \
	MOVL      (34+4*i)(SI), AX \
	VMOVD     AX, X2 \
	IQLHIGH(X2) \
	IQLGATHER \
	MOVL      AX, BX \
	SHRL      $15, BX \
	ANDL      $1, BX \
	NEGL      BX \
	SHRL      $31, AX \
	NEGQ      AX \
	SHLQ      $32, AX \
	ORQ       AX, BX \
	KMOVQ     BX, K4 \
	IQ1W(i)

// IQ1M delta signs: bit 3 of each group's nibble, spread to its 8 bytes.
#define IQ1MDEC(i) \
	VPMOVZXBD (8*i)(SI), Y0 \
	MOVL      (32+4*i)(SI), AX \
	VMOVD     AX, X2 \
	IQLHIGH(X2) \
	IQLGATHER \
	MOVL      $0x88888888, BX \
	PEXTL     BX, AX, BX \
	PDEPQ     R13, BX, BX \
	IMUL3Q    $0xff, BX, BX \
	KMOVQ     BX, K4 \
	IQ1W(i)

// func q8decodeIQ2XSAVX512(w *byte, blocks int, grid *uint64, out *int8)
TEXT ·q8decodeIQ2XSAVX512(SB), NOSPLIT, $0-32
	IQLPROLOGUE(iqlShiftS<>(SB), iql3<>(SB))
	TESTQ CX, CX
	JZ    iq2xsddone

iq2xsdloop:
	IQ2XSDEC(0)
	IQ2XSDEC(1)
	IQ2XSDEC(2)
	IQ2XSDEC(3)
	ADDQ $74, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  iq2xsdloop

iq2xsddone:
	VZEROUPPER
	RET

// func q8decodeIQ2SAVX512(w *byte, blocks int, grid *uint64, out *int8)
TEXT ·q8decodeIQ2SAVX512(SB), NOSPLIT, $0-32
	IQLPROLOGUE(iqlShiftS<>(SB), iql3<>(SB))
	TESTQ CX, CX
	JZ    iq2sddone

iq2sdloop:
	IQ2SDEC(0)
	IQ2SDEC(1)
	IQ2SDEC(2)
	IQ2SDEC(3)
	ADDQ $82, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  iq2sdloop

iq2sddone:
	VZEROUPPER
	RET

// func q8decodeIQ1SAVX512(w *byte, blocks int, grid *uint64, out *int8)
TEXT ·q8decodeIQ1SAVX512(SB), NOSPLIT, $0-32
	IQLPROLOGUE(iqlShift1S<>(SB), iql7<>(SB))
	TESTQ CX, CX
	JZ    iq1sddone

iq1sdloop:
	IQ1SDEC(0)
	IQ1SDEC(1)
	IQ1SDEC(2)
	IQ1SDEC(3)
	ADDQ $50, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  iq1sdloop

iq1sddone:
	VZEROUPPER
	RET

// func q8decodeIQ1MAVX512(w *byte, blocks int, grid *uint64, out *int8)
TEXT ·q8decodeIQ1MAVX512(SB), NOSPLIT, $0-32
	IQLPROLOGUE(iqlShift1M<>(SB), iql7<>(SB))
	TESTQ CX, CX
	JZ    iq1mddone

iq1mdloop:
	IQ1MDEC(0)
	IQ1MDEC(1)
	IQ1MDEC(2)
	IQ1MDEC(3)
	ADDQ $56, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  iq1mdloop

iq1mddone:
	VZEROUPPER
	RET

// DotQ8 of the same types in AVX-512 (F, BW, VL, VNNI; IQ1_M also BMI2):
// q8dotIQGroups' lanes with each group's factors made here (iqGroupFactors'
// float32 operations in its order). Each quarter is decoded as above; the
// IQ2 types' unsigned grid bytes times the activations negated under the
// signs, IQ1_M's weights' magnitudes (VPABSB) times the activations
// negated where the weights are negative, IQ1_S's |grid| times the
// activations negated where grid < 0 (its delta added after, IQ1SDELTA),
// summed by VPDPBUSD (16 dwords: 4 per half sub-block), REDUCE8 (REDUCE8H:
// the halves' totals times their multipliers 2*sc+1 first; every sum exact
// in int32), and the lanes += float(sum) * (factor * dx) (IQLACC). IQ1_M's
// grid entries by scalar loads (IQLLOAD8), the others' by VPGATHERDQ.
//
// Registers: SI block, DI activation codes, DX activation scales, CX groups,
// R8 lanes, R10 grid, R13 0x01 in every byte; Y12 the lanes; Y13, Y15 the
// index bits' shifts and mask, Y14 511; Y16 the halves' scale fields'
// shifts, Y17 their mask, Y21, Y22 their picks (IQLHMULT), Y18 1 in every
// dword; Z3 zero, Z20 1 and Z19 2 in every byte (Z11 and Z12 are a sum and
// the lanes here); Y4..Y11 the sums; R11 IQ1_S's code sums; IQ1_M's R9, R15
// and 32 bytes of frame for IQLLOAD8; the rows kernels' R14 row and R8 out
// (IQLROWS); Z0..Z2, AX, BX, R12 temporaries.

// The half multipliers' fields: the dwords of sub-blocks 0..3 then again
// (iqlPick0), of 4..7 (iqlPick1); IQ1_M's scale words two sub-blocks each
// (iqlPickW0, iqlPickW1); the shifts of the low then high halves' fields.
DATA iqlPick0<>+0(SB)/8, $0x0000000100000000
DATA iqlPick0<>+8(SB)/8, $0x0000000300000002
DATA iqlPick0<>+16(SB)/8, $0x0000000100000000
DATA iqlPick0<>+24(SB)/8, $0x0000000300000002
GLOBL iqlPick0<>(SB), RODATA|NOPTR, $32

DATA iqlPick1<>+0(SB)/8, $0x0000000500000004
DATA iqlPick1<>+8(SB)/8, $0x0000000700000006
DATA iqlPick1<>+16(SB)/8, $0x0000000500000004
DATA iqlPick1<>+24(SB)/8, $0x0000000700000006
GLOBL iqlPick1<>(SB), RODATA|NOPTR, $32

DATA iqlPickW0<>+0(SB)/8, $0x0000000000000000
DATA iqlPickW0<>+8(SB)/8, $0x0000000100000001
DATA iqlPickW0<>+16(SB)/8, $0x0000000000000000
DATA iqlPickW0<>+24(SB)/8, $0x0000000100000001
GLOBL iqlPickW0<>(SB), RODATA|NOPTR, $32

DATA iqlPickW1<>+0(SB)/8, $0x0000000200000002
DATA iqlPickW1<>+8(SB)/8, $0x0000000300000003
DATA iqlPickW1<>+16(SB)/8, $0x0000000200000002
DATA iqlPickW1<>+24(SB)/8, $0x0000000300000003
GLOBL iqlPickW1<>(SB), RODATA|NOPTR, $32

DATA iqlNib4<>+0(SB)/8, $0x0000000000000000
DATA iqlNib4<>+8(SB)/8, $0x0000000000000000
DATA iqlNib4<>+16(SB)/8, $0x0000000400000004
DATA iqlNib4<>+24(SB)/8, $0x0000000400000004
GLOBL iqlNib4<>(SB), RODATA|NOPTR, $32

DATA iqlSc3<>+0(SB)/8, $0x0000000600000000
DATA iqlSc3<>+8(SB)/8, $0x0000000600000000
DATA iqlSc3<>+16(SB)/8, $0x0000000900000003
DATA iqlSc3<>+24(SB)/8, $0x0000000900000003
GLOBL iqlSc3<>(SB), RODATA|NOPTR, $32

DATA iql15<>+0(SB)/4, $15
GLOBL iql15<>(SB), RODATA|NOPTR, $4

DATA iqlD1<>+0(SB)/4, $1
GLOBL iqlD1<>(SB), RODATA|NOPTR, $4

DATA iqlEighth<>+0(SB)/4, $0x3e000000
GLOBL iqlEighth<>(SB), RODATA|NOPTR, $4

#define IQLDOTPROLOGUE(shifts, mask, hshifts, hmask, pick0, pick1) \
	MOVQ    w+0(FP), SI \
	MOVQ    xq+8(FP), DI \
	MOVQ    xd+16(FP), DX \
	MOVQ    groups+24(FP), CX \
	MOVQ    lanes+32(FP), R8 \
	MOVQ    grid+40(FP), R10 \
	VMOVUPS (R8), Y12 \
	IQLCONSTS(shifts, mask, hshifts, hmask, pick0, pick1)

// IQLCONSTS: the constants of the DotQ8 and rows kernels.
#define IQLCONSTS(shifts, mask, hshifts, hmask, pick0, pick1) \
	MOVQ    $0x0101010101010101, R13 \
	VMOVDQU shifts, Y13 \
	VPBROADCASTD iql511<>(SB), Y14 \
	VPBROADCASTD mask, Y15 \
	VMOVDQU32 hshifts, Y16 \
	VPBROADCASTD hmask, Y17 \
	VMOVDQU32 pick0, Y21 \
	VMOVDQU32 pick1, Y22 \
	VPBROADCASTD iqlD1<>(SB), Z18 \
	VPBROADCASTD iqlB1<>(SB), Z20 \
	VPBROADCASTD iqlB2<>(SB), Z19 \
	VPXORD  Z3, Z3, Z3

// IQLROWS(group, rowinit): the rows kernels' walk: rows rows of w, stride
// bytes apart, each from lanes of +0 over its groups by group (one group,
// the flags of its DECQ CX last; rowinit first, for the row's other
// pointers), folded as foldLanes (FOLDLANES) into out, one float32 a row;
// R14 the row. Labels are the function's own.
#define IQLROWS(group, rowinit) \
	MOVQ  grid+48(FP), R10 \
	MOVQ  w+0(FP), R14 \
	MOVQ  out+56(FP), R8 \
	CMPQ  rows+16(FP), $0 \
	JEQ   iqlrdone \
iqlrrow: \
	MOVQ  R14, SI \
	MOVQ  xq+24(FP), DI \
	MOVQ  xd+32(FP), DX \
	MOVQ  groups+40(FP), CX \
	rowinit \
	VXORPS Y12, Y12, Y12 \
iqlrgroup: \
	group \
	JNZ   iqlrgroup \
	FOLDLANES(Y12, X12, (R8)) \
	ADDQ  $4, R8 \
	ADDQ  stride+8(FP), R14 \
	DECQ  rows+16(FP) \
	JNZ   iqlrrow \
iqlrdone: \
	VZEROUPPER \
	RET

// IQLNOROWINIT and IQ1SROWINIT: IQLROWS' rowinit (IQ1_S's code sums).
#define IQLNOROWINIT

#define IQ1SROWINIT \
	MOVQ sums+64(FP), R11

// IQLSUMS(i, Zs): the unsigned weights in Z1 against quarter i's
// activations negated under K3 into Zs, 4 dwords per half sub-block.
#define IQLSUMS(i, Zs) \
	VMOVDQU8 (64*i)(DI), Z0 \
	VPSUBB   Z0, Z3, K3, Z0 \
	VPXORD   Zs, Zs, Zs \
	VPDPBUSD Z0, Z1, Zs

// IQLHMULT(shifts, mask): a group's half multipliers 2*sc+1 from its
// scale fields, loaded as dwords into Y2 before (IQ2_XS, IQ2_S: the 8
// scale bytes; IQ1_M: the 4 scale words): Y0 = those of the low halves of
// sub-blocks 0..3, then of their high halves, Y2 the same of sub-blocks
// 4..7 (the fields' dwords picked by Y21 and Y22, shifted by shifts, masked
// by mask), REDUCE8A's order.
#define IQLHMULT(shifts, mask) \
	VPERMD  Y2, Y21, Y0 \
	VPERMD  Y2, Y22, Y2 \
	VPSRLVD shifts, Y0, Y0 \
	VPSRLVD shifts, Y2, Y2 \
	VPANDD  mask, Y0, Y0 \
	VPANDD  mask, Y2, Y2 \
	VPADDD  Y0, Y0, Y0 \
	VPADDD  Y2, Y2, Y2 \
	VPADDD  Y18, Y0, Y0 \
	VPADDD  Y18, Y2, Y2

// REDUCE8H: REDUCE8 with the halves' totals times their multipliers
// (IQLHMULT's Y0, Y2) before the halves are added; every sum exact in
// int32, so the sub-block's m0*lo + m1*hi.
#define REDUCE8H \
	REDUCE8A \
	VPMULLD Y0, Y4, Y4 \
	VPMULLD Y2, Y8, Y8 \
	REDUCE8B

// IQ1ABS: IQ1VAL's weights, then K3 their negative bytes and Z1 their
// magnitudes.
#define IQ1ABS \
	IQ1VAL(Z20, Z19) \
	VPMOVB2M Z1, K3 \
	VPABSB   Z1, Z1

#define IQ2XSQ(i, Zs, Yhi) \
	VPMOVZXWD (2+16*i)(SI), Y2 \
	VPAND     Y14, Y2, Y0 \
	VPSRLD    $9, Y2, Y2 \
	VPMOVDB   Y2, X2 \
	VMOVQ     X2, AX \
	KSIGNS \
	IQLGATHER \
	IQLSUMS(i, Zs) \
	VEXTRACTI64X4 $1, Zs, Yhi

#define IQ2SQ(i, Zs, Yhi) \
	VPMOVZXBD (2+8*i)(SI), Y0 \
	MOVWLZX   (66+2*i)(SI), AX \
	VMOVD     AX, X2 \
	IQLHIGH(X2) \
	IQLGATHER \
	KMOVQ     (34+8*i)(SI), K3 \
	IQLSUMS(i, Zs) \
	VEXTRACTI64X4 $1, Zs, Yhi

// IQ1SQ: the weights 8*g + e split (e, the delta's sign, is one per
// sub-block): |g| (the grid bytes are -1, 0 or 1) against the activations
// negated where g < 0 here, 8 times that plus e times each sub-block's code sum
// (Q8Row.sums) after REDUCE8 (IQ1SDELTA).
#define IQ1SQ(i, Zs, Yhi) \
	VPMOVZXBD (2+8*i)(SI), Y0 \
	MOVL      (34+4*i)(SI), AX \
	VMOVD     AX, X2 \
	IQLHIGH(X2) \
	IQLGATHER \
	VPMOVB2M  Z1, K3 \
	VPANDD    Z20, Z1, Z1 \
	IQLSUMS(i, Zs) \
	VEXTRACTI64X4 $1, Zs, Yhi

// IQ1SDELTA: Y0 = 8*Y0 + e*sum per sub-block, e -1 where bit 15 of its qh
// word is set; R11 the group's code sums.
#define IQ1SDELTA \
	VPSLLD   $3, Y0, Y0 \
	VMOVDQU  (R11), Y2 \
	VMOVDQU  34(SI), X1 \
	VPMOVW2M X1, K4 \
	VPSUBD   Y2, Y3, K4, Y2 \
	VPADDD   Y2, Y0, Y0

#define IQ1MQ(i, Zs, Yhi) \
	VPMOVZXBD (8*i)(SI), Y0 \
	MOVL      (32+4*i)(SI), AX \
	VMOVD     AX, X2 \
	IQLHIGH(X2) \
	IQLLOAD8 \
	MOVL      $0x88888888, BX \
	PEXTL     BX, AX, BX \
	PDEPQ     R13, BX, BX \
	IMUL3Q    $0xff, BX, BX \
	KMOVQ     BX, K4 \
	IQ1ABS \
	IQLSUMS(i, Zs) \
	VEXTRACTI64X4 $1, Zs, Yhi

// IQ2FACTORS: Y1 = d * 0.125 in every lane (IQ2_XS, IQ2_S).
#define IQ2FACTORS \
	VPBROADCASTW (SI), X1 \
	VCVTPH2PS    X1, Y1 \
	VBROADCASTSS iqlEighth<>(SB), Y2 \
	VMULPS       Y2, Y1, Y1

// IQ1SFACTORS: Y1 = d * float32(2*s+1) * 0.125, s bits 12..14 of each
// sub-block's qh word.
#define IQ1SFACTORS \
	VPMOVZXWD    34(SI), Y1 \
	VPSRLD       $12, Y1, Y1 \
	VPAND        Y15, Y1, Y1 \
	VPADDD       Y1, Y1, Y1 \
	VPADDD       Y18, Y1, Y1 \
	VCVTDQ2PS    Y1, Y1 \
	VPBROADCASTW (SI), X2 \
	VCVTPH2PS    X2, Y2 \
	VMULPS       Y1, Y2, Y1 \
	VBROADCASTSS iqlEighth<>(SB), Y2 \
	VMULPS       Y2, Y1, Y1

// IQ1MFACTORS: Y1 = d * 0.125, d the fp16 of the scale words' top nibbles.
#define IQ1MFACTORS \
	MOVQ         48(SI), AX \
	MOVQ         $0xf000f000f000f000, BX \
	PEXTQ        BX, AX, AX \
	VMOVD        AX, X1 \
	VPBROADCASTW X1, X1 \
	VCVTPH2PS    X1, Y1 \
	VBROADCASTSS iqlEighth<>(SB), Y2 \
	VMULPS       Y2, Y1, Y1

// The groups of the four types: IQLACC last, its DECQ CX setting the flags.
#define IQ2XSGROUP \
	PFAHEAD2(74) \
	IQ2XSQ(0, Z4, Y5) \
	IQ2XSQ(1, Z6, Y7) \
	IQ2XSQ(2, Z8, Y9) \
	IQ2XSQ(3, Z10, Y11) \
	VPMOVZXBD 66(SI), Y2 \
	IQLHMULT(Y16, Y17) \
	REDUCE8H \
	IQ2FACTORS \
	IQLACC(74)

#define IQ2SGROUP \
	PFAHEAD2(82) \
	IQ2SQ(0, Z4, Y5) \
	IQ2SQ(1, Z6, Y7) \
	IQ2SQ(2, Z8, Y9) \
	IQ2SQ(3, Z10, Y11) \
	VPMOVZXBD 74(SI), Y2 \
	IQLHMULT(Y16, Y17) \
	REDUCE8H \
	IQ2FACTORS \
	IQLACC(82)

#define IQ1SGROUP \
	PFAHEAD1(50) \
	IQ1SQ(0, Z4, Y5) \
	IQ1SQ(1, Z6, Y7) \
	IQ1SQ(2, Z8, Y9) \
	IQ1SQ(3, Z10, Y11) \
	REDUCE8 \
	IQ1SDELTA \
	IQ1SFACTORS \
	LEAQ 32(R11), R11 \
	IQLACC(50)

#define IQ1MGROUP \
	PFAHEAD1(56) \
	IQ1MQ(0, Z4, Y5) \
	IQ1MQ(1, Z6, Y7) \
	IQ1MQ(2, Z8, Y9) \
	IQ1MQ(3, Z10, Y11) \
	VPMOVZXWD 48(SI), X2 \
	IQLHMULT(Y16, Y17) \
	REDUCE8H \
	IQ1MFACTORS \
	IQLACC(56)

// func q8dotIQ2XSAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64)
TEXT ·q8dotIQ2XSAVX512(SB), NOSPLIT, $0-48
	IQLDOTPROLOGUE(iqlShiftS<>(SB), iql3<>(SB), iqlNib4<>(SB), iql15<>(SB), iqlPick0<>(SB), iqlPick1<>(SB))

iq2xszloop:
	IQ2XSGROUP
	JNZ iq2xszloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ2SAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64)
TEXT ·q8dotIQ2SAVX512(SB), NOSPLIT, $0-48
	IQLDOTPROLOGUE(iqlShiftS<>(SB), iql3<>(SB), iqlNib4<>(SB), iql15<>(SB), iqlPick0<>(SB), iqlPick1<>(SB))

iq2szloop:
	IQ2SGROUP
	JNZ iq2szloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ1SAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64, sums *int32)
TEXT ·q8dotIQ1SAVX512(SB), NOSPLIT, $0-56
	IQLDOTPROLOGUE(iqlShift1S<>(SB), iql7<>(SB), iqlNib4<>(SB), iql15<>(SB), iqlPick0<>(SB), iqlPick1<>(SB))
	MOVQ sums+48(FP), R11

iq1szloop:
	IQ1SGROUP
	JNZ iq1szloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ1MAVX512(w *byte, xq *int8, xd *float32, groups int, lanes *[8]float32, grid *uint64)
TEXT ·q8dotIQ1MAVX512(SB), NOSPLIT, $32-48
	IQLDOTPROLOGUE(iqlShift1M<>(SB), iql7<>(SB), iqlSc3<>(SB), iql7<>(SB), iqlPickW0<>(SB), iqlPickW1<>(SB))

iq1mzloop:
	IQ1MGROUP
	JNZ iq1mzloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// The rows kernels: DotQ8 of rows whole rows (groups groups each, rows > 0
// or none) against one input, each folded into out (IQLROWS).

// func q8rowsIQ2XSAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32)
TEXT ·q8rowsIQ2XSAVX512(SB), NOSPLIT, $0-64
	IQLCONSTS(iqlShiftS<>(SB), iql3<>(SB), iqlNib4<>(SB), iql15<>(SB), iqlPick0<>(SB), iqlPick1<>(SB))
	IQLROWS(IQ2XSGROUP, IQLNOROWINIT)

// func q8rowsIQ2SAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32)
TEXT ·q8rowsIQ2SAVX512(SB), NOSPLIT, $0-64
	IQLCONSTS(iqlShiftS<>(SB), iql3<>(SB), iqlNib4<>(SB), iql15<>(SB), iqlPick0<>(SB), iqlPick1<>(SB))
	IQLROWS(IQ2SGROUP, IQLNOROWINIT)

// func q8rowsIQ1SAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32, sums *int32)
TEXT ·q8rowsIQ1SAVX512(SB), NOSPLIT, $0-72
	IQLCONSTS(iqlShift1S<>(SB), iql7<>(SB), iqlNib4<>(SB), iql15<>(SB), iqlPick0<>(SB), iqlPick1<>(SB))
	IQLROWS(IQ1SGROUP, IQ1SROWINIT)

// func q8rowsIQ1MAVX512(w *byte, stride, rows int, xq *int8, xd *float32, groups int, grid *uint64, out *float32)
TEXT ·q8rowsIQ1MAVX512(SB), NOSPLIT, $32-64
	IQLCONSTS(iqlShift1M<>(SB), iql7<>(SB), iqlSc3<>(SB), iql7<>(SB), iqlPickW0<>(SB), iqlPickW1<>(SB))
	IQLROWS(IQ1MGROUP, IQLNOROWINIT)

//go:build amd64 && !noasm

#include "textflag.h"
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
// bits' mask; Z3 zero, Z12 2 and Z11 1 in every byte; Z0..Z2, AX, BX, DX,
// R12 temporaries.

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

// IQLSIGNED(i): Z1 negated under K3, stored as quarter i.
#define IQLSIGNED(i) \
	VPSUBB   Z1, Z3, K3, Z1 \
	VMOVDQU8 Z1, (64*i)(DI)

// IQ1W(i): Z1 = 8*grid + 1, less 2 under K4, stored as quarter i.
#define IQ1W(i) \
	VPADDB   Z1, Z1, Z1 \
	VPADDB   Z1, Z1, Z1 \
	VPADDB   Z1, Z1, Z1 \
	VPADDB   Z11, Z1, Z1 \
	VPSUBB   Z12, Z1, K4, Z1 \
	VMOVDQU8 Z1, (64*i)(DI)

#define IQ2XSDEC(i) \
	VPMOVZXWD (2+16*i)(SI), Y2 \
	VPAND     Y14, Y2, Y0 \
	IQLGATHER \
	VPSRLD    $9, Y2, Y2 \
	VPMOVDB   Y2, X2 \
	VMOVQ     X2, AX \
	KSIGNS \
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

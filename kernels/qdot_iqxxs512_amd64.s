//go:build amd64 && !noasm

#include "textflag.h"
#include "prefetch_amd64.h"

#include "qdot_amd64.h"
#include "qdot_ksigns_amd64.h"

// IQ3_XXS and IQ2_XXS against Q8_0 activations in AVX-512 (F, BW, VNNI;
// the VEX parts AVX2): q8dotIQ3XXSAVX2's and q8dotIQ2XXSAVX2's lanes, the
// groups' factors given at dw. A ZMM is 64 weights (sub-blocks 2i and
// 2i+1): their grid entries fetched by one VPGATHERDD (IQ3_XXS: 16 entries
// of 4 bytes) or VPGATHERDQ (IQ2_XXS: 8 of 8 bytes); their signs, a byte
// per 8 weights, ksigns_iq2xs of the 7-bit fields of the sub-blocks' sign
// words, i.e. the field with its parity in bit 7, made in a GPR (the fields
// spread to bytes by VPSRLVD and VPMOVDB, the parity by three shifted XORs)
// and applied as a mask negating the activations (a Q8Row holds no -128);
// the unsigned grid bytes times the signed activations summed by VPDPBUSD,
// each sub-block's sum exact. Then REDUCE8, and the lanes += float(sum) *
// (dw * dx). Only Z0..Z15 are used.
//
// Registers: SI block, DI activation codes, DX activation scales, R9
// factors, R10 grid, R8 lanes, CX groups left, R13 0x01 in every byte; Y12
// the lanes; Y13 the sign words' dword permutation, Y14 the fields' shifts,
// Y15 0x7f; Z3 zero; Y4..Y11 the sums; Z0..Z2, AX, BX, R12 temporaries.

DATA xxsShifts<>+0(SB)/8, $0x0000000700000000
DATA xxsShifts<>+8(SB)/8, $0x000000150000000e
DATA xxsShifts<>+16(SB)/8, $0x0000000700000000
DATA xxsShifts<>+24(SB)/8, $0x000000150000000e
GLOBL xxsShifts<>(SB), RODATA|NOPTR, $32

DATA xxsPerm3<>+0(SB)/8, $0x0000000000000000
DATA xxsPerm3<>+8(SB)/8, $0x0000000000000000
DATA xxsPerm3<>+16(SB)/8, $0x0000000100000001
DATA xxsPerm3<>+24(SB)/8, $0x0000000100000001
GLOBL xxsPerm3<>(SB), RODATA|NOPTR, $32

DATA xxsPerm2<>+0(SB)/8, $0x0000000100000001
DATA xxsPerm2<>+8(SB)/8, $0x0000000100000001
DATA xxsPerm2<>+16(SB)/8, $0x0000000300000003
DATA xxsPerm2<>+24(SB)/8, $0x0000000300000003
GLOBL xxsPerm2<>(SB), RODATA|NOPTR, $32

DATA xxsIdx2<>+0(SB)/8, $0x0b0a090803020100
DATA xxsIdx2<>+8(SB)/8, $0xffffffffffffffff
GLOBL xxsIdx2<>(SB), RODATA|NOPTR, $16

DATA xxs7f<>+0(SB)/4, $0x7f
GLOBL xxs7f<>(SB), RODATA|NOPTR, $4

// XXSSIGNS: K3 = the 64 sign bits of the two sign words in X2's
// dwords (after the permutation in Y13).
#define XXSSIGNS \
	VPERMD  Y2, Y13, Y2 \
	VPSRLVD Y14, Y2, Y2 \
	VPAND   Y15, Y2, Y2 \
	VPMOVDB Z2, X2 \
	VMOVQ   X2, AX \
	KSIGNS

// XXSDOT(i, Zs, Yhi): the grid bytes in Z1 against quarter i's activations
// with the signs in K3: Zs's low 8 dwords sub-block 2i's partial sums, its
// high 8 (moved to Yhi) 2i+1's.
#define XXSDOT(i, Zs, Yhi) \
	VMOVDQU8 (64*i)(DI), Z2 \
	VPSUBB   Z2, Z3, K3, Z2 \
	VPXORD   Zs, Zs, Zs \
	VPDPBUSD Z2, Z1, Zs \
	VEXTRACTI64X4 $1, Zs, Yhi

// IQ3XXSQ(i, Zs, Yhi): quarter i of an IQ3_XXS block (98 bytes: fp16 d,
// qs[64] grid indices, the 8 sign/scale words at 66).
#define IQ3XXSQ(i, Zs, Yhi) \
	VPMOVZXBD  (2+16*i)(SI), Z0 \
	KXNORW     K2, K2, K2 \
	VPGATHERDD (R10)(Z0*4), K2, Z1 \
	VMOVQ      (66+8*i)(SI), X2 \
	XXSSIGNS \
	XXSDOT(i, Zs, Yhi)

// IQ2XXSQ(i, Zs, Yhi): quarter i of an IQ2_XXS block (66 bytes: fp16 d,
// then per sub-block 4 grid indices and its sign/scale word).
#define IQ2XXSQ(i, Zs, Yhi) \
	VMOVDQU    (2+16*i)(SI), X2 \
	VPSHUFB    xxsIdx2<>(SB), X2, X0 \
	VPMOVZXBD  X0, Y0 \
	KXNORB     K2, K2, K2 \
	VPGATHERDQ (R10)(Y0*8), K2, Z1 \
	XXSSIGNS \
	XXSDOT(i, Zs, Yhi)

#define XXSPROLOGUE(perm) \
	MOVQ    w+0(FP), SI \
	MOVQ    xq+8(FP), DI \
	MOVQ    xd+16(FP), DX \
	MOVQ    dw+24(FP), R9 \
	MOVQ    groups+32(FP), CX \
	MOVQ    lanes+40(FP), R8 \
	MOVQ    grid+48(FP), R10 \
	MOVQ    $0x0101010101010101, R13 \
	VMOVUPS (R8), Y12 \
	VMOVDQU perm, Y13 \
	VMOVDQU xxsShifts<>(SB), Y14 \
	VPBROADCASTD xxs7f<>(SB), Y15 \
	VPXORD  Z3, Z3, Z3

// XXSACC(st): the group's sums (Y0, after REDUCE8) into the lanes, then on
// to the next group, st bytes on.
#define XXSACC(st) \
	VMOVUPS   (R9), Y1 \
	ADDQ      $32, R9 \
	IQLACC(st)

// The tiles' decoders (q8Decoded's weights and multipliers; the factors are
// the wrapper's, iqFactorsIQ3XXS and iqFactorsIQ2XXS): each quarter's grid
// bytes with the signs applied (the grid's values are at most 62, so the
// negation is exact) stored at DI+64i, and 1 as the 8 multipliers.

// XXSDEC(i): Z1's grid bytes negated under K3, stored as quarter i.
#define XXSDEC(i) \
	VPSUBB   Z1, Z3, K3, Z1 \
	VMOVDQU8 Z1, (64*i)(DI)

#define IQ3XXSDEC(i) \
	VPMOVZXBD  (2+16*i)(SI), Z0 \
	KXNORW     K2, K2, K2 \
	VPGATHERDD (R10)(Z0*4), K2, Z1 \
	VMOVQ      (66+8*i)(SI), X2 \
	XXSSIGNS \
	XXSDEC(i)

#define IQ2XXSDEC(i) \
	VMOVDQU    (2+16*i)(SI), X2 \
	VPSHUFB    xxsIdx2<>(SB), X2, X0 \
	VPMOVZXBD  X0, Y0 \
	KXNORB     K2, K2, K2 \
	VPGATHERDQ (R10)(Y0*8), K2, Z1 \
	XXSSIGNS \
	XXSDEC(i)

#define XXSDECPROLOGUE(perm) \
	MOVQ    w+0(FP), SI \
	MOVQ    blocks+8(FP), CX \
	MOVQ    grid+16(FP), R10 \
	MOVQ    out+24(FP), DI \
	MOVQ    m+32(FP), R9 \
	MOVQ    $0x0101010101010101, R13 \
	MOVQ    $0x0001000100010001, R11 \
	VMOVDQU perm, Y13 \
	VMOVDQU xxsShifts<>(SB), Y14 \
	VPBROADCASTD xxs7f<>(SB), Y15 \
	VPXORD  Z3, Z3, Z3


// func q8dotIQ3XXSAVX512(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint32)
TEXT ·q8dotIQ3XXSAVX512(SB), NOSPLIT, $0-56
	XXSPROLOGUE(xxsPerm3<>(SB))

iq3xxszloop:
	PFAHEAD2(98)
	IQ3XXSQ(0, Z4, Y5)
	IQ3XXSQ(1, Z6, Y7)
	IQ3XXSQ(2, Z8, Y9)
	IQ3XXSQ(3, Z10, Y11)
	REDUCE8
	XXSACC(98)
	JNZ iq3xxszloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotIQ2XXSAVX512(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, grid *uint64)
TEXT ·q8dotIQ2XXSAVX512(SB), NOSPLIT, $0-56
	XXSPROLOGUE(xxsPerm2<>(SB))

iq2xxszloop:
	PFAHEAD2(66)
	IQ2XXSQ(0, Z4, Y5)
	IQ2XXSQ(1, Z6, Y7)
	IQ2XXSQ(2, Z8, Y9)
	IQ2XXSQ(3, Z10, Y11)
	REDUCE8
	XXSACC(66)
	JNZ iq2xxszloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8decodeIQ3XXSAVX512(w *byte, blocks int, grid *uint32, out *int8, m *int16)
TEXT ·q8decodeIQ3XXSAVX512(SB), NOSPLIT, $0-40
	XXSDECPROLOGUE(xxsPerm3<>(SB))
	TESTQ CX, CX
	JZ    iq3xxsddone

iq3xxsdloop:
	IQ3XXSDEC(0)
	IQ3XXSDEC(1)
	IQ3XXSDEC(2)
	IQ3XXSDEC(3)
	MOVQ R11, (R9)
	MOVQ R11, 8(R9)
	ADDQ $98, SI
	ADDQ $256, DI
	ADDQ $16, R9
	DECQ CX
	JNZ  iq3xxsdloop

iq3xxsddone:
	VZEROUPPER
	RET

// func q8decodeIQ2XXSAVX512(w *byte, blocks int, grid *uint64, out *int8, m *int16)
TEXT ·q8decodeIQ2XXSAVX512(SB), NOSPLIT, $0-40
	XXSDECPROLOGUE(xxsPerm2<>(SB))
	TESTQ CX, CX
	JZ    iq2xxsddone

iq2xxsdloop:
	IQ2XXSDEC(0)
	IQ2XXSDEC(1)
	IQ2XXSDEC(2)
	IQ2XXSDEC(3)
	MOVQ R11, (R9)
	MOVQ R11, 8(R9)
	ADDQ $66, SI
	ADDQ $256, DI
	ADDQ $16, R9
	DECQ CX
	JNZ  iq2xxsdloop

iq2xxsddone:
	VZEROUPPER
	RET

//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 + F16C dequantizers. Each computes exactly what quant's reference
// does: the fp16 scale widened exactly (VCVTPH2PS), integer codes converted
// to float32, then exact float32 products in the same roles, and signs
// applied by multiplying with +-1.0. The results are therefore bit-identical
// to the portable Go path, signed zeros and NaNs included.

// Broadcast the fp16 at off(SI) into all lanes of Y0 as float32.
#define LOADSCALE(off) \
	MOVWLZX off(SI), AX; \
	VMOVD   AX, X0; \
	VCVTPH2PS X0, X0; \
	VBROADCASTSS X0, Y0

// Convert 8 int32 in Y to float32, scale by Y0 and store at off(DI).
#define SCALESTORE(Y, off) \
	VCVTDQ2PS Y, Y; \
	VMULPS    Y0, Y, Y; \
	VMOVUPS   Y, off(DI)

// func dequantQ8_0AVX2(src *byte, dst *float32, blocks int)
// Block: fp16 d, 32 x int8. y = float32(q) * d.
TEXT ·dequantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	TESTQ CX, CX
	JZ   q8done

q8loop:
	LOADSCALE(0)
	VPMOVSXBD 2(SI), Y1
	VPMOVSXBD 10(SI), Y2
	VPMOVSXBD 18(SI), Y3
	VPMOVSXBD 26(SI), Y4
	SCALESTORE(Y1, 0)
	SCALESTORE(Y2, 32)
	SCALESTORE(Y3, 64)
	SCALESTORE(Y4, 96)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q8loop
	VZEROUPPER

q8done:
	RET

DATA nibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibmask<>(SB), RODATA|NOPTR, $16

// func dequantIQ4NLAVX2(src *byte, dst *float32, blocks int, table *int8)
// Block: fp16 d, 16 bytes of nibbles (low nibble -> element j, high -> j+16).
// y = d * float32(kvalues[nibble]); the codebook lookup is a byte shuffle.
TEXT ·dequantIQ4NLAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ table+24(FP), DX
	TESTQ CX, CX
	JZ   nldone
	VMOVDQU (DX), X8
	VMOVDQU nibmask<>(SB), X9

nlloop:
	LOADSCALE(0)
	VMOVDQU 2(SI), X1
	VPSRLW  $4, X1, X2
	VPAND   X9, X1, X1
	VPAND   X9, X2, X2
	VPSHUFB X1, X8, X1
	VPSHUFB X2, X8, X2
	VPMOVSXBD X1, Y3
	VPSRLDQ $8, X1, X1
	VPMOVSXBD X1, Y4
	VPMOVSXBD X2, Y5
	VPSRLDQ $8, X2, X2
	VPMOVSXBD X2, Y6
	SCALESTORE(Y3, 0)
	SCALESTORE(Y4, 32)
	SCALESTORE(Y5, 64)
	SCALESTORE(Y6, 96)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  nlloop
	VZEROUPPER

nldone:
	RET

// Q2_0 byte shuffles: group g (elements 8g..8g+7) takes byte 2g into the
// four dwords of lane 0 and byte 2g+1 into those of lane 1.
DATA q2mask<>+0(SB)/8, $0x8080800080808000
DATA q2mask<>+8(SB)/8, $0x8080800080808000
DATA q2mask<>+16(SB)/8, $0x8080800180808001
DATA q2mask<>+24(SB)/8, $0x8080800180808001
DATA q2mask<>+32(SB)/8, $0x8080800280808002
DATA q2mask<>+40(SB)/8, $0x8080800280808002
DATA q2mask<>+48(SB)/8, $0x8080800380808003
DATA q2mask<>+56(SB)/8, $0x8080800380808003
DATA q2mask<>+64(SB)/8, $0x8080800480808004
DATA q2mask<>+72(SB)/8, $0x8080800480808004
DATA q2mask<>+80(SB)/8, $0x8080800580808005
DATA q2mask<>+88(SB)/8, $0x8080800580808005
DATA q2mask<>+96(SB)/8, $0x8080800680808006
DATA q2mask<>+104(SB)/8, $0x8080800680808006
DATA q2mask<>+112(SB)/8, $0x8080800780808007
DATA q2mask<>+120(SB)/8, $0x8080800780808007
DATA q2mask<>+128(SB)/8, $0x8080800880808008
DATA q2mask<>+136(SB)/8, $0x8080800880808008
DATA q2mask<>+144(SB)/8, $0x8080800980808009
DATA q2mask<>+152(SB)/8, $0x8080800980808009
DATA q2mask<>+160(SB)/8, $0x8080800a8080800a
DATA q2mask<>+168(SB)/8, $0x8080800a8080800a
DATA q2mask<>+176(SB)/8, $0x8080800b8080800b
DATA q2mask<>+184(SB)/8, $0x8080800b8080800b
DATA q2mask<>+192(SB)/8, $0x8080800c8080800c
DATA q2mask<>+200(SB)/8, $0x8080800c8080800c
DATA q2mask<>+208(SB)/8, $0x8080800d8080800d
DATA q2mask<>+216(SB)/8, $0x8080800d8080800d
DATA q2mask<>+224(SB)/8, $0x8080800e8080800e
DATA q2mask<>+232(SB)/8, $0x8080800e8080800e
DATA q2mask<>+240(SB)/8, $0x8080800f8080800f
DATA q2mask<>+248(SB)/8, $0x8080800f8080800f
GLOBL q2mask<>(SB), RODATA|NOPTR, $256

// Per-dword shifts that bring element 4j+k's code (bits 2k..2k+1) down.
// (The shifts 0,2,4,6 per lane are ·q2shifts, qdot_amd64.s.)

#define Q2GROUP(g) \
	VPSHUFB   (g*32)(R8), Y1, Y2; \
	VPSRLVD   Y10, Y2, Y2; \
	VPAND     Y11, Y2, Y2; \
	VCVTDQ2PS Y2, Y2; \
	VSUBPS    Y12, Y2, Y2; \
	VMULPS    Y0, Y2, Y2; \
	VMOVUPS   Y2, (g*32)(DI)

// func dequantQ2_0AVX2(src *byte, dst *float32, blocks int)
// Block: fp16 d, 16 bytes of 2-bit codes, lowest bits first.
// y = float32(code - 1) * d; code - 1 is formed in float32 (exact).
TEXT ·dequantQ2_0AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	TESTQ CX, CX
	JZ   q2done
	LEAQ q2mask<>(SB), R8
	VMOVDQU ·q2shifts(SB), Y10
	MOVL $3, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $0x3f800000, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12

q2loop:
	LOADSCALE(0)
	VBROADCASTI128 2(SI), Y1
	Q2GROUP(0)
	Q2GROUP(1)
	Q2GROUP(2)
	Q2GROUP(3)
	Q2GROUP(4)
	Q2GROUP(5)
	Q2GROUP(6)
	Q2GROUP(7)
	ADDQ $18, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  q2loop
	VZEROUPPER

q2done:
	RET

// Per-lane left shifts that move sign bit i of a broadcast byte to bit 31.
DATA signshift<>+0(SB)/8, $0x0000001e0000001f
DATA signshift<>+8(SB)/8, $0x0000001c0000001d
DATA signshift<>+16(SB)/8, $0x0000001a0000001b
DATA signshift<>+24(SB)/8, $0x0000001800000019
GLOBL signshift<>(SB), RODATA|NOPTR, $32

// Two IQ3_S groups (elements 8p..8p+7 of a sub-block): grid indices from
// qs (R10) plus one qh bit each (DX), two 4-byte grid entries, one sign byte
// (R11). y = (db * grid) * (+-1), db in Y1.
#define IQ3PAIR(p) \
	MOVBLZX   (2*p)(R10), AX; \
	MOVL      DX, BX; \
	SHLL      $(8-2*p), BX; \
	ANDL      $0x100, BX; \
	ORL       BX, AX; \
	MOVL      (R8)(AX*4), AX; \
	MOVBLZX   (2*p+1)(R10), BX; \
	MOVL      DX, R9; \
	SHLL      $(7-2*p), R9; \
	ANDL      $0x100, R9; \
	ORL       R9, BX; \
	MOVL      (R8)(BX*4), BX; \
	SHLQ      $32, BX; \
	ORQ       BX, AX; \
	VMOVQ     AX, X2; \
	VPMOVZXBD X2, Y2; \
	VCVTDQ2PS Y2, Y2; \
	VMULPS    Y1, Y2, Y2; \
	MOVBLZX   p(R11), BX; \
	VMOVD     BX, X3; \
	VPBROADCASTD X3, Y3; \
	VPSLLVD   Y13, Y3, Y3; \
	VPAND     Y14, Y3, Y3; \
	VPOR      Y15, Y3, Y3; \
	VMULPS    Y3, Y2, Y2; \
	VMOVUPS   Y2, (32*p)(DI)

// One 32-element sub-block: db = d * float32(1 + 2*scale nibble), nibble at
// bit `shift` of the scales byte (R13); then its 8 groups.
#define IQ3SUB(shift) \
	MOVBLZX   (R13), AX; \
	SHRL      $shift, AX; \
	ANDL      $15, AX; \
	LEAL      1(AX)(AX*1), AX; \
	VCVTSI2SSL AX, X1, X1; \
	VMULSS    X0, X1, X1; \
	VBROADCASTSS X1, Y1; \
	MOVBLZX   (R12), DX; \
	IQ3PAIR(0); \
	IQ3PAIR(1); \
	IQ3PAIR(2); \
	IQ3PAIR(3); \
	ADDQ      $8, R10; \
	ADDQ      $4, R11; \
	ADDQ      $1, R12; \
	ADDQ      $128, DI

// func dequantIQ3SAVX2(src *byte, dst *float32, blocks int, grid *uint32)
// Block (110 bytes): fp16 d, qs[64], qh[8], signs[32], scales[4].
TEXT ·dequantIQ3SAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ grid+24(FP), R8
	TESTQ CX, CX
	JZ   iq3done
	VMOVDQU signshift<>(SB), Y13
	MOVL $0x80000000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

iq3block:
	MOVWLZX (SI), AX
	VMOVD   AX, X0
	VCVTPH2PS X0, X0
	LEAQ 2(SI), R10
	LEAQ 74(SI), R11
	LEAQ 66(SI), R12
	LEAQ 106(SI), R13

iq3pair:
	IQ3SUB(0)
	IQ3SUB(4)
	INCQ R13
	LEAQ 110(SI), AX
	CMPQ R13, AX
	JB   iq3pair
	ADDQ $110, SI
	DECQ CX
	JNZ  iq3block
	VZEROUPPER

iq3done:
	RET

// func dequantF16AVX2(src *byte, dst *float32, groups int)
// 16 halves per group, widened exactly by F16C (NaNs come back quiet, as
// quant.FP16ToFloat32 gives them).
TEXT ·dequantF16AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ groups+16(FP), CX
	TESTQ CX, CX
	JZ   f16done

f16loop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  f16loop
	VZEROUPPER

f16done:
	RET

// func dequantBF16AVX2(src *byte, dst *float32, groups int)
// 16 bfloat16 per group: each becomes the upper half of a float32.
TEXT ·dequantBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ groups+16(FP), CX
	TESTQ CX, CX
	JZ   bf16done

bf16loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  bf16loop
	VZEROUPPER

bf16done:
	RET

// Q6_K: 8 weights of one 32-wide column chunk. Per block the Go side has
// put the 16 products d*scale[k] (ggml's first factor) at R8; SI is the
// block, DI its output. Codes are 6-bit: a low nibble of ql and two bits of
// qh, minus 32.
#define Q6CHUNK(h, l0) \
	VPMOVZXBD (64*h+l0)(SI), Y1; \
	VPMOVZXBD (64*h+32+l0)(SI), Y2; \
	VPMOVZXBD (128+32*h+l0)(SI), Y3; \
	VPAND     Y15, Y1, Y4; \
	VPAND     Y14, Y3, Y5; \
	VPSLLD    $4, Y5, Y5; \
	VPOR      Y5, Y4, Y4; \
	VPSUBD    Y13, Y4, Y4; \
	VCVTDQ2PS Y4, Y4; \
	VBROADCASTSS (4*(8*h+l0/16))(R8), Y6; \
	VMULPS    Y4, Y6, Y4; \
	VMOVUPS   Y4, (4*(128*h+l0))(DI); \
	VPAND     Y15, Y2, Y4; \
	VPSRLD    $2, Y3, Y5; \
	VPAND     Y14, Y5, Y5; \
	VPSLLD    $4, Y5, Y5; \
	VPOR      Y5, Y4, Y4; \
	VPSUBD    Y13, Y4, Y4; \
	VCVTDQ2PS Y4, Y4; \
	VBROADCASTSS (4*(8*h+2+l0/16))(R8), Y6; \
	VMULPS    Y4, Y6, Y4; \
	VMOVUPS   Y4, (4*(128*h+32+l0))(DI); \
	VPSRLD    $4, Y1, Y4; \
	VPSRLD    $4, Y3, Y5; \
	VPAND     Y14, Y5, Y5; \
	VPSLLD    $4, Y5, Y5; \
	VPOR      Y5, Y4, Y4; \
	VPSUBD    Y13, Y4, Y4; \
	VCVTDQ2PS Y4, Y4; \
	VBROADCASTSS (4*(8*h+4+l0/16))(R8), Y6; \
	VMULPS    Y4, Y6, Y4; \
	VMOVUPS   Y4, (4*(128*h+64+l0))(DI); \
	VPSRLD    $4, Y2, Y4; \
	VPSRLD    $6, Y3, Y5; \
	VPSLLD    $4, Y5, Y5; \
	VPOR      Y5, Y4, Y4; \
	VPSUBD    Y13, Y4, Y4; \
	VCVTDQ2PS Y4, Y4; \
	VBROADCASTSS (4*(8*h+6+l0/16))(R8), Y6; \
	VMULPS    Y4, Y6, Y4; \
	VMOVUPS   Y4, (4*(128*h+96+l0))(DI)

// func dequantQ6KAVX2(src *byte, dst *float32, blocks int, factors *float32)
// factors: 16 float32 per block, d * float32(int8 scale[k]) (quant.Q6KFactors).
TEXT ·dequantQ6KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ factors+24(FP), R8
	TESTQ CX, CX
	JZ   q6done
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $3, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $32, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

q6loop:
	Q6CHUNK(0, 0)
	Q6CHUNK(0, 8)
	Q6CHUNK(0, 16)
	Q6CHUNK(0, 24)
	Q6CHUNK(1, 0)
	Q6CHUNK(1, 8)
	Q6CHUNK(1, 16)
	Q6CHUNK(1, 24)
	ADDQ $210, SI
	ADDQ $1024, DI
	ADDQ $64, R8
	DECQ CX
	JNZ  q6loop
	VZEROUPPER

q6done:
	RET

// Q4_K: 8 weights of each nibble half of chunk c. R8 holds, per block,
// d*sc[j] at [j] and dmin*m[j] at [8+j]; y = (d*sc)*q - (dmin*m) with the
// product and the subtraction rounded separately, as ggml does.
#define Q4CHUNK(c, l0) \
	VPMOVZXBD (16+32*c+l0)(SI), Y1; \
	VPAND     Y15, Y1, Y2; \
	VCVTDQ2PS Y2, Y2; \
	VBROADCASTSS (4*(2*c))(R8), Y3; \
	VBROADCASTSS (4*(8+2*c))(R8), Y4; \
	VMULPS    Y2, Y3, Y2; \
	VSUBPS    Y4, Y2, Y2; \
	VMOVUPS   Y2, (4*(64*c+l0))(DI); \
	VPSRLD    $4, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VBROADCASTSS (4*(2*c+1))(R8), Y3; \
	VBROADCASTSS (4*(9+2*c))(R8), Y4; \
	VMULPS    Y1, Y3, Y1; \
	VSUBPS    Y4, Y1, Y1; \
	VMOVUPS   Y1, (4*(64*c+32+l0))(DI)

#define Q4C(c) \
	Q4CHUNK(c, 0); \
	Q4CHUNK(c, 8); \
	Q4CHUNK(c, 16); \
	Q4CHUNK(c, 24)

// func dequantQ4KAVX2(src *byte, dst *float32, blocks int, factors *float32)
TEXT ·dequantQ4KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ factors+24(FP), R8
	TESTQ CX, CX
	JZ   q4kdone
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

q4kloop:
	Q4C(0)
	Q4C(1)
	Q4C(2)
	Q4C(3)
	ADDQ $144, SI
	ADDQ $1024, DI
	ADDQ $64, R8
	DECQ CX
	JNZ  q4kloop
	VZEROUPPER

q4kdone:
	RET

// IQ4_XS: one 32-weight sub-block ib: 16 bytes of nibbles through the IQ4_NL
// codebook (X8), times dl[ib] from R8.
#define IQ4XSSUB(ib) \
	VMOVDQU   (8+16*ib)(SI), X1; \
	VPSRLW    $4, X1, X2; \
	VPAND     X9, X1, X1; \
	VPAND     X9, X2, X2; \
	VPSHUFB   X1, X8, X1; \
	VPSHUFB   X2, X8, X2; \
	VBROADCASTSS (4*ib)(R8), Y0; \
	VPMOVSXBD X1, Y3; \
	VPSRLDQ   $8, X1, X1; \
	VPMOVSXBD X1, Y4; \
	VPMOVSXBD X2, Y5; \
	VPSRLDQ   $8, X2, X2; \
	VPMOVSXBD X2, Y6; \
	SCALESTORE(Y3, (128*ib)); \
	SCALESTORE(Y4, (128*ib+32)); \
	SCALESTORE(Y5, (128*ib+64)); \
	SCALESTORE(Y6, (128*ib+96))

// func dequantIQ4XSAVX2(src *byte, dst *float32, blocks int, table *int8, factors *float32)
// factors: 8 float32 per block (quant.IQ4XSFactors).
TEXT ·dequantIQ4XSAVX2(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ table+24(FP), DX
	MOVQ factors+32(FP), R8
	TESTQ CX, CX
	JZ   xsdone
	VMOVDQU (DX), X8
	VMOVDQU nibmask<>(SB), X9

xsloop:
	IQ4XSSUB(0)
	IQ4XSSUB(1)
	IQ4XSSUB(2)
	IQ4XSSUB(3)
	IQ4XSSUB(4)
	IQ4XSSUB(5)
	IQ4XSSUB(6)
	IQ4XSSUB(7)
	ADDQ $136, SI
	ADDQ $1024, DI
	ADDQ $32, R8
	DECQ CX
	JNZ  xsloop
	VZEROUPPER

xsdone:
	RET

// Q5_K: as Q4_K with a fifth bit per weight from qh (bit 2c for the low
// nibbles of chunk c, bit 2c+1 for the high ones). Y15 = 15, Y14 = 1.
#define Q5CHUNK(c, l0) \
	VPMOVZXBD (48+32*c+l0)(SI), Y1; \
	VPMOVZXBD (16+l0)(SI), Y7; \
	VPAND     Y15, Y1, Y2; \
	VPSRLD    $(2*c), Y7, Y8; \
	VPAND     Y14, Y8, Y8; \
	VPSLLD    $4, Y8, Y8; \
	VPOR      Y8, Y2, Y2; \
	VCVTDQ2PS Y2, Y2; \
	VBROADCASTSS (4*(2*c))(R8), Y3; \
	VBROADCASTSS (4*(8+2*c))(R8), Y4; \
	VMULPS    Y2, Y3, Y2; \
	VSUBPS    Y4, Y2, Y2; \
	VMOVUPS   Y2, (4*(64*c+l0))(DI); \
	VPSRLD    $4, Y1, Y1; \
	VPSRLD    $(2*c+1), Y7, Y8; \
	VPAND     Y14, Y8, Y8; \
	VPSLLD    $4, Y8, Y8; \
	VPOR      Y8, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VBROADCASTSS (4*(2*c+1))(R8), Y3; \
	VBROADCASTSS (4*(9+2*c))(R8), Y4; \
	VMULPS    Y1, Y3, Y1; \
	VSUBPS    Y4, Y1, Y1; \
	VMOVUPS   Y1, (4*(64*c+32+l0))(DI)

#define Q5C(c) \
	Q5CHUNK(c, 0); \
	Q5CHUNK(c, 8); \
	Q5CHUNK(c, 16); \
	Q5CHUNK(c, 24)

// func dequantQ5KAVX2(src *byte, dst *float32, blocks int, factors *float32)
// factors: 16 float32 per block (quant.Q4KFactors).
TEXT ·dequantQ5KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ factors+24(FP), R8
	TESTQ CX, CX
	JZ   q5kdone
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $1, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q5kloop:
	Q5C(0)
	Q5C(1)
	Q5C(2)
	Q5C(3)
	ADDQ $176, SI
	ADDQ $1024, DI
	ADDQ $64, R8
	DECQ CX
	JNZ  q5kloop
	VZEROUPPER

q5kdone:
	RET

// Q2_K: 8 weights of sub-block k = 8h+2s+t: code = (qs[32h+16t+l] >> 2s) & 3,
// y = (d*sc[k])*code - dmin*m[k] (factors at R8: [k] and [16+k]). Y14 = 3.
#define Q2KGRP(h, s, t, l0) \
	VPMOVZXBD (16+32*h+16*t+l0)(SI), Y1; \
	VPSRLD    $(2*s), Y1, Y1; \
	VPAND     Y14, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VBROADCASTSS (4*(8*h+2*s+t))(R8), Y3; \
	VBROADCASTSS (4*(16+8*h+2*s+t))(R8), Y4; \
	VMULPS    Y1, Y3, Y1; \
	VSUBPS    Y4, Y1, Y1; \
	VMOVUPS   Y1, (4*(16*(8*h+2*s+t)+l0))(DI)

#define Q2KSUB(h, s) \
	Q2KGRP(h, s, 0, 0); \
	Q2KGRP(h, s, 0, 8); \
	Q2KGRP(h, s, 1, 0); \
	Q2KGRP(h, s, 1, 8)

// func dequantQ2KAVX2(src *byte, dst *float32, blocks int, factors *float32)
// factors: 32 float32 per block (quant.Q2KFactors).
TEXT ·dequantQ2KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ factors+24(FP), R8
	TESTQ CX, CX
	JZ   q2kdone
	MOVL $3, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q2kloop:
	Q2KSUB(0, 0)
	Q2KSUB(0, 1)
	Q2KSUB(0, 2)
	Q2KSUB(0, 3)
	Q2KSUB(1, 0)
	Q2KSUB(1, 1)
	Q2KSUB(1, 2)
	Q2KSUB(1, 3)
	ADDQ $84, SI
	ADDQ $1024, DI
	ADDQ $128, R8
	DECQ CX
	JNZ  q2kloop
	VZEROUPPER

q2kdone:
	RET

// Q3_K: 8 weights of sub-block k = 8h+2s+t: low 2 bits from qs, the high
// bit from hmask[16t+l] bit 4h+s; q = low - 4 + 4*hbit; y = (d*s_k) * q.
// Y14 = 3, Y13 = 1, Y12 = 4.
#define Q3KGRP(h, s, t, l0) \
	VPMOVZXBD (32+32*h+16*t+l0)(SI), Y1; \
	VPSRLD    $(2*s), Y1, Y1; \
	VPAND     Y14, Y1, Y1; \
	VPMOVZXBD (16*t+l0)(SI), Y2; \
	VPSRLD    $(4*h+s), Y2, Y2; \
	VPAND     Y13, Y2, Y2; \
	VPSLLD    $2, Y2, Y2; \
	VPADDD    Y2, Y1, Y1; \
	VPSUBD    Y12, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VBROADCASTSS (4*(8*h+2*s+t))(R8), Y3; \
	VMULPS    Y1, Y3, Y1; \
	VMOVUPS   Y1, (4*(16*(8*h+2*s+t)+l0))(DI)

#define Q3KSUB(h, s) \
	Q3KGRP(h, s, 0, 0); \
	Q3KGRP(h, s, 0, 8); \
	Q3KGRP(h, s, 1, 0); \
	Q3KGRP(h, s, 1, 8)

// func dequantQ3KAVX2(src *byte, dst *float32, blocks int, factors *float32)
// factors: 16 float32 per block (quant.Q3KFactors).
TEXT ·dequantQ3KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ factors+24(FP), R8
	TESTQ CX, CX
	JZ   q3kdone
	MOVL $3, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $1, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $4, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12

q3kloop:
	Q3KSUB(0, 0)
	Q3KSUB(0, 1)
	Q3KSUB(0, 2)
	Q3KSUB(0, 3)
	Q3KSUB(1, 0)
	Q3KSUB(1, 1)
	Q3KSUB(1, 2)
	Q3KSUB(1, 3)
	ADDQ $110, SI
	ADDQ $1024, DI
	ADDQ $64, R8
	DECQ CX
	JNZ  q3kloop
	VZEROUPPER

q3kdone:
	RET

// func dequantNib32AVX2(src *byte, dst *float32, blocks int, table *int8, factors *float32, blockBytes int, qsOff int)
// Any block of 32 weights stored as 16 bytes of nibbles at qsOff (low
// nibble -> j, high -> j+16) with one float32 factor per block, given by
// the Go side: y = factor * float32(table[nibble]).
TEXT ·dequantNib32AVX2(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ table+24(FP), DX
	MOVQ factors+32(FP), R8
	MOVQ blockBytes+40(FP), R9
	MOVQ qsOff+48(FP), R10
	TESTQ CX, CX
	JZ   n32done
	VMOVDQU (DX), X8
	VMOVDQU nibmask<>(SB), X9

n32loop:
	VBROADCASTSS (R8), Y0
	VMOVDQU (SI)(R10*1), X1
	VPSRLW  $4, X1, X2
	VPAND   X9, X1, X1
	VPAND   X9, X2, X2
	VPSHUFB X1, X8, X1
	VPSHUFB X2, X8, X2
	VPMOVSXBD X1, Y3
	VPSRLDQ $8, X1, X1
	VPMOVSXBD X1, Y4
	VPMOVSXBD X2, Y5
	VPSRLDQ $8, X2, X2
	VPMOVSXBD X2, Y6
	SCALESTORE(Y3, 0)
	SCALESTORE(Y4, 32)
	SCALESTORE(Y5, 64)
	SCALESTORE(Y6, 96)
	ADDQ R9, SI
	ADDQ $128, DI
	ADDQ $4, R8
	DECQ CX
	JNZ  n32loop
	VZEROUPPER

n32done:
	RET

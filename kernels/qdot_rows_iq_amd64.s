//go:build amd64 && !noasm

#include "textflag.h"
#include "qdot_amd64.h"

// IQ4_NL rows against Q8_0 activations, up to four at once (AVX-512 F, BW,
// VL, VNNI and VBMI; qdot.go's order): the multi-row kernels' contract
// (qdot_rows_amd64.s), each row's lanes and fold DotQ8's.
//
// A group is 8 blocks of 18 bytes (fp16 d, 16 bytes of nibbles: weight j
// of a block is the low nibble of byte j, weight 16+j the high nibble).
// Each row's group is read as three 64-byte windows, at 0, 64 and 80 (all
// inside the group's 144 bytes): VPERMT2B gathers blocks 0..3's nibble
// bytes from the first two (iq4rcodes0) and blocks 4..7's from the last
// two (iq4rcodes1), one block per 128-bit lane, and VPERMT2W the 8 fp16
// scales (words 9b of the first two, iq4rscale). VPERMB maps each byte's
// low six bits through the codebook repeated four times (iq4rtab), so a
// byte's low nibble and, after a 16-bit shift by 4, its high nibble each
// index it with no mask; the table holds each value plus 128 (unsigned,
// for VPDPBUSD against the signed activations), and the block's
// activation sum times 128 is subtracted from its total. The activations
// are shared by the rows: per 4 blocks, the first 16 of each block's 32
// (against the low nibbles) and the last 16 (the high), gathered by
// 128-bit lanes once per group. Each block's 4 dword totals are reduced
// to one and the 8 placed in sub-block order (iq4rperm); the terms are
// float32(sum) * (fp16 d * activation scale), added to the row's lanes.
//
// A last partial group (tail blocks) reads the three windows by masked
// loads (the caller's masks: the tail's 18*tail bytes, none past the
// row): the absent blocks' bytes and scales are zero, their activations
// and sums are the zero padding (Q8Row.padded), so each adds +0 to its
// lane, which leaves it as it is (a lane starts at +0, never -0).
//
// Registers: Z31 the table, Z30, Z29 the code gathers, Z28 the scale
// gather, Z27 the sub-block order, Y5 dword ones (MXFP4's factors); per
// group Z20..Z23 the activations (blocks 0..3 low, high; 4..7 low, high),
// Y24 their sums times 128; per row Z0..Z3, Z6, Z7, Z12..Z15; Y8..Y11 the
// lanes of rows A..D.

DATA iq4rtab<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4rtab<>+8(SB)/8, $0xf1d9c5b5a6998d81
DATA iq4rtab<>+16(SB)/8, $0x766a5d4f3f2d1801
DATA iq4rtab<>+24(SB)/8, $0xf1d9c5b5a6998d81
DATA iq4rtab<>+32(SB)/8, $0x766a5d4f3f2d1801
DATA iq4rtab<>+40(SB)/8, $0xf1d9c5b5a6998d81
DATA iq4rtab<>+48(SB)/8, $0x766a5d4f3f2d1801
DATA iq4rtab<>+56(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4rtab<>(SB), RODATA|NOPTR, $64

DATA iq4rcodes0<>+0(SB)/8, $0x0908070605040302
DATA iq4rcodes0<>+8(SB)/8, $0x11100f0e0d0c0b0a
DATA iq4rcodes0<>+16(SB)/8, $0x1b1a191817161514
DATA iq4rcodes0<>+24(SB)/8, $0x232221201f1e1d1c
DATA iq4rcodes0<>+32(SB)/8, $0x2d2c2b2a29282726
DATA iq4rcodes0<>+40(SB)/8, $0x3534333231302f2e
DATA iq4rcodes0<>+48(SB)/8, $0x3f3e3d3c3b3a3938
DATA iq4rcodes0<>+56(SB)/8, $0x4746454443424140
GLOBL iq4rcodes0<>(SB), RODATA|NOPTR, $64

DATA iq4rcodes1<>+0(SB)/8, $0x11100f0e0d0c0b0a
DATA iq4rcodes1<>+8(SB)/8, $0x1918171615141312
DATA iq4rcodes1<>+16(SB)/8, $0x232221201f1e1d1c
DATA iq4rcodes1<>+24(SB)/8, $0x2b2a292827262524
DATA iq4rcodes1<>+32(SB)/8, $0x3534333231302f2e
DATA iq4rcodes1<>+40(SB)/8, $0x3d3c3b3a39383736
DATA iq4rcodes1<>+48(SB)/8, $0x7776757473727170
DATA iq4rcodes1<>+56(SB)/8, $0x7f7e7d7c7b7a7978
GLOBL iq4rcodes1<>(SB), RODATA|NOPTR, $64

DATA iq4rscale<>+0(SB)/8, $0x001b001200090000
DATA iq4rscale<>+8(SB)/8, $0x003f0036002d0024
DATA iq4rscale<>+16(SB)/8, $0x0000000000000000
DATA iq4rscale<>+24(SB)/8, $0x0000000000000000
DATA iq4rscale<>+32(SB)/8, $0x0000000000000000
DATA iq4rscale<>+40(SB)/8, $0x0000000000000000
DATA iq4rscale<>+48(SB)/8, $0x0000000000000000
DATA iq4rscale<>+56(SB)/8, $0x0000000000000000
GLOBL iq4rscale<>(SB), RODATA|NOPTR, $64

DATA iq4rperm<>+0(SB)/8, $0x0000000400000000
DATA iq4rperm<>+8(SB)/8, $0x0000000c00000008
DATA iq4rperm<>+16(SB)/8, $0x0000000500000001
DATA iq4rperm<>+24(SB)/8, $0x0000000d00000009
DATA iq4rperm<>+32(SB)/8, $0x0000000000000000
DATA iq4rperm<>+40(SB)/8, $0x0000000000000000
DATA iq4rperm<>+48(SB)/8, $0x0000000000000000
DATA iq4rperm<>+56(SB)/8, $0x0000000000000000
GLOBL iq4rperm<>(SB), RODATA|NOPTR, $64

// IQ4X: the group's activations at DI and sums at BX, for every row.
#define IQ4X \
	VMOVDQU64 0(DI), Z25 \
	VMOVDQU64 64(DI), Z26 \
	VSHUFI64X2 $0x88, Z26, Z25, Z20 \
	VSHUFI64X2 $0xdd, Z26, Z25, Z21 \
	VMOVDQU64 128(DI), Z25 \
	VMOVDQU64 192(DI), Z26 \
	VSHUFI64X2 $0x88, Z26, Z25, Z22 \
	VSHUFI64X2 $0xdd, Z26, Z25, Z23 \
	VMOVDQU32 (BX), Y24 \
	VPSLLD $7, Y24, Y24

// IQ4LOAD(base, tw): the three windows of a whole group (the last at tw);
// IQ4LOADT(base, tw) of the partial group, by the masks K1, K2, K4.
#define IQ4LOAD(base, tw) \
	VMOVDQU64 0(base), Z0 \
	VMOVDQU64 64(base), Z1 \
	VMOVDQU64 tw(base), Z2

#define IQ4LOADT(base, tw) \
	VMOVDQU8.Z 0(base), K1, Z0 \
	VMOVDQU8.Z 64(base), K2, Z1 \
	VMOVDQU8.Z tw(base), K4, Z2

// IQ4SCALEG, IQ4SCALEF: the 8 fp16 scales gathered from Z0, Z1 (Z28's
// words) into X12, then to float32 in Y12. MXSCALEG, MXSCALEF: MXFP4's 8
// E8M0 exponents (Z28's bytes), then their factors (E8M0HALF, Y5 the
// ones, Y13 clobbered).
#define IQ4SCALEG \
	VMOVDQA64 Z0, Z12 \
	VPERMT2W Z1, Z28, Z12

#define IQ4SCALEF \
	VCVTPH2PS X12, Y12

#define MXSCALEG \
	VMOVDQA64 Z0, Z12 \
	VPERMT2B Z1, Z28, Z12

#define MXSCALEF \
	VPMOVZXBD X12, Y12 \
	E8M0HALF(Y12, Y5, Y13)

// IQ4ROW(Yacc, SCALEG, SCALEF): the group's terms of the row loaded in
// Z0..Z2 into Yacc, the scales by SCALEG (before the code gathers) and
// SCALEF.
#define IQ4ROW(Yacc, SCALEG, SCALEF) \
	SCALEG \
	VPERMT2B Z1, Z30, Z0 \
	VPERMT2B Z2, Z29, Z1 \
	IQ4DOT \
	VCVTDQ2PS Y14, Y14 \
	SCALEF \
	VMULPS (DX), Y12, Y12 \
	VMULPS Y12, Y14, Y14 \
	VADDPS Y14, Yacc, Yacc

// IQ4DOT: Y14 = the 8 exact sub-block sums, in sub-block order, of the
// nibble codes of sub-blocks 0..3 in Z0 and 4..7 in Z1 (16 bytes each,
// one sub-block per 128-bit lane) against the group's activations Z20..Z23
// (IQ4X), less 128 times their sums (Y24); Z0..Z3, Z6, Z7, Z15 clobbered.
#define IQ4DOT \
	VPSRLW $4, Z0, Z2 \
	VPSRLW $4, Z1, Z3 \
	VPERMB Z31, Z0, Z0 \
	VPERMB Z31, Z2, Z2 \
	VPERMB Z31, Z1, Z1 \
	VPERMB Z31, Z3, Z3 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPDPBUSD Z20, Z0, Z6 \
	VPDPBUSD Z21, Z2, Z6 \
	VPDPBUSD Z22, Z1, Z7 \
	VPDPBUSD Z23, Z3, Z7 \
	VPUNPCKLDQ Z7, Z6, Z14 \
	VPUNPCKHDQ Z7, Z6, Z15 \
	VPADDD Z15, Z14, Z14 \
	VPSHUFD $0x4e, Z14, Z15 \
	VPADDD Z15, Z14, Z14 \
	VPERMD Z14, Z27, Z14 \
	VPSUBD Y24, Y14, Y14

// IQ4PF(base): the group pf (R14) bytes ahead of base, a line at a time.
#define IQ4PF(base) \
	PREFETCHT0 (base)(R14*1) \
	PREFETCHT0 64(base)(R14*1) \
	PREFETCHT0 128(base)(R14*1)

// IQ4ROWS(tab, codes0, codes1, scale, SCALEG, SCALEF, tw, gb): the body
// of the nibble row kernels, groups of gb bytes (8 blocks), the last
// window at tw, the tables and the scales' macros of the type.
#define IQ4ROWS(tab, codes0, codes1, scale, SCALEG, SCALEF, tw, gb) \
	VMOVDQU64 tab<>(SB), Z31 \
	VMOVDQU64 codes0<>(SB), Z30 \
	VMOVDQU64 codes1<>(SB), Z29 \
	VMOVDQU64 scale<>(SB), Z28 \
	VMOVDQU64 iq4rperm<>(SB), Z27 \
	MOVL $1, AX \
	VPBROADCASTD AX, Y5 \
	MOVQ  masks+64(FP), AX \
	KMOVQ 0(AX), K1 \
	KMOVQ 8(AX), K2 \
	KMOVQ 16(AX), K4 \
	MOVQ  w+0(FP), R13 \
	MOVQ  rows+16(FP), R10 \
	MOVQ  out+72(FP), R8 \
	MOVQ  n+96(FP), R12 \
	MOVQ  pf+104(FP), R14 \
	TESTQ R10, R10 \
	JZ    iq4done \
\
iq4row: \
	MOVQ R13, SI \
	MOVQ boff+80(FP), AX \
	LEAQ (R13)(AX*1), R15 \
	LEAQ (R13)(AX*2), R11 \
	LEAQ (R15)(AX*2), R9 \
	MOVQ xq+24(FP), DI \
	MOVQ xd+32(FP), DX \
	MOVQ xs+40(FP), BX \
	MOVQ groups+48(FP), CX \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
	TESTQ CX, CX \
	JZ    iq4tail \
\
iq4group: \
	TESTQ R14, R14 \
	JZ    iq4x \
	IQ4PF(SI) \
	CMPQ  R12, $2 \
	JLT   iq4x \
	IQ4PF(R15) \
	CMPQ  R12, $3 \
	JLT   iq4x \
	IQ4PF(R11) \
	CMPQ  R12, $4 \
	JLT   iq4x \
	IQ4PF(R9) \
\
iq4x: \
	IQ4X \
	IQ4LOAD(SI, tw) \
	IQ4ROW(Y8, SCALEG, SCALEF) \
	CMPQ R12, $2 \
	JLT  iq4next \
	IQ4LOAD(R15, tw) \
	IQ4ROW(Y9, SCALEG, SCALEF) \
	CMPQ R12, $3 \
	JLT  iq4next \
	IQ4LOAD(R11, tw) \
	IQ4ROW(Y10, SCALEG, SCALEF) \
	CMPQ R12, $4 \
	JLT  iq4next \
	IQ4LOAD(R9, tw) \
	IQ4ROW(Y11, SCALEG, SCALEF) \
\
iq4next: \
	ADDQ $gb, SI \
	ADDQ $gb, R15 \
	ADDQ $gb, R11 \
	ADDQ $gb, R9 \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $32, BX \
	DECQ CX \
	JNZ  iq4group \
\
iq4tail: \
	CMPQ tail+56(FP), $0 \
	JEQ  iq4fold \
	IQ4X \
	IQ4LOADT(SI, tw) \
	IQ4ROW(Y8, SCALEG, SCALEF) \
	CMPQ R12, $2 \
	JLT  iq4fold \
	IQ4LOADT(R15, tw) \
	IQ4ROW(Y9, SCALEG, SCALEF) \
	CMPQ R12, $3 \
	JLT  iq4fold \
	IQ4LOADT(R11, tw) \
	IQ4ROW(Y10, SCALEG, SCALEF) \
	CMPQ R12, $4 \
	JLT  iq4fold \
	IQ4LOADT(R9, tw) \
	IQ4ROW(Y11, SCALEG, SCALEF) \
\
iq4fold: \
	FOLDROWS4(ooff+88(FP), R12, iq4adv) \
\
iq4adv: \
	ADDQ $4, R8 \
	ADDQ stride+8(FP), R13 \
	DECQ R10 \
	JNZ  iq4row \
\
iq4done: \
	VZEROUPPER \
	RET

// func iq4RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[3]uint64, out *float32, boff, ooff, n, pf int)
// rows: rows A, each stride bytes from the last, outputs at out; with n
// (1..4) streams, as many rows B, C, D, boff, 2boff, 3boff bytes after
// each A, outputs ooff, 2ooff, 3ooff bytes after A's. masks: the partial
// group's load masks of the windows at 0, 64 and 80. pf: each stream
// prefetched pf bytes ahead (PREFETCHT0, 0 for none).
TEXT ·iq4RowsAVX512(SB), NOSPLIT, $0-112
	IQ4ROWS(iq4rtab, iq4rcodes0, iq4rcodes1, iq4rscale, IQ4SCALEG, IQ4SCALEF, 80, 144)

// MXFP4 rows, the same way: a group is 8 blocks of 17 bytes (the E8M0
// exponent, 16 bytes of nibbles), its windows at 0, 64 and 72; the codebook
// (mxrtab), code gathers (mxrcodes0, mxrcodes1) and the exponents' bytes
// (mxrscale) MXFP4's, each factor quant.E8M0Half's by E8M0HALF. An absent
// block of a partial group has exponent 0 (factor 2^-128): its term is
// float32(0) times 2^-128 times the padding's scale 0, +0 still.

DATA mxrtab<>+0(SB)/8, $0x8c88868483828180
DATA mxrtab<>+8(SB)/8, $0x74787a7c7d7e7f80
DATA mxrtab<>+16(SB)/8, $0x8c88868483828180
DATA mxrtab<>+24(SB)/8, $0x74787a7c7d7e7f80
DATA mxrtab<>+32(SB)/8, $0x8c88868483828180
DATA mxrtab<>+40(SB)/8, $0x74787a7c7d7e7f80
DATA mxrtab<>+48(SB)/8, $0x8c88868483828180
DATA mxrtab<>+56(SB)/8, $0x74787a7c7d7e7f80
GLOBL mxrtab<>(SB), RODATA|NOPTR, $64

DATA mxrcodes0<>+0(SB)/8, $0x0807060504030201
DATA mxrcodes0<>+8(SB)/8, $0x100f0e0d0c0b0a09
DATA mxrcodes0<>+16(SB)/8, $0x1918171615141312
DATA mxrcodes0<>+24(SB)/8, $0x21201f1e1d1c1b1a
DATA mxrcodes0<>+32(SB)/8, $0x2a29282726252423
DATA mxrcodes0<>+40(SB)/8, $0x3231302f2e2d2c2b
DATA mxrcodes0<>+48(SB)/8, $0x3b3a393837363534
DATA mxrcodes0<>+56(SB)/8, $0x434241403f3e3d3c
GLOBL mxrcodes0<>(SB), RODATA|NOPTR, $64

DATA mxrcodes1<>+0(SB)/8, $0x0c0b0a0908070605
DATA mxrcodes1<>+8(SB)/8, $0x14131211100f0e0d
DATA mxrcodes1<>+16(SB)/8, $0x1d1c1b1a19181716
DATA mxrcodes1<>+24(SB)/8, $0x2524232221201f1e
DATA mxrcodes1<>+32(SB)/8, $0x2e2d2c2b2a292827
DATA mxrcodes1<>+40(SB)/8, $0x363534333231302f
DATA mxrcodes1<>+48(SB)/8, $0x3f3e3d3c3b3a3938
DATA mxrcodes1<>+56(SB)/8, $0x7f7e7d7c7b7a7978
GLOBL mxrcodes1<>(SB), RODATA|NOPTR, $64

DATA mxrscale<>+0(SB)/8, $0x7766554433221100
DATA mxrscale<>+8(SB)/8, $0x0000000000000000
DATA mxrscale<>+16(SB)/8, $0x0000000000000000
DATA mxrscale<>+24(SB)/8, $0x0000000000000000
DATA mxrscale<>+32(SB)/8, $0x0000000000000000
DATA mxrscale<>+40(SB)/8, $0x0000000000000000
DATA mxrscale<>+48(SB)/8, $0x0000000000000000
DATA mxrscale<>+56(SB)/8, $0x0000000000000000
GLOBL mxrscale<>(SB), RODATA|NOPTR, $64

// func mxfp4RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[3]uint64, out *float32, boff, ooff, n, pf int)
// iq4RowsAVX512's arguments; masks: the windows at 0, 64 and 72.
TEXT ·mxfp4RowsAVX512(SB), NOSPLIT, $0-112
	IQ4ROWS(mxrtab, mxrcodes0, mxrcodes1, mxrscale, MXSCALEG, MXSCALEF, 72, 136)

// IQ4_XS rows against Q8_0 activations, up to four at once (AVX-512 F,
// BW, VL, VNNI and VBMI; qdot.go's order): iq4RowsAVX512's contract, its
// codebook lookup and sums (IQ4DOT) on whole blocks of 136 bytes (fp16 d,
// scales_h[2], scales_l[4], qs[128]: sub-block ib's 16 bytes at 8+16ib, as
// an IQ4_NL block's). A group is one block, so the codes need no gather:
// qs's two halves, 64 bytes at 8 and at 72, hold sub-blocks 0..3 and 4..7
// one per 128-bit lane. The factors are IQ4XSFactors': ls = nibble ib of
// scales_l (the dword at 4 shifted right by 4ib) | bits 2ib, 2ib+1 of
// scales_h at bits 4 and 5 (the dword at 2 rotated left by 4-2ib), and
// f = d * float32(ls-32); the term float32(sum) * (f * activation scale).
//
// Registers: iq4RowsAVX512's Z31 (table) and Z27 (order); Y30, Y29 the
// scale shifts and rotations, Y28, Y19 the masks 15 and 0x30, Y18 the 32s.

DATA iq4xsrsl<>+0(SB)/8, $0x0000000400000000
DATA iq4xsrsl<>+8(SB)/8, $0x0000000c00000008
DATA iq4xsrsl<>+16(SB)/8, $0x0000001400000010
DATA iq4xsrsl<>+24(SB)/8, $0x0000001c00000018
GLOBL iq4xsrsl<>(SB), RODATA|NOPTR, $32

DATA iq4xsrsh<>+0(SB)/8, $0x0000000200000004
DATA iq4xsrsh<>+8(SB)/8, $0x0000001e00000000
DATA iq4xsrsh<>+16(SB)/8, $0x0000001a0000001c
DATA iq4xsrsh<>+24(SB)/8, $0x0000001600000018
GLOBL iq4xsrsh<>(SB), RODATA|NOPTR, $32

DATA iq4xsr0f<>+0(SB)/8, $0x0000000f0000000f
DATA iq4xsr0f<>+8(SB)/8, $0x0000000f0000000f
DATA iq4xsr0f<>+16(SB)/8, $0x0000000f0000000f
DATA iq4xsr0f<>+24(SB)/8, $0x0000000f0000000f
GLOBL iq4xsr0f<>(SB), RODATA|NOPTR, $32

DATA iq4xsr30<>+0(SB)/8, $0x0000003000000030
DATA iq4xsr30<>+8(SB)/8, $0x0000003000000030
DATA iq4xsr30<>+16(SB)/8, $0x0000003000000030
DATA iq4xsr30<>+24(SB)/8, $0x0000003000000030
GLOBL iq4xsr30<>(SB), RODATA|NOPTR, $32

DATA iq4xsr20<>+0(SB)/8, $0x0000002000000020
DATA iq4xsr20<>+8(SB)/8, $0x0000002000000020
DATA iq4xsr20<>+16(SB)/8, $0x0000002000000020
DATA iq4xsr20<>+24(SB)/8, $0x0000002000000020
GLOBL iq4xsr20<>(SB), RODATA|NOPTR, $32

// IQ4XSROW(base, Yacc): the block's terms of the row at base into Yacc.
#define IQ4XSROW(base, Yacc) \
	VMOVDQU64 8(base), Z0 \
	VMOVDQU64 72(base), Z1 \
	IQ4DOT \
	VPBROADCASTD 4(base), Y12 \
	VPSRLVD Y30, Y12, Y12 \
	VPANDD Y28, Y12, Y12 \
	VPBROADCASTD 2(base), Y13 \
	VPROLVD Y29, Y13, Y13 \
	VPANDD Y19, Y13, Y13 \
	VPORD Y13, Y12, Y12 \
	VPSUBD Y18, Y12, Y12 \
	VCVTDQ2PS Y12, Y12 \
	VPBROADCASTW 0(base), X13 \
	VCVTPH2PS X13, Y13 \
	VMULPS Y13, Y12, Y12 \
	VMULPS (DX), Y12, Y12 \
	VCVTDQ2PS Y14, Y14 \
	VMULPS Y12, Y14, Y14 \
	VADDPS Y14, Yacc, Yacc

// func iq4xsRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, blocks int, out *float32, boff, ooff, n, pf int)
// q4kRowsAVX512's arguments and walk (qdot_rows_k_amd64.s).
TEXT ·iq4xsRowsAVX512(SB), NOSPLIT, $0-96
	VMOVDQU64 iq4rtab<>(SB), Z31
	VMOVDQU64 iq4rperm<>(SB), Z27
	VMOVDQU32 iq4xsrsl<>(SB), Y30
	VMOVDQU32 iq4xsrsh<>(SB), Y29
	VMOVDQU32 iq4xsr0f<>(SB), Y28
	VMOVDQU32 iq4xsr30<>(SB), Y19
	VMOVDQU32 iq4xsr20<>(SB), Y18
	KROWSWALK(IQ4X, IQ4XSROW, IQ4PF, 136, 48, 56, 64, 72, 80, 88, KXSINIT, KXSADV)

// IQ3_S rows against Q8_0 activations in the plane order (Q8Row.q2), up to
// four at once (AVX-512 F, BW, VL, VNNI and VBMI; qdot.go's order): the
// multi-row kernels' contract (qdot_rows_amd64.s), each row's lanes and
// fold DotQ8's. A group is one block of 110 bytes (fp16 d, qs[64], qh[8],
// signs[32], scales[4]), its 8 sub-blocks of 32; rows are whole blocks, so
// there is no partial group.
//
// Grid index I = 8s+k of sub-block s is qs[I] | (bit I of the qword qh)
// << 8; weight 4k+j of the sub-block is byte j of the grid entry, its sign
// bit 4I+j of signs, and its activation x[32s+4k+j] = x[4I+j], byte I of
// plane j of the group's plane-order activations. Each grid byte is below
// 16, so the caller's table (tab, 64-byte aligned) holds bytes 0 and 1 of
// each of the 512 entries as one byte's nibbles, then bytes 2 and 3: per
// row and block, VPERMT2B looks each of the 64 indices up in the four
// 128-entry quarters of both halves, zero-masked to the lanes whose bits 7
// and 8 pick that quarter (bit 7 by VPMOVB2M, bit 8 qh's qword read as a
// mask), the quarters ORed; a nibble of the result is plane j's 64 weights
// (1..15, unsigned for VPDPBUSD). Nibble I of signs, bit j, negates byte I
// of plane j's activations (a masked subtraction from zero; the codes are
// never -128). The four planes' products are summed into one register,
// dwords 2s and 2s+1 sub-block s's; their sum times 1+2*(scale nibble s)
// is the sub-block's exact integer, and its term float32(that) * (fp16 d *
// activation scale) is added to the row's lanes.
//
// Registers: R12 the table; per block Z12..Z15 the activation planes; Z16
// the nibble mask, Z17 zero, Z18 the sums' order, Y19..Y21 the scale
// nibbles' shifts, mask and one, Z23..Z26 bits 0..3; per row Z0..Z7,
// K1..K7; Y8..Y11 the lanes of rows A..D.

DATA iq3reven<>+0(SB)/8, $0x0000000200000000
DATA iq3reven<>+8(SB)/8, $0x0000000600000004
DATA iq3reven<>+16(SB)/8, $0x0000000a00000008
DATA iq3reven<>+24(SB)/8, $0x0000000e0000000c
DATA iq3reven<>+32(SB)/8, $0x0000000000000000
DATA iq3reven<>+40(SB)/8, $0x0000000000000000
DATA iq3reven<>+48(SB)/8, $0x0000000000000000
DATA iq3reven<>+56(SB)/8, $0x0000000000000000
GLOBL iq3reven<>(SB), RODATA|NOPTR, $64

DATA iq3rshift<>+0(SB)/8, $0x0000000400000000
DATA iq3rshift<>+8(SB)/8, $0x0000000c00000008
DATA iq3rshift<>+16(SB)/8, $0x0000001400000010
DATA iq3rshift<>+24(SB)/8, $0x0000001c00000018
GLOBL iq3rshift<>(SB), RODATA|NOPTR, $32

DATA iq3rbit0<>+0(SB)/8, $0x0101010101010101
DATA iq3rbit0<>+8(SB)/8, $0x0101010101010101
DATA iq3rbit0<>+16(SB)/8, $0x0101010101010101
DATA iq3rbit0<>+24(SB)/8, $0x0101010101010101
DATA iq3rbit0<>+32(SB)/8, $0x0101010101010101
DATA iq3rbit0<>+40(SB)/8, $0x0101010101010101
DATA iq3rbit0<>+48(SB)/8, $0x0101010101010101
DATA iq3rbit0<>+56(SB)/8, $0x0101010101010101
GLOBL iq3rbit0<>(SB), RODATA|NOPTR, $64

DATA iq3rbit1<>+0(SB)/8, $0x0202020202020202
DATA iq3rbit1<>+8(SB)/8, $0x0202020202020202
DATA iq3rbit1<>+16(SB)/8, $0x0202020202020202
DATA iq3rbit1<>+24(SB)/8, $0x0202020202020202
DATA iq3rbit1<>+32(SB)/8, $0x0202020202020202
DATA iq3rbit1<>+40(SB)/8, $0x0202020202020202
DATA iq3rbit1<>+48(SB)/8, $0x0202020202020202
DATA iq3rbit1<>+56(SB)/8, $0x0202020202020202
GLOBL iq3rbit1<>(SB), RODATA|NOPTR, $64

DATA iq3rbit2<>+0(SB)/8, $0x0404040404040404
DATA iq3rbit2<>+8(SB)/8, $0x0404040404040404
DATA iq3rbit2<>+16(SB)/8, $0x0404040404040404
DATA iq3rbit2<>+24(SB)/8, $0x0404040404040404
DATA iq3rbit2<>+32(SB)/8, $0x0404040404040404
DATA iq3rbit2<>+40(SB)/8, $0x0404040404040404
DATA iq3rbit2<>+48(SB)/8, $0x0404040404040404
DATA iq3rbit2<>+56(SB)/8, $0x0404040404040404
GLOBL iq3rbit2<>(SB), RODATA|NOPTR, $64

DATA iq3rbit3<>+0(SB)/8, $0x0808080808080808
DATA iq3rbit3<>+8(SB)/8, $0x0808080808080808
DATA iq3rbit3<>+16(SB)/8, $0x0808080808080808
DATA iq3rbit3<>+24(SB)/8, $0x0808080808080808
DATA iq3rbit3<>+32(SB)/8, $0x0808080808080808
DATA iq3rbit3<>+40(SB)/8, $0x0808080808080808
DATA iq3rbit3<>+48(SB)/8, $0x0808080808080808
DATA iq3rbit3<>+56(SB)/8, $0x0808080808080808
GLOBL iq3rbit3<>(SB), RODATA|NOPTR, $64

DATA iq3rnib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL iq3rnib<>(SB), RODATA|NOPTR, $8

DATA iq3rconst<>+0(SB)/4, $15
DATA iq3rconst<>+4(SB)/4, $1
GLOBL iq3rconst<>(SB), RODATA|NOPTR, $8

// IQ3QUARTERS(off, Zr): Zr = the table half at R12+off looked up by the
// indices' low 7 bits (Z5) in the quarter K1..K4 picks, lane by lane.
#define IQ3QUARTERS(off, Zr) \
	VMOVDQU64 (off)(R12), Zr \
	VPERMT2B.Z (off+64)(R12), Z5, K1, Zr \
	VMOVDQU64 (off+128)(R12), Z2 \
	VPERMT2B.Z (off+192)(R12), Z5, K2, Z2 \
	VMOVDQU64 (off+256)(R12), Z3 \
	VPERMT2B.Z (off+320)(R12), Z5, K3, Z3 \
	VMOVDQU64 (off+384)(R12), Z4 \
	VPERMT2B.Z (off+448)(R12), Z5, K4, Z4 \
	VPTERNLOGD $0xfe, Z3, Z2, Zr \
	VPORD Z4, Zr, Zr

// IQ3PLANE(Zw, Zbit, Zx, K): the plane's weights Zw against its
// activations Zx, negated where Z5 has the sign bit Zbit, into Z7.
#define IQ3PLANE(Zw, Zbit, Zx, K) \
	VPTESTMB Zbit, Z5, K \
	VMOVDQA64 Zx, Z6 \
	VPSUBB Zx, Z17, K, Z6 \
	VPDPBUSD Z6, Zw, Z7

// IQ3ROW(base, Yacc): the block at base into Yacc.
#define IQ3ROW(base, Yacc) \
	VMOVDQU64 2(base), Z5 \
	KMOVQ 66(base), K7 \
	VPMOVB2M Z5, K6 \
	KORQ K6, K7, K1 \
	KNOTQ K1, K1 \
	KANDNQ K6, K7, K2 \
	KANDNQ K7, K6, K3 \
	KANDQ K6, K7, K4 \
	IQ3QUARTERS(0, Z0) \
	IQ3QUARTERS(512, Z1) \
	VPMOVZXBW 74(base), Z5 \
	VPSLLW $4, Z5, Z6 \
	VPORQ Z6, Z5, Z5 \
	VPXORD Z7, Z7, Z7 \
	VPANDQ Z16, Z0, Z2 \
	VPSRLW $4, Z0, Z0 \
	VPANDQ Z16, Z0, Z0 \
	VPANDQ Z16, Z1, Z3 \
	VPSRLW $4, Z1, Z1 \
	VPANDQ Z16, Z1, Z1 \
	IQ3PLANE(Z2, Z23, Z12, K1) \
	IQ3PLANE(Z0, Z24, Z13, K2) \
	IQ3PLANE(Z3, Z25, Z14, K3) \
	IQ3PLANE(Z1, Z26, Z15, K4) \
	VPSHUFD $0xb1, Z7, Z6 \
	VPADDD Z6, Z7, Z7 \
	VPERMD Z7, Z18, Z7 \
	VPBROADCASTD 106(base), Y6 \
	VPSRLVD Y19, Y6, Y6 \
	VPANDD Y20, Y6, Y6 \
	VPADDD Y6, Y6, Y6 \
	VPADDD Y21, Y6, Y6 \
	VPMULLD Y6, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VPBROADCASTW 0(base), X6 \
	VCVTPH2PS X6, Y6 \
	VMULPS (DX), Y6, Y6 \
	VMULPS Y6, Y7, Y7 \
	VADDPS Y7, Yacc, Yacc

// IQ3PF(base): the block pf (R14) bytes ahead of base, a line at a time.
#define IQ3PF(base) \
	PREFETCHT0 (base)(R14*1) \
	PREFETCHT0 64(base)(R14*1)

// PROWSWALK(ROW, PF, bb): the walk of the plane-order row kernels (IQ3_S,
// IQ3_XXS, IQ2_XXS: iq3RowsAVX512's arguments and contract), rows whole
// blocks of bb bytes; per block the group's activation planes into
// Z12..Z15, ROW(base, Yacc) a row's terms, PF(base) its prefetch; R12 the
// table, BX the streams. Labels are the function's own.
#define PROWSWALK(ROW, PF, bb) \
	MOVQ  tab+48(FP), R12 \
	MOVQ  w+0(FP), R13 \
	MOVQ  rows+16(FP), R10 \
	MOVQ  out+56(FP), R8 \
	MOVQ  pf+88(FP), R14 \
	TESTQ R10, R10 \
	JZ    pwdone \
pwrow: \
	MOVQ R13, SI \
	MOVQ boff+64(FP), AX \
	LEAQ (R13)(AX*1), R15 \
	LEAQ (R13)(AX*2), R11 \
	LEAQ (R15)(AX*2), R9 \
	MOVQ xq+24(FP), DI \
	MOVQ xd+32(FP), DX \
	MOVQ blocks+40(FP), CX \
	MOVQ n+80(FP), BX \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
	TESTQ CX, CX \
	JZ    pwfold \
pwblock: \
	TESTQ R14, R14 \
	JZ    pwx \
	PF(SI) \
	CMPQ  BX, $2 \
	JLT   pwx \
	PF(R15) \
	CMPQ  BX, $3 \
	JLT   pwx \
	PF(R11) \
	CMPQ  BX, $4 \
	JLT   pwx \
	PF(R9) \
pwx: \
	VMOVDQU64 0(DI), Z12 \
	VMOVDQU64 64(DI), Z13 \
	VMOVDQU64 128(DI), Z14 \
	VMOVDQU64 192(DI), Z15 \
	ROW(SI, Y8) \
	CMPQ BX, $2 \
	JLT  pwnext \
	ROW(R15, Y9) \
	CMPQ BX, $3 \
	JLT  pwnext \
	ROW(R11, Y10) \
	CMPQ BX, $4 \
	JLT  pwnext \
	ROW(R9, Y11) \
pwnext: \
	ADDQ $(bb), SI \
	ADDQ $(bb), R15 \
	ADDQ $(bb), R11 \
	ADDQ $(bb), R9 \
	ADDQ $256, DI \
	ADDQ $32, DX \
	DECQ CX \
	JNZ  pwblock \
pwfold: \
	FOLDROWS4(ooff+72(FP), BX, pwadv) \
pwadv: \
	ADDQ $4, R8 \
	ADDQ stride+8(FP), R13 \
	DECQ R10 \
	JNZ  pwrow \
pwdone: \
	VZEROUPPER \
	RET

// func iq3RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, tab *byte, out *float32, boff, ooff, n, pf int)
// rows: rows A, each stride bytes from the last, outputs at out; with n
// (1..4) streams, as many rows B, C, D, boff, 2boff, 3boff bytes after
// each A, outputs ooff, 2ooff, 3ooff bytes after A's; xq the plane-order
// activations; tab the nibble table; pf: each stream prefetched pf bytes
// ahead (PREFETCHT0, 0 for none).
TEXT ·iq3RowsAVX512(SB), NOSPLIT, $0-96
	VPBROADCASTQ iq3rnib<>(SB), Z16
	VPXORD Z17, Z17, Z17
	VMOVDQU64 iq3reven<>(SB), Z18
	VMOVDQU32 iq3rshift<>(SB), Y19
	VPBROADCASTD iq3rconst<>+0(SB), Y20
	VPBROADCASTD iq3rconst<>+4(SB), Y21
	VMOVDQU64 iq3rbit0<>(SB), Z23
	VMOVDQU64 iq3rbit1<>(SB), Z24
	VMOVDQU64 iq3rbit2<>(SB), Z25
	VMOVDQU64 iq3rbit3<>(SB), Z26
	PROWSWALK(IQ3ROW, IQ3PF, 110)

// IQ3_XXS and IQ2_XXS rows against Q8_0 activations in the plane order
// (Q8Row.q2), up to four at once (AVX-512 F, BW, VL, VNNI and VBMI;
// qdot.go's order): iq3RowsAVX512's contract, walk and plane products
// (IQ3PLANE, its sub-block order). Rows are whole 256-weight blocks:
//
//   IQ3_XXS, 98 bytes: fp16 d, qs[64] grid indices (4 weights each), at
//   66 the 8 sub-blocks' words (4 sign fields of 7 bits, scale in the
//   top 4);
//   IQ2_XXS, 66 bytes: fp16 d, per sub-block at 2+8ib 4 grid indices (8
//   weights each) and the word.
//
// IQ3_XXS's index I (0..63) is weights 4I..4I+3, so byte j of its grid
// entry is plane j's weight I (against byte I of activation plane j);
// IQ2_XXS's index i (0..31) is two such virtual indices I = 2i and 2i+1,
// bytes 0..3 and 4..7 of its entry. The caller's table (tab, xxsTab)
// holds IQ3_XXS's grid as 4 byte planes of 256 entries, looked up by
// VPERMT2B in each 128-entry half, zero-masked by bit 7, ORed; and
// IQ2_XXS's grid bytes as 2-bit codes (its only values are 3), the four
// planes' in one byte, 512 entries (entry | 256 for the odd virtual
// indices: IQ3QUARTERS with the odd lanes as the ninth bit), the planes'
// values by VPERMB from the code byte (plane 3 after a shift by 2).
// Signs: the 32 fields (VPMULTISHIFTQB from the words), field (ib, l) the
// 8 weights 8l.. of sub-block ib, i.e. virtual indices 8ib+2l and 8ib+2l+1,
// spread so that byte I holds its index's field (VPERMB) and mapped by
// ksigns_iq2xs (7-bit field, parity as bit 7) from the table: bit j of
// byte I (I even) or bit j+4 (I odd) negates plane j's activation I
// (IQ3PLANE against Z23..Z26). The factor d * (0.5 + word>>28) * 0.5
// (IQ3_XXS) or * 0.25 (IQ2_XXS), the term float32(sum) * (factor *
// activation scale).
//
// Registers: R12 the table; K7 IQ2_XXS's odd lanes; Z17 zero, Z18 the
// sums' order, Y19 0.5s, Y16 the factor's last multiplier, Z20 the field
// shifts, Z21 the spread, Z23..Z26 the sign bits; per block Z12..Z15 the
// activation planes; per row Z0..Z7, K1..K6; Y8..Y11 the lanes.

DATA xxsrexp3<>+0(SB)/8, $0x0303020201010000
DATA xxsrexp3<>+8(SB)/8, $0x0707060605050404
DATA xxsrexp3<>+16(SB)/8, $0x0b0b0a0a09090808
DATA xxsrexp3<>+24(SB)/8, $0x0f0f0e0e0d0d0c0c
DATA xxsrexp3<>+32(SB)/8, $0x1313121211111010
DATA xxsrexp3<>+40(SB)/8, $0x1717161615151414
DATA xxsrexp3<>+48(SB)/8, $0x1b1b1a1a19191818
DATA xxsrexp3<>+56(SB)/8, $0x1f1f1e1e1d1d1c1c
GLOBL xxsrexp3<>(SB), RODATA|NOPTR, $64

DATA xxsrexp2<>+0(SB)/8, $0x0303020201010000
DATA xxsrexp2<>+8(SB)/8, $0x0b0b0a0a09090808
DATA xxsrexp2<>+16(SB)/8, $0x1313121211111010
DATA xxsrexp2<>+24(SB)/8, $0x1b1b1a1a19191818
DATA xxsrexp2<>+32(SB)/8, $0x2323222221212020
DATA xxsrexp2<>+40(SB)/8, $0x2b2b2a2a29292828
DATA xxsrexp2<>+48(SB)/8, $0x3333323231313030
DATA xxsrexp2<>+56(SB)/8, $0x3b3b3a3a39393838
GLOBL xxsrexp2<>(SB), RODATA|NOPTR, $64

DATA xxsrctl3<>+0(SB)/8, $0x352e2720150e0700
DATA xxsrctl3<>+8(SB)/8, $0x352e2720150e0700
DATA xxsrctl3<>+16(SB)/8, $0x352e2720150e0700
DATA xxsrctl3<>+24(SB)/8, $0x352e2720150e0700
GLOBL xxsrctl3<>(SB), RODATA|NOPTR, $32

DATA xxsrctl2<>+0(SB)/8, $0x00000000352e2720
DATA xxsrctl2<>+8(SB)/8, $0x00000000352e2720
DATA xxsrctl2<>+16(SB)/8, $0x00000000352e2720
DATA xxsrctl2<>+24(SB)/8, $0x00000000352e2720
DATA xxsrctl2<>+32(SB)/8, $0x00000000352e2720
DATA xxsrctl2<>+40(SB)/8, $0x00000000352e2720
DATA xxsrctl2<>+48(SB)/8, $0x00000000352e2720
DATA xxsrctl2<>+56(SB)/8, $0x00000000352e2720
GLOBL xxsrctl2<>(SB), RODATA|NOPTR, $64

DATA xxsrbit0<>+0(SB)/8, $0x1001100110011001
DATA xxsrbit0<>+8(SB)/8, $0x1001100110011001
DATA xxsrbit0<>+16(SB)/8, $0x1001100110011001
DATA xxsrbit0<>+24(SB)/8, $0x1001100110011001
DATA xxsrbit0<>+32(SB)/8, $0x1001100110011001
DATA xxsrbit0<>+40(SB)/8, $0x1001100110011001
DATA xxsrbit0<>+48(SB)/8, $0x1001100110011001
DATA xxsrbit0<>+56(SB)/8, $0x1001100110011001
GLOBL xxsrbit0<>(SB), RODATA|NOPTR, $64

DATA xxsrbit1<>+0(SB)/8, $0x2002200220022002
DATA xxsrbit1<>+8(SB)/8, $0x2002200220022002
DATA xxsrbit1<>+16(SB)/8, $0x2002200220022002
DATA xxsrbit1<>+24(SB)/8, $0x2002200220022002
DATA xxsrbit1<>+32(SB)/8, $0x2002200220022002
DATA xxsrbit1<>+40(SB)/8, $0x2002200220022002
DATA xxsrbit1<>+48(SB)/8, $0x2002200220022002
DATA xxsrbit1<>+56(SB)/8, $0x2002200220022002
GLOBL xxsrbit1<>(SB), RODATA|NOPTR, $64

DATA xxsrbit2<>+0(SB)/8, $0x4004400440044004
DATA xxsrbit2<>+8(SB)/8, $0x4004400440044004
DATA xxsrbit2<>+16(SB)/8, $0x4004400440044004
DATA xxsrbit2<>+24(SB)/8, $0x4004400440044004
DATA xxsrbit2<>+32(SB)/8, $0x4004400440044004
DATA xxsrbit2<>+40(SB)/8, $0x4004400440044004
DATA xxsrbit2<>+48(SB)/8, $0x4004400440044004
DATA xxsrbit2<>+56(SB)/8, $0x4004400440044004
GLOBL xxsrbit2<>(SB), RODATA|NOPTR, $64

DATA xxsrbit3<>+0(SB)/8, $0x8008800880088008
DATA xxsrbit3<>+8(SB)/8, $0x8008800880088008
DATA xxsrbit3<>+16(SB)/8, $0x8008800880088008
DATA xxsrbit3<>+24(SB)/8, $0x8008800880088008
DATA xxsrbit3<>+32(SB)/8, $0x8008800880088008
DATA xxsrbit3<>+40(SB)/8, $0x8008800880088008
DATA xxsrbit3<>+48(SB)/8, $0x8008800880088008
DATA xxsrbit3<>+56(SB)/8, $0x8008800880088008
GLOBL xxsrbit3<>(SB), RODATA|NOPTR, $64

DATA xxsrconst<>+0(SB)/4, $0x3f000000
DATA xxsrconst<>+4(SB)/4, $0x3e800000
GLOBL xxsrconst<>(SB), RODATA|NOPTR, $8

// XXS3LOOK(j, Zr): Zr = byte plane j of the IQ3_XXS grid entries of the
// indices in Z5 (K1: bit 7 clear, K2: set).
#define XXS3LOOK(j, Zr) \
	VMOVDQU64 (256*j)(R12), Zr \
	VPERMT2B.Z (256*j+64)(R12), Z5, K1, Zr \
	VMOVDQU64 (256*j+128)(R12), Z4 \
	VPERMT2B.Z (256*j+192)(R12), Z5, K2, Z4 \
	VPORD Z4, Zr, Zr

// XXSDOT(Zf, Zw0, Zw1, Zw2, Zw3): Y7 = the 8 sub-block sums of the planes'
// weights Zw0..Zw3 against the activation planes, signed by the fields in
// Zf's bytes (Zf clobbered).
#define XXSDOT(Zf, Zw0, Zw1, Zw2, Zw3) \
	VPERMB Zf, Z21, Zf \
	VMOVDQU64 1024(R12), Z5 \
	VPERMT2B 1088(R12), Zf, Z5 \
	VPXORD Z7, Z7, Z7 \
	IQ3PLANE(Zw0, Z23, Z12, K1) \
	IQ3PLANE(Zw1, Z24, Z13, K2) \
	IQ3PLANE(Zw2, Z25, Z14, K3) \
	IQ3PLANE(Zw3, Z26, Z15, K4) \
	VPSHUFD $0xb1, Z7, Z6 \
	VPADDD Z6, Z7, Z7 \
	VPERMD Z7, Z18, Z7

// XXSTERM(base, Yacc): the terms of the sums Y7 and the scales word>>28
// in Y6 into Yacc.
#define XXSTERM(base, Yacc) \
	VCVTDQ2PS Y6, Y6 \
	VADDPS Y19, Y6, Y6 \
	VPBROADCASTW 0(base), X4 \
	VCVTPH2PS X4, Y4 \
	VMULPS Y6, Y4, Y4 \
	VMULPS Y16, Y4, Y4 \
	VMULPS (DX), Y4, Y4 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS Y4, Y7, Y7 \
	VADDPS Y7, Yacc, Yacc

// IQ3XXSROW(base, Yacc): the IQ3_XXS block at base into Yacc.
#define IQ3XXSROW(base, Yacc) \
	VMOVDQU64 2(base), Z5 \
	VPMOVB2M Z5, K2 \
	KNOTQ K2, K1 \
	XXS3LOOK(0, Z0) \
	XXS3LOOK(1, Z1) \
	XXS3LOOK(2, Z2) \
	XXS3LOOK(3, Z3) \
	VPMULTISHIFTQB 66(base), Y20, Y4 \
	XXSDOT(Z4, Z0, Z1, Z2, Z3) \
	VMOVDQU 66(base), Y6 \
	VPSRLD $28, Y6, Y6 \
	XXSTERM(base, Yacc)

// IQ2XXSROW(base, Yacc): the IQ2_XXS block at base into Yacc.
#define IQ2XXSROW(base, Yacc) \
	VMOVDQU64 2(base), Z6 \
	VPERMB Z6, Z21, Z5 \
	VPMULTISHIFTQB Z6, Z20, Z6 \
	VPMOVB2M Z5, K6 \
	KORQ K6, K7, K1 \
	KNOTQ K1, K1 \
	KANDNQ K6, K7, K2 \
	KANDNQ K7, K6, K3 \
	KANDQ K6, K7, K4 \
	IQ3QUARTERS(1152, Z1) \
	VPERMB 1664(R12), Z1, Z0 \
	VPERMB 1728(R12), Z1, Z2 \
	VPERMB 1792(R12), Z1, Z3 \
	VPSRLW $2, Z1, Z1 \
	VPERMB 1792(R12), Z1, Z1 \
	XXSDOT(Z6, Z0, Z2, Z3, Z1) \
	VMOVDQU64 2(base), Z6 \
	VPSRLQ $60, Z6, Z6 \
	VPMOVQD Z6, Y6 \
	XXSTERM(base, Yacc)

// func iq3xxsRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, tab *byte, out *float32, boff, ooff, n, pf int)
// iq3RowsAVX512's arguments; tab is xxsTab.
TEXT ·iq3xxsRowsAVX512(SB), NOSPLIT, $0-96
	VPXORD Z17, Z17, Z17
	VMOVDQU64 iq3reven<>(SB), Z18
	VBROADCASTSS xxsrconst<>+0(SB), Y19
	VBROADCASTSS xxsrconst<>+0(SB), Y16
	VMOVDQU64 xxsrctl3<>(SB), Z20
	VMOVDQU64 xxsrexp3<>(SB), Z21
	VMOVDQU64 xxsrbit0<>(SB), Z23
	VMOVDQU64 xxsrbit1<>(SB), Z24
	VMOVDQU64 xxsrbit2<>(SB), Z25
	VMOVDQU64 xxsrbit3<>(SB), Z26
	PROWSWALK(IQ3XXSROW, IQ3PF, 98)

// func iq2xxsRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, tab *byte, out *float32, boff, ooff, n, pf int)
// iq3RowsAVX512's arguments; tab is xxsTab.
TEXT ·iq2xxsRowsAVX512(SB), NOSPLIT, $0-96
	VPXORD Z17, Z17, Z17
	VMOVDQU64 iq3reven<>(SB), Z18
	VBROADCASTSS xxsrconst<>+0(SB), Y19
	VBROADCASTSS xxsrconst<>+4(SB), Y16
	VMOVDQU64 xxsrctl2<>(SB), Z20
	VMOVDQU64 xxsrexp2<>(SB), Z21
	VMOVDQU64 xxsrbit0<>(SB), Z23
	VMOVDQU64 xxsrbit1<>(SB), Z24
	VMOVDQU64 xxsrbit2<>(SB), Z25
	VMOVDQU64 xxsrbit3<>(SB), Z26
	MOVQ  $0xaaaaaaaaaaaaaaaa, AX
	KMOVQ AX, K7
	PROWSWALK(IQ2XXSROW, IQ3PF, 66)

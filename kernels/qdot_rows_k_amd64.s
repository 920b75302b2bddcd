//go:build amd64 && !noasm

#include "textflag.h"
#include "qdot_amd64.h"

// Q4_K rows against Q8_0 activations, up to four at once (AVX-512 F, BW,
// VL and VNNI; qdot.go's order, its K-quant term): the multi-row kernels'
// contract (qdot_rows_amd64.s), each row's lanes and fold DotQ8's, its
// terms q8dotQ4KAVX2's (qdot_k_amd64.s) operation for operation.
//
// A group is one block of 144 bytes (fp16 d, fp16 dmin, scales[12],
// qs[128]); rows are whole blocks, so there is no partial group. Per row
// and block, each 32 bytes c of qs are broadcast to both halves of a zmm,
// the upper half shifted right by 4 (VPSRLVQ) and the nibbles masked:
// sub-blocks 2c and 2c+1's codes, against the activations' natural bytes
// 64c..64c+63 (shared by the rows, loaded once per block) by VPDPBUSD.
// The four products' dwords are summed to the 8 sub-block totals
// (sub-block order by VPERMD), and the 8 scales and mins unpacked from the
// 12 bytes by VPSHUFB (ggml's get_scale_min_k4 on bytes); the term, as
// q8dotQ4KAVX2: float32(sum*scale) * (d * dx) - float32(min*block sum) *
// (dmin * dx), added to the row's lanes.
//
// Registers: Z31 the shift counts, Z30 the nibble mask, Y29 the sums'
// order, X28, X27 the low scale bytes' shuffle and mask, X26 the high
// nibbles' shuffle, X25 the top bits' shuffle, X19 their mask; per block
// Z20..Z23 the activations, Y24 their block sums, Y18 their scales; per
// row Z0..Z7, Z12..Z15; Y8..Y11 the lanes of rows A..D.

DATA q4krshift<>+0(SB)/8, $0
DATA q4krshift<>+8(SB)/8, $0
DATA q4krshift<>+16(SB)/8, $0
DATA q4krshift<>+24(SB)/8, $0
DATA q4krshift<>+32(SB)/8, $4
DATA q4krshift<>+40(SB)/8, $4
DATA q4krshift<>+48(SB)/8, $4
DATA q4krshift<>+56(SB)/8, $4
GLOBL q4krshift<>(SB), RODATA|NOPTR, $64

DATA q4kr0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kr0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kr0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kr0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kr0f<>+32(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kr0f<>+40(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kr0f<>+48(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kr0f<>+56(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q4kr0f<>(SB), RODATA|NOPTR, $64

// q4krperm: the totals come out as sub-blocks 0, 2, 4, 6, 1, 3, 5, 7.
DATA q4krperm<>+0(SB)/8, $0x0000000400000000
DATA q4krperm<>+8(SB)/8, $0x0000000500000001
DATA q4krperm<>+16(SB)/8, $0x0000000600000002
DATA q4krperm<>+24(SB)/8, $0x0000000700000003
GLOBL q4krperm<>(SB), RODATA|NOPTR, $32

// The block's first 16 bytes (d, dmin, scale bytes q0..q11 at 4..15) to
// scales 0..7 in bytes 0..7 and mins 0..7 in bytes 8..15: j < 4, scale
// q[j]&63 and min q[j+4]&63; j >= 4, scale q[j+4]&15 | (q[j-4]>>6)<<4 and
// min q[j+4]>>4 | (q[j]>>6)<<4. q4krlo takes the low bits (then masked
// by q4krlomask), q4krhi the high nibbles of q8..q11, q4krtop the top two
// bits of q0..q7 (as bits 4 and 5).
DATA q4krlo<>+0(SB)/8, $0x0f0e0d0c07060504
DATA q4krlo<>+8(SB)/8, $0x808080800b0a0908
GLOBL q4krlo<>(SB), RODATA|NOPTR, $16

DATA q4krlomask<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA q4krlomask<>+8(SB)/8, $0x000000003f3f3f3f
GLOBL q4krlomask<>(SB), RODATA|NOPTR, $16

DATA q4krhi<>+0(SB)/8, $0x8080808080808080
DATA q4krhi<>+8(SB)/8, $0x0f0e0d0c80808080
GLOBL q4krhi<>(SB), RODATA|NOPTR, $16

DATA q4krtop<>+0(SB)/8, $0x0706050480808080
DATA q4krtop<>+8(SB)/8, $0x0b0a090880808080
GLOBL q4krtop<>(SB), RODATA|NOPTR, $16

DATA q4kr30<>+0(SB)/8, $0x3030303030303030
DATA q4kr30<>+8(SB)/8, $0x3030303030303030
GLOBL q4kr30<>(SB), RODATA|NOPTR, $16

// KHALVES: Z13 = the 16 half totals of the products in Z4..Z7 (Zk's
// 128-bit lane L a 16-weight half of sub-block 2k+L/2, 4 dword partials):
// dword 4L+k is half 4k+L (Z12, Z14, Z15 clobbered).
#define KHALVES \
	VPUNPCKLQDQ Z5, Z4, Z12 \
	VPUNPCKHQDQ Z5, Z4, Z13 \
	VPADDD Z13, Z12, Z12 \
	VPUNPCKLQDQ Z7, Z6, Z14 \
	VPUNPCKHQDQ Z7, Z6, Z15 \
	VPADDD Z15, Z14, Z14 \
	VSHUFPS $0x88, Z14, Z12, Z13 \
	VSHUFPS $0xdd, Z14, Z12, Z15 \
	VPADDD Z15, Z13, Z13

// Q4KRX: the block's activations at DI, scales at DX and sums at BX, for
// every row.
#define Q4KRX \
	VMOVDQU64 0(DI), Z20 \
	VMOVDQU64 64(DI), Z21 \
	VMOVDQU64 128(DI), Z22 \
	VMOVDQU64 192(DI), Z23 \
	VMOVDQU32 (BX), Y24 \
	VMOVUPS (DX), Y18

// Q4KRCODES(at, Z): Z = the codes of the sub-block pair whose 32 bytes of
// nibbles are at at.
#define Q4KRCODES(at, Z) \
	VBROADCASTI64X4 at, Z \
	VPSRLVQ Z31, Z, Z \
	VPANDD Z30, Z, Z

// Q4KRCODES4(base, qoff): Z0..Z3 = the codes of sub-blocks 0..7 of the
// row at base, qs at qoff.
#define Q4KRCODES4(base, qoff) \
	Q4KRCODES((qoff)(base), Z0) \
	Q4KRCODES((qoff+32)(base), Z1) \
	Q4KRCODES((qoff+64)(base), Z2) \
	Q4KRCODES((qoff+96)(base), Z3)

// Q4KROW(base, Yacc): the block's terms of the row at base into Yacc.
#define Q4KROW(base, Yacc) \
	Q4KRCODES4(base, 16) \
	Q4KRTERM(base, Yacc)

// Q4KRTERM(base, Yacc): the terms of the codes in Z0..Z3 (Q4_K's or
// Q5_K's) into Yacc, d, dmin and the scales from the block at base.
#define Q4KRTERM(base, Yacc) \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPDPBUSD Z20, Z0, Z4 \
	VPDPBUSD Z21, Z1, Z5 \
	VPDPBUSD Z22, Z2, Z6 \
	VPDPBUSD Z23, Z3, Z7 \
	KHALVES \
	VSHUFI64X2 $0x88, Z13, Z13, Z14 \
	VSHUFI64X2 $0xdd, Z13, Z13, Z15 \
	VPADDD Y15, Y14, Y14 \
	VPERMD Y14, Y29, Y14 \
	VMOVDQU (base), X1 \
	VPSHUFB X28, X1, X2 \
	VPANDD X27, X2, X2 \
	VPSRLW $4, X1, X3 \
	VPANDD X30, X3, X3 \
	VPSHUFB X26, X3, X3 \
	VPSRLW $2, X1, X1 \
	VPANDD X19, X1, X1 \
	VPSHUFB X25, X1, X1 \
	VPOR X3, X2, X2 \
	VPOR X1, X2, X2 \
	VPMOVZXBD X2, Y0 \
	VPSHUFD $0xee, X2, X2 \
	VPMOVZXBD X2, Y3 \
	VPMULLD Y0, Y14, Y14 \
	VCVTDQ2PS Y14, Y14 \
	VPBROADCASTW 0(base), X13 \
	VCVTPH2PS X13, Y13 \
	VMULPS Y18, Y13, Y13 \
	VMULPS Y13, Y14, Y14 \
	VPMULLD Y24, Y3, Y15 \
	VCVTDQ2PS Y15, Y15 \
	VPBROADCASTW 2(base), X13 \
	VCVTPH2PS X13, Y13 \
	VMULPS Y18, Y13, Y13 \
	VMULPS Y13, Y15, Y15 \
	VSUBPS Y15, Y14, Y14 \
	VADDPS Y14, Yacc, Yacc

// Q4KPF(base): the block pf (R14) bytes ahead of base, a line at a time.
#define Q4KPF(base) \
	PREFETCHT0 (base)(R14*1) \
	PREFETCHT0 64(base)(R14*1) \
	PREFETCHT0 128(base)(R14*1)

// func q4kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, blocks int, out *float32, boff, ooff, n, pf int)
// rows: rows A, each stride bytes from the last, outputs at out; with n
// (1..4) streams, as many rows B, C, D, boff, 2boff, 3boff bytes after
// each A, outputs ooff, 2ooff, 3ooff bytes after A's. pf: each stream
// prefetched pf bytes ahead (PREFETCHT0, 0 for none).
TEXT ·q4kRowsAVX512(SB), NOSPLIT, $0-96
	VMOVDQU64 q4krshift<>(SB), Z31
	VMOVDQU64 q4kr0f<>(SB), Z30
	VMOVDQU32 q4krperm<>(SB), Y29
	VMOVDQU32 q4krlo<>(SB), X28
	VMOVDQU32 q4krlomask<>(SB), X27
	VMOVDQU32 q4krhi<>(SB), X26
	VMOVDQU32 q4krtop<>(SB), X25
	VMOVDQU32 q4kr30<>(SB), X19
	KROWSWALK(Q4KRX, Q4KROW, Q4KPF, 144, 48, 56, 64, 72, 80, 88, KXSINIT, KXSADV)

// Q5_K rows: q4kRowsAVX512 for Q5_K's blocks of 176 bytes (d, dmin,
// scales[12], qh[32] at 16, qs[128] at 48), its terms q8dotQ5KAVX512's:
// Q4_K's codes from qs at 48, bit s of qh[j] adding 16 to code j of
// sub-block s (qh broadcast to both halves in Z16, shifted right by 2 per
// pair so that bits 0 and 1 of each byte are the pair's, tested against
// Z17's bit 0 in the lower half and bit 1 in the upper, the 16 added under
// the byte mask: KRHI).

DATA q5krbits12<>+0(SB)/8, $0x0101010101010101
DATA q5krbits12<>+8(SB)/8, $0x0101010101010101
DATA q5krbits12<>+16(SB)/8, $0x0101010101010101
DATA q5krbits12<>+24(SB)/8, $0x0101010101010101
DATA q5krbits12<>+32(SB)/8, $0x0202020202020202
DATA q5krbits12<>+40(SB)/8, $0x0202020202020202
DATA q5krbits12<>+48(SB)/8, $0x0202020202020202
DATA q5krbits12<>+56(SB)/8, $0x0202020202020202
GLOBL q5krbits12<>(SB), RODATA|NOPTR, $64

DATA q5kr10<>+0(SB)/8, $0x1010101010101010
DATA q5kr10<>+8(SB)/8, $0x1010101010101010
DATA q5kr10<>+16(SB)/8, $0x1010101010101010
DATA q5kr10<>+24(SB)/8, $0x1010101010101010
DATA q5kr10<>+32(SB)/8, $0x1010101010101010
DATA q5kr10<>+40(SB)/8, $0x1010101010101010
DATA q5kr10<>+48(SB)/8, $0x1010101010101010
DATA q5kr10<>+56(SB)/8, $0x1010101010101010
GLOBL q5kr10<>(SB), RODATA|NOPTR, $64

// KRHI(Z, add): the pair's high code bits (Q5_K's bit 4, Q3_K's bit 2)
// into the codes in Z, add where the bit of Z16 (qh, hmask) that Z17
// tests is set, then the next pair's bits to bits 0 and 1.
#define KRHI(Z, add) \
	VPTESTMB Z17, Z16, K1 \
	VPADDB add, Z, K1, Z \
	VPSRLW $2, Z16, Z16

// Q5KROW(base, Yacc): the block's terms of the Q5_K row at base into Yacc.
#define Q5KROW(base, Yacc) \
	Q4KRCODES4(base, 48) \
	VBROADCASTI64X4 16(base), Z16 \
	KRHI(Z0, q5kr10<>(SB)) \
	KRHI(Z1, q5kr10<>(SB)) \
	KRHI(Z2, q5kr10<>(SB)) \
	KRHI(Z3, q5kr10<>(SB)) \
	Q4KRTERM(base, Yacc)

// func q5kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, blocks int, out *float32, boff, ooff, n, pf int)
// q4kRowsAVX512's arguments and walk.
TEXT ·q5kRowsAVX512(SB), NOSPLIT, $0-96
	VMOVDQU64 q4krshift<>(SB), Z31
	VMOVDQU64 q4kr0f<>(SB), Z30
	VMOVDQU32 q4krperm<>(SB), Y29
	VMOVDQU32 q4krlo<>(SB), X28
	VMOVDQU32 q4krlomask<>(SB), X27
	VMOVDQU32 q4krhi<>(SB), X26
	VMOVDQU32 q4krtop<>(SB), X25
	VMOVDQU32 q4kr30<>(SB), X19
	VMOVDQU64 q5krbits12<>(SB), Z17
	KROWSWALK(Q4KRX, Q5KROW, Q4KPF, 176, 48, 56, 64, 72, 80, 88, KXSINIT, KXSADV)

// Q6_K rows against Q8_0 activations, up to four at once (AVX-512 F, BW,
// VL and VNNI; qdot.go's order, its K-quant term): the multi-row kernels'
// contract, each row's lanes and fold DotQ8's, its terms q8dotQ6KAVX512's
// (qdot_k_amd64.s) operation for operation.
//
// A group is one block of 210 bytes (ql[128], qh[64] at 128, 16 int8
// scales at 192, fp16 d at 208); rows are whole blocks. Per row and half
// h of a block, the 64 bytes ql[64h:] give sub-blocks 4h and 4h+1 (low
// nibbles) and 4h+2 and 4h+3 (high), against the activations' natural
// bytes 128h..128h+127; qh[32h:] broadcast to both halves of a zmm adds
// bits 4 and 5 by word shifts (left 4 | 2, right 0 | 2). The codes u
// (0..63) by VPDPBUSD onto the block's 32*(-x) partials (VPDPBUSD of 32
// and the negated activations, once per block for the rows), so each
// 128-bit lane of the four products holds a 16-weight half's dwords; the
// 16 half totals times their scales (VPSHUFB to the totals' order,
// VPMOVSXBD, VPMULLD), each sub-block's two added and put in sub-block
// order (VPERMD); the term float32(sum) * (d * dx), added to the row's
// lanes.
//
// Registers: Z31, Z25 the high bits' left and right shifts, Z30 the
// nibble mask, Z28 the high bits' mask, Z27 bytes 32, Y29 the sums'
// order, X26 the scales' order; per block Z20..Z23 the activations,
// Z16..Z19 their 32*(-x) partials, Y24 their scales; per row Z0..Z7,
// Z12..Z15; Y8..Y11 the lanes of rows A..D.

DATA q6krsl<>+0(SB)/8, $0x0004000400040004
DATA q6krsl<>+8(SB)/8, $0x0004000400040004
DATA q6krsl<>+16(SB)/8, $0x0004000400040004
DATA q6krsl<>+24(SB)/8, $0x0004000400040004
DATA q6krsl<>+32(SB)/8, $0x0002000200020002
DATA q6krsl<>+40(SB)/8, $0x0002000200020002
DATA q6krsl<>+48(SB)/8, $0x0002000200020002
DATA q6krsl<>+56(SB)/8, $0x0002000200020002
GLOBL q6krsl<>(SB), RODATA|NOPTR, $64

DATA q6krsr<>+0(SB)/8, $0
DATA q6krsr<>+8(SB)/8, $0
DATA q6krsr<>+16(SB)/8, $0
DATA q6krsr<>+24(SB)/8, $0
DATA q6krsr<>+32(SB)/8, $0x0002000200020002
DATA q6krsr<>+40(SB)/8, $0x0002000200020002
DATA q6krsr<>+48(SB)/8, $0x0002000200020002
DATA q6krsr<>+56(SB)/8, $0x0002000200020002
GLOBL q6krsr<>(SB), RODATA|NOPTR, $64

DATA q6kr30<>+0(SB)/8, $0x3030303030303030
DATA q6kr30<>+8(SB)/8, $0x3030303030303030
DATA q6kr30<>+16(SB)/8, $0x3030303030303030
DATA q6kr30<>+24(SB)/8, $0x3030303030303030
DATA q6kr30<>+32(SB)/8, $0x3030303030303030
DATA q6kr30<>+40(SB)/8, $0x3030303030303030
DATA q6kr30<>+48(SB)/8, $0x3030303030303030
DATA q6kr30<>+56(SB)/8, $0x3030303030303030
GLOBL q6kr30<>(SB), RODATA|NOPTR, $64

DATA q6kr20<>+0(SB)/8, $0x2020202020202020
DATA q6kr20<>+8(SB)/8, $0x2020202020202020
DATA q6kr20<>+16(SB)/8, $0x2020202020202020
DATA q6kr20<>+24(SB)/8, $0x2020202020202020
DATA q6kr20<>+32(SB)/8, $0x2020202020202020
DATA q6kr20<>+40(SB)/8, $0x2020202020202020
DATA q6kr20<>+48(SB)/8, $0x2020202020202020
DATA q6kr20<>+56(SB)/8, $0x2020202020202020
GLOBL q6kr20<>(SB), RODATA|NOPTR, $64

// q6krscales: dword 4L+k of the half totals is scale 4k+L.
DATA q6krscales<>+0(SB)/8, $0x0d0905010c080400
DATA q6krscales<>+8(SB)/8, $0x0f0b07030e0a0602
GLOBL q6krscales<>(SB), RODATA|NOPTR, $16

// Q6KRNEG(Zx, Zc): Zc = the dword partials of 32 * -(the activations Zx).
#define Q6KRNEG(Zx, Zc) \
	VPXORD Z12, Z12, Z12 \
	VPSUBB Zx, Z12, Z12 \
	VPXORD Zc, Zc, Zc \
	VPDPBUSD Z12, Z27, Zc

// Q6KRX: the block's activations at DI and scales at DX, for every row.
#define Q6KRX \
	VMOVDQU64 0(DI), Z20 \
	VMOVDQU64 64(DI), Z21 \
	VMOVDQU64 128(DI), Z22 \
	VMOVDQU64 192(DI), Z23 \
	VMOVUPS (DX), Y24 \
	Q6KRNEG(Z20, Z16) \
	Q6KRNEG(Z21, Z17) \
	Q6KRNEG(Z22, Z18) \
	Q6KRNEG(Z23, Z19)

// Q6KRH(base, h, Zlo, Zhi): the codes of sub-blocks 4h, 4h+1 (Zlo) and
// 4h+2, 4h+3 (Zhi).
#define Q6KRH(base, h, Zlo, Zhi) \
	VMOVDQU64 (64*h)(base), Zlo \
	VPSRLW $4, Zlo, Zhi \
	VPANDD Z30, Zlo, Zlo \
	VPANDD Z30, Zhi, Zhi \
	VBROADCASTI64X4 (128+32*h)(base), Z13 \
	VPSLLVW Z31, Z13, Z12 \
	VPANDD Z28, Z12, Z12 \
	VPORD Z12, Zlo, Zlo \
	VPSRLVW Z25, Z13, Z12 \
	VPANDD Z28, Z12, Z12 \
	VPORD Z12, Zhi, Zhi

// Q6KROW(base, Yacc): the block's terms of the row at base into Yacc.
#define Q6KROW(base, Yacc) \
	Q6KRH(base, 0, Z0, Z1) \
	Q6KRH(base, 1, Z2, Z3) \
	VMOVDQA64 Z16, Z4 \
	VMOVDQA64 Z17, Z5 \
	VMOVDQA64 Z18, Z6 \
	VMOVDQA64 Z19, Z7 \
	VPDPBUSD Z20, Z0, Z4 \
	VPDPBUSD Z21, Z1, Z5 \
	VPDPBUSD Z22, Z2, Z6 \
	VPDPBUSD Z23, Z3, Z7 \
	KHALVES \
	VMOVDQU 192(base), X0 \
	VPSHUFB X26, X0, X0 \
	VPMOVSXBD X0, Z0 \
	VPMULLD Z0, Z13, Z13 \
	VSHUFI64X2 $0x88, Z13, Z13, Z14 \
	VSHUFI64X2 $0xdd, Z13, Z13, Z15 \
	VPADDD Y15, Y14, Y14 \
	VPERMD Y14, Y29, Y14 \
	VCVTDQ2PS Y14, Y14 \
	VPBROADCASTW 208(base), X13 \
	VCVTPH2PS X13, Y13 \
	VMULPS Y24, Y13, Y13 \
	VMULPS Y13, Y14, Y14 \
	VADDPS Y14, Yacc, Yacc

// Q6KPF(base): the block pf (R14) bytes ahead of base, a line at a time.
#define Q6KPF(base) \
	PREFETCHT0 (base)(R14*1) \
	PREFETCHT0 64(base)(R14*1) \
	PREFETCHT0 128(base)(R14*1) \
	PREFETCHT0 192(base)(R14*1)

// func q6kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, out *float32, boff, ooff, n, pf int)
// q4kRowsAVX512's arguments, without the activation sums.
TEXT ·q6kRowsAVX512(SB), NOSPLIT, $0-88
	VMOVDQU64 q6krsl<>(SB), Z31
	VMOVDQU64 q6krsr<>(SB), Z25
	VMOVDQU64 q4kr0f<>(SB), Z30
	VMOVDQU64 q6kr30<>(SB), Z28
	VMOVDQU64 q6kr20<>(SB), Z27
	VMOVDQU32 q4krperm<>(SB), Y29
	VMOVDQU32 q6krscales<>(SB), X26
	KROWSWALK(Q6KRX, Q6KROW, Q6KPF, 210, 40, 48, 56, 64, 72, 80, KNOXS, KNOXS)

// Q2_K and Q3_K rows against Q8_0 activations, up to four at once
// (AVX-512 F, BW, VL and VNNI; qdot.go's order, its K-quant terms): the
// multi-row kernels' contract, each row's lanes and fold DotQ8's, its
// terms kTerm's (qdot_k.go). Rows are whole 256-weight blocks:
//
//   Q2_K, 84 bytes: scales[16] (per 16 weights, scale low nibble, min
//   high), qs[64] at 16, fp16 d at 80, dmin at 82;
//   Q3_K, 110 bytes: hmask[32], qs[64] at 32, scales[12] at 96 (16 6-bit
//   scales, minus 32), fp16 d at 108.
//
// Sub-block s's code j is bits 2(s%4) of qs[32(s/4)+j] (Q3_K: plus 4 for
// bit s of hmask[j], the weight code-4). Each 32 bytes of qs broadcast to
// both halves of a zmm and shifted right by 0|2 and 4|6 (VPSRLVQ, masked
// to 2 bits) give the codes of sub-blocks 2k (lower) and 2k+1 (upper),
// against the activations' natural bytes 64k..64k+63 by VPDPBUSD; Q3_K's
// bit 2 by KRHI (hmask and its test bits as Q5_K's qh). The products'
// 16 half totals (KHALVES) times the 16 scales (VPSHUFB to KHALVES'
// order), the two halves of each sub-block added and put in order.
// Q2_K's min sums are the same over the block's 16 half sums of the
// activations (computed once per block for the rows, KHALVES of VPDPBUSD
// by byte ones), times the mins: both reduced at once, the term
// float32(a) * (d * dx) - float32(b) * (dmin * dx). Q3_K's half totals
// less 4 times the half sums are sum (code-4)*x exactly; the term
// float32(a) * (d * dx).
//
// Registers: Z31, Z30 the codes' shifts, Z29 the 2-bit mask, Z28 dword
// 15s, Z27 byte ones, Z25 the order of both reductions (Y25 alone: q4krperm),
// X26 the scales' order, Z24 byte 4s, Z17 Q3_K's test bits; per block
// Z20..Z23 the activations, Y18 their scales, Z19 their 16 half sums
// (Q3_K: times 4); per row Z0..Z7, Z12..Z16; Y8..Y11 the lanes.

DATA k2rsh02<>+0(SB)/8, $0
DATA k2rsh02<>+8(SB)/8, $0
DATA k2rsh02<>+16(SB)/8, $0
DATA k2rsh02<>+24(SB)/8, $0
DATA k2rsh02<>+32(SB)/8, $2
DATA k2rsh02<>+40(SB)/8, $2
DATA k2rsh02<>+48(SB)/8, $2
DATA k2rsh02<>+56(SB)/8, $2
GLOBL k2rsh02<>(SB), RODATA|NOPTR, $64

DATA k2rsh46<>+0(SB)/8, $4
DATA k2rsh46<>+8(SB)/8, $4
DATA k2rsh46<>+16(SB)/8, $4
DATA k2rsh46<>+24(SB)/8, $4
DATA k2rsh46<>+32(SB)/8, $6
DATA k2rsh46<>+40(SB)/8, $6
DATA k2rsh46<>+48(SB)/8, $6
DATA k2rsh46<>+56(SB)/8, $6
GLOBL k2rsh46<>(SB), RODATA|NOPTR, $64

// k2rperm: q4krperm for both halves (the mins' sums 8 dwords on).
DATA k2rperm<>+0(SB)/8, $0x0000000400000000
DATA k2rperm<>+8(SB)/8, $0x0000000500000001
DATA k2rperm<>+16(SB)/8, $0x0000000600000002
DATA k2rperm<>+24(SB)/8, $0x0000000700000003
DATA k2rperm<>+32(SB)/8, $0x0000000c00000008
DATA k2rperm<>+40(SB)/8, $0x0000000d00000009
DATA k2rperm<>+48(SB)/8, $0x0000000e0000000a
DATA k2rperm<>+56(SB)/8, $0x0000000f0000000b
GLOBL k2rperm<>(SB), RODATA|NOPTR, $64

// q3krlo, q3krhi: the bytes of the 16 at 94 (qs's last 2, scales[12], d)
// holding the low 4 and the high 2 bits of the scale at each position
// of KHALVES' order (position 4L+k: scale i = 4k+L; low bits in byte
// 2+i%8, shifted right by 4 where i >= 8, q3krlosh; high bits in byte
// 10+i%4 at bit 2(i/4), rotated to bit 4 by q3krhirot).
DATA q3krlo<>+0(SB)/8, $0x0703070306020602
DATA q3krlo<>+8(SB)/8, $0x0905090508040804
GLOBL q3krlo<>(SB), RODATA|NOPTR, $16

DATA q3krhi<>+0(SB)/8, $0x0b0b0b0b0a0a0a0a
DATA q3krhi<>+8(SB)/8, $0x0d0d0d0d0c0c0c0c
GLOBL q3krhi<>(SB), RODATA|NOPTR, $16

DATA q3krlosh<>+0(SB)/8, $0x0000000000000000
DATA q3krlosh<>+8(SB)/8, $0x0000000400000004
DATA q3krlosh<>+16(SB)/8, $0x0000000000000000
DATA q3krlosh<>+24(SB)/8, $0x0000000400000004
DATA q3krlosh<>+32(SB)/8, $0x0000000000000000
DATA q3krlosh<>+40(SB)/8, $0x0000000400000004
DATA q3krlosh<>+48(SB)/8, $0x0000000000000000
DATA q3krlosh<>+56(SB)/8, $0x0000000400000004
GLOBL q3krlosh<>(SB), RODATA|NOPTR, $64

DATA q3krhirot<>+0(SB)/8, $0x0000000200000004
DATA q3krhirot<>+8(SB)/8, $0x0000001e00000000
DATA q3krhirot<>+16(SB)/8, $0x0000000200000004
DATA q3krhirot<>+24(SB)/8, $0x0000001e00000000
DATA q3krhirot<>+32(SB)/8, $0x0000000200000004
DATA q3krhirot<>+40(SB)/8, $0x0000001e00000000
DATA q3krhirot<>+48(SB)/8, $0x0000000200000004
DATA q3krhirot<>+56(SB)/8, $0x0000001e00000000
GLOBL q3krhirot<>(SB), RODATA|NOPTR, $64

DATA k2rd0f<>+0(SB)/8, $0x0000000f0000000f
DATA k2rd0f<>+8(SB)/8, $0x0000000f0000000f
DATA k2rd0f<>+16(SB)/8, $0x0000000f0000000f
DATA k2rd0f<>+24(SB)/8, $0x0000000f0000000f
DATA k2rd0f<>+32(SB)/8, $0x0000000f0000000f
DATA k2rd0f<>+40(SB)/8, $0x0000000f0000000f
DATA k2rd0f<>+48(SB)/8, $0x0000000f0000000f
DATA k2rd0f<>+56(SB)/8, $0x0000000f0000000f
GLOBL k2rd0f<>(SB), RODATA|NOPTR, $64

DATA q3krd30<>+0(SB)/8, $0x0000003000000030
DATA q3krd30<>+8(SB)/8, $0x0000003000000030
DATA q3krd30<>+16(SB)/8, $0x0000003000000030
DATA q3krd30<>+24(SB)/8, $0x0000003000000030
DATA q3krd30<>+32(SB)/8, $0x0000003000000030
DATA q3krd30<>+40(SB)/8, $0x0000003000000030
DATA q3krd30<>+48(SB)/8, $0x0000003000000030
DATA q3krd30<>+56(SB)/8, $0x0000003000000030
GLOBL q3krd30<>(SB), RODATA|NOPTR, $64

DATA q3krd20<>+0(SB)/8, $0x0000002000000020
DATA q3krd20<>+8(SB)/8, $0x0000002000000020
DATA q3krd20<>+16(SB)/8, $0x0000002000000020
DATA q3krd20<>+24(SB)/8, $0x0000002000000020
DATA q3krd20<>+32(SB)/8, $0x0000002000000020
DATA q3krd20<>+40(SB)/8, $0x0000002000000020
DATA q3krd20<>+48(SB)/8, $0x0000002000000020
DATA q3krd20<>+56(SB)/8, $0x0000002000000020
GLOBL q3krd20<>(SB), RODATA|NOPTR, $64

DATA k2r03<>+0(SB)/8, $0x0303030303030303
DATA k2r03<>+8(SB)/8, $0x0303030303030303
DATA k2r03<>+16(SB)/8, $0x0303030303030303
DATA k2r03<>+24(SB)/8, $0x0303030303030303
DATA k2r03<>+32(SB)/8, $0x0303030303030303
DATA k2r03<>+40(SB)/8, $0x0303030303030303
DATA k2r03<>+48(SB)/8, $0x0303030303030303
DATA k2r03<>+56(SB)/8, $0x0303030303030303
GLOBL k2r03<>(SB), RODATA|NOPTR, $64

DATA k2r01<>+0(SB)/8, $0x0101010101010101
DATA k2r01<>+8(SB)/8, $0x0101010101010101
DATA k2r01<>+16(SB)/8, $0x0101010101010101
DATA k2r01<>+24(SB)/8, $0x0101010101010101
DATA k2r01<>+32(SB)/8, $0x0101010101010101
DATA k2r01<>+40(SB)/8, $0x0101010101010101
DATA k2r01<>+48(SB)/8, $0x0101010101010101
DATA k2r01<>+56(SB)/8, $0x0101010101010101
GLOBL k2r01<>(SB), RODATA|NOPTR, $64

DATA k2r04<>+0(SB)/8, $0x0404040404040404
DATA k2r04<>+8(SB)/8, $0x0404040404040404
DATA k2r04<>+16(SB)/8, $0x0404040404040404
DATA k2r04<>+24(SB)/8, $0x0404040404040404
DATA k2r04<>+32(SB)/8, $0x0404040404040404
DATA k2r04<>+40(SB)/8, $0x0404040404040404
DATA k2r04<>+48(SB)/8, $0x0404040404040404
DATA k2r04<>+56(SB)/8, $0x0404040404040404
GLOBL k2r04<>(SB), RODATA|NOPTR, $64

// K2RCONST: the constants both kernels hold.
#define K2RCONST \
	VMOVDQU64 k2rsh02<>(SB), Z31 \
	VMOVDQU64 k2rsh46<>(SB), Z30 \
	VMOVDQU64 k2r03<>(SB), Z29 \
	VMOVDQU64 k2rd0f<>(SB), Z28 \
	VMOVDQU64 k2r01<>(SB), Z27 \
	VMOVDQU64 k2rperm<>(SB), Z25

// K2RX: the block's activations at DI and scales at DX, and Z13 their 16
// half sums (KHALVES' order), for every row.
#define K2RX \
	VMOVDQU64 0(DI), Z20 \
	VMOVDQU64 64(DI), Z21 \
	VMOVDQU64 128(DI), Z22 \
	VMOVDQU64 192(DI), Z23 \
	VMOVUPS (DX), Y18 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPDPBUSD Z20, Z27, Z4 \
	VPDPBUSD Z21, Z27, Z5 \
	VPDPBUSD Z22, Z27, Z6 \
	VPDPBUSD Z23, Z27, Z7 \
	KHALVES

// K2RCODES(at, Zlo, Zhi): the 2-bit codes of the four sub-blocks whose
// 32 bytes of qs are at at: the first two in Zlo, the last two in Zhi.
#define K2RCODES(at, Zlo, Zhi) \
	VBROADCASTI64X4 at, Zhi \
	VPSRLVQ Z31, Zhi, Zlo \
	VPSRLVQ Z30, Zhi, Zhi \
	VPANDD Z29, Zlo, Zlo \
	VPANDD Z29, Zhi, Zhi

// K2RDOT: Z13 = the 16 half totals of the codes in Z0..Z3 against the
// block's activations.
#define K2RDOT \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPDPBUSD Z20, Z0, Z4 \
	VPDPBUSD Z21, Z1, Z5 \
	VPDPBUSD Z22, Z2, Z6 \
	VPDPBUSD Z23, Z3, Z7 \
	KHALVES

// K2RMULD(off, Y): Y = Y * (the fp16 at off(base) * the activation scales).
#define K2RMULD(base, off, Y) \
	VPBROADCASTW off(base), X13 \
	VCVTPH2PS X13, Y13 \
	VMULPS Y18, Y13, Y13 \
	VMULPS Y13, Y, Y

// Q2KROW(base, Yacc): the block's terms of the Q2_K row at base into Yacc.
#define Q2KROW(base, Yacc) \
	K2RCODES(16(base), Z0, Z1) \
	K2RCODES(48(base), Z2, Z3) \
	K2RDOT \
	VMOVDQU (base), X0 \
	VPSHUFB X26, X0, X0 \
	VPMOVZXBD X0, Z0 \
	VPSRLD $4, Z0, Z1 \
	VPANDD Z28, Z0, Z0 \
	VPMULLD Z0, Z13, Z13 \
	VPMULLD Z19, Z1, Z1 \
	VSHUFI64X2 $0x88, Z1, Z13, Z14 \
	VSHUFI64X2 $0xdd, Z1, Z13, Z15 \
	VPADDD Z15, Z14, Z14 \
	VPERMD Z14, Z25, Z14 \
	VCVTDQ2PS Z14, Z14 \
	VEXTRACTF64X4 $1, Z14, Y15 \
	K2RMULD(base, 80, Y14) \
	K2RMULD(base, 82, Y15) \
	VSUBPS Y15, Y14, Y14 \
	VADDPS Y14, Yacc, Yacc

// q3krrot: per pair k, the qword rotations taking hmask's bits 2k (lower
// half) and 2k+1 (upper) of each byte to its bit 2.
DATA q3krrot<>+0(SB)/8, $2
DATA q3krrot<>+8(SB)/8, $2
DATA q3krrot<>+16(SB)/8, $2
DATA q3krrot<>+24(SB)/8, $2
DATA q3krrot<>+32(SB)/8, $1
DATA q3krrot<>+40(SB)/8, $1
DATA q3krrot<>+48(SB)/8, $1
DATA q3krrot<>+56(SB)/8, $1
DATA q3krrot<>+64(SB)/8, $0
DATA q3krrot<>+72(SB)/8, $0
DATA q3krrot<>+80(SB)/8, $0
DATA q3krrot<>+88(SB)/8, $0
DATA q3krrot<>+96(SB)/8, $63
DATA q3krrot<>+104(SB)/8, $63
DATA q3krrot<>+112(SB)/8, $63
DATA q3krrot<>+120(SB)/8, $63
DATA q3krrot<>+128(SB)/8, $62
DATA q3krrot<>+136(SB)/8, $62
DATA q3krrot<>+144(SB)/8, $62
DATA q3krrot<>+152(SB)/8, $62
DATA q3krrot<>+160(SB)/8, $61
DATA q3krrot<>+168(SB)/8, $61
DATA q3krrot<>+176(SB)/8, $61
DATA q3krrot<>+184(SB)/8, $61
DATA q3krrot<>+192(SB)/8, $60
DATA q3krrot<>+200(SB)/8, $60
DATA q3krrot<>+208(SB)/8, $60
DATA q3krrot<>+216(SB)/8, $60
DATA q3krrot<>+224(SB)/8, $59
DATA q3krrot<>+232(SB)/8, $59
DATA q3krrot<>+240(SB)/8, $59
DATA q3krrot<>+248(SB)/8, $59
GLOBL q3krrot<>(SB), RODATA|NOPTR, $256

// Q3KRHI(off, Z): bit 2 of pair off/64's codes in Z from hmask (Z16), by a
// rotation and an or of the bit under Z24's 4s (Z4 clobbered).
#define Q3KRHI(off, Z) \
	VPROLVQ q3krrot<>+off(SB), Z16, Z4 \
	VPTERNLOGD $0xf8, Z24, Z4, Z

// Q3KROW(base, Yacc): the block's terms of the Q3_K row at base into Yacc.
#define Q3KROW(base, Yacc) \
	K2RCODES(32(base), Z0, Z1) \
	K2RCODES(64(base), Z2, Z3) \
	VBROADCASTI64X4 0(base), Z16 \
	Q3KRHI(0, Z0) \
	Q3KRHI(64, Z1) \
	Q3KRHI(128, Z2) \
	Q3KRHI(192, Z3) \
	K2RDOT \
	VPSUBD Z19, Z13, Z13 \
	VMOVDQU 94(base), X1 \
	VPSHUFB X26, X1, X0 \
	VPMOVZXBD X0, Z0 \
	VPSRLVD q3krlosh<>(SB), Z0, Z0 \
	VPANDD Z28, Z0, Z0 \
	VPSHUFB q3krhi<>(SB), X1, X1 \
	VPMOVZXBD X1, Z1 \
	VPROLVD q3krhirot<>(SB), Z1, Z1 \
	VPANDD q3krd30<>(SB), Z1, Z1 \
	VPORD Z1, Z0, Z0 \
	VPSUBD q3krd20<>(SB), Z0, Z0 \
	VPMULLD Z0, Z13, Z13 \
	VSHUFI64X2 $0x88, Z13, Z13, Z14 \
	VSHUFI64X2 $0xdd, Z13, Z13, Z15 \
	VPADDD Y15, Y14, Y14 \
	VPERMD Y14, Y25, Y14 \
	VCVTDQ2PS Y14, Y14 \
	K2RMULD(base, 108, Y14) \
	VADDPS Y14, Yacc, Yacc

// K2PF(base): the block pf (R14) bytes ahead of base, a line at a time
// (two prefetches 64 bytes apart reach every line of blocks of 84 or 110).
#define K2PF(base) \
	PREFETCHT0 (base)(R14*1) \
	PREFETCHT0 64(base)(R14*1)

// Q2KWALKX: the block's activations for KROWSWALK (K2RX, VMOVDQA64 Z13, Z19).
#define Q2KWALKX \
	K2RX \
	VMOVDQA64 Z13, Z19

// func q2kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, out *float32, boff, ooff, n, pf int)
// q6kRowsAVX512's arguments.
TEXT ·q2kRowsAVX512(SB), NOSPLIT, $0-88
	K2RCONST
	VMOVDQU32 q6krscales<>(SB), X26
	KROWSWALK(Q2KWALKX, Q2KROW, K2PF, 84, 40, 48, 56, 64, 72, 80, KNOXS, KNOXS)

// Q3KWALKX: the block's activations for KROWSWALK (K2RX, VPSLLD $2, Z13, Z19).
#define Q3KWALKX \
	K2RX \
	VPSLLD $2, Z13, Z19

// func q3kRowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, blocks int, out *float32, boff, ooff, n, pf int)
// q6kRowsAVX512's arguments.
TEXT ·q3kRowsAVX512(SB), NOSPLIT, $0-88
	K2RCONST
	VMOVDQU32 q3krlo<>(SB), X26
	VMOVDQU64 k2r04<>(SB), Z24
	KROWSWALK(Q3KWALKX, Q3KROW, K2PF, 110, 40, 48, 56, 64, 72, 80, KNOXS, KNOXS)

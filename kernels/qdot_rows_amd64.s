//go:build amd64 && !noasm

#include "textflag.h"
#include "qdot_amd64.h"

// Multi-row DotQ8 kernels (AVX-512 F, BW and VNNI; qdot.go's order): rows
// rows of stride bytes from w, each against the same activations, the
// folded dot product of row r stored to out[r]. Each row runs its whole
// groups of 8 sub-blocks, then, when tail > 0, its last partial group of
// tail blocks: only those blocks' bytes are read (masked loads never touch
// bytes past the row), the rest of the group's weights and scales are
// zero, and the activations are zero-padded to the group's end
// (Q8Row.padded), so the missing sub-blocks add +0 to their lanes, which
// leaves them as they are (a lane starts at +0 and is never -0).
//
// Registers: R13 the row, R14 stride, R10 rows left, R11 groups, R9 tail,
// R12 the Q8_0 tail's masks, R8 out; per row SI the group, DI codes, DX scales, BX sums, CX
// groups left; Y12 the 8 lanes.

// Each word of a Q2_0 group's first 64 bytes that holds a block's fp16
// scale, twice per block (its two sub-blocks): words 0, 9, 18 and 27.
DATA q2rscale<>+0(SB)/8, $0x0009000900000000
DATA q2rscale<>+8(SB)/8, $0x001b001b00120012
DATA q2rscale<>+16(SB)/8, $0
DATA q2rscale<>+24(SB)/8, $0
DATA q2rscale<>+32(SB)/8, $0
DATA q2rscale<>+40(SB)/8, $0
DATA q2rscale<>+48(SB)/8, $0
DATA q2rscale<>+56(SB)/8, $0
GLOBL q2rscale<>(SB), RODATA|NOPTR, $64

DATA q2rthree<>+0(SB)/8, $0x0303030303030303
GLOBL q2rthree<>(SB), RODATA|NOPTR, $8

DATA q8rx80<>+0(SB)/8, $0x8080808080808080
GLOBL q8rx80<>(SB), RODATA|NOPTR, $8

// After the Q8_0 reduction's lane shuffles, sub-block s's total is in
// dword 4s (s < 4) or 4(s-4)+2.
DATA q8rperm<>+0(SB)/8, $0x0000000400000000
DATA q8rperm<>+8(SB)/8, $0x0000000c00000008
DATA q8rperm<>+16(SB)/8, $0x0000000600000002
DATA q8rperm<>+24(SB)/8, $0x0000000e0000000a
DATA q8rperm<>+32(SB)/8, $0
DATA q8rperm<>+40(SB)/8, $0
DATA q8rperm<>+48(SB)/8, $0
DATA q8rperm<>+56(SB)/8, $0
GLOBL q8rperm<>(SB), RODATA|NOPTR, $64

// RACCS(Yacc): Yacc += float(Y0) * (fp16 scales X13 * activation scales
// at DX); RACC into Y12.
#define RACCS(Yacc) \
	VCVTDQ2PS Y0, Y0 \
	VCVTPH2PS X13, Y13 \
	VMULPS (DX), Y13, Y13 \
	VMULPS Y13, Y0, Y0 \
	VADDPS Y0, Yacc, Yacc

#define RACC RACCS(Y12)

// RFOLD: the lanes in Y12 folded to (R8) (FOLDLANES).
#define RFOLD FOLDLANES(Y12, X12, (R8))

// ROWARGS: the arguments both kernels share. ROWSTART(tail): a row's
// pointers and lanes, on to tail when it has no whole group. ROWNEXT(row):
// the row's result, on to the next.
#define ROWARGS \
	MOVQ w+0(FP), R13 \
	MOVQ stride+8(FP), R14 \
	MOVQ rows+16(FP), R10 \
	MOVQ groups+48(FP), R11 \
	MOVQ tail+56(FP), R9

#define ROWSTART(tail) \
	MOVQ R13, SI \
	MOVQ xq+24(FP), DI \
	MOVQ xd+32(FP), DX \
	MOVQ xs+40(FP), BX \
	MOVQ R11, CX \
	VXORPS Y12, Y12, Y12 \
	TESTQ CX, CX \
	JZ    tail

#define ROWNEXT(row) \
	RFOLD \
	ADDQ $4, R8 \
	ADDQ R14, R13 \
	DECQ R10 \
	JNZ  row

// Q2_0. A group is 4 blocks of 18 bytes (fp16 d, 16 bytes of 2-bit codes,
// weight e of a block at bits 2(e%4) of byte e/4). Z0 takes the 4 blocks'
// codes, one per 128-bit lane; (Z0 >> 2k) & 3 is plane k: byte 16b+i of it
// is weight 4i+k of block b, the activations of QuantizeQ8Row's plane
// order (xq, Q8Row.q2) at 64k+16b+i. VPDPBUSD sums 4 bytes of one lane
// into a dword: dwords 2s and 2s+1 are sub-block s (i < 8 is the block's
// first sub-block). The codes c are 0..3 (weight c-1): the sub-block's
// activation sum (BX) is subtracted.
// Q2RLOAD: Z0 = the 4 blocks' codes. Q2RSUMS(scales): the group's terms
// into Y12, the fp16 scales picked by word from scales (64 bytes).
#define Q2RLOAD \
	VMOVDQU 2(SI), X0 \
	VINSERTI32X4 $1, 20(SI), Z0, Z0 \
	VINSERTI32X4 $2, 38(SI), Z0, Z0 \
	VINSERTI32X4 $3, 56(SI), Z0, Z0

#define Q2RSUMS(scales) \
	VPANDQ Z15, Z0, Z1 \
	VPSRLQ $2, Z0, Z2 \
	VPANDQ Z15, Z2, Z2 \
	VPSRLQ $4, Z0, Z3 \
	VPANDQ Z15, Z3, Z3 \
	VPSRLQ $6, Z0, Z0 \
	VPANDQ Z15, Z0, Z0 \
	VPXORQ Z4, Z4, Z4 \
	VPXORQ Z5, Z5, Z5 \
	VPDPBUSD 0(DI), Z1, Z4 \
	VPDPBUSD 64(DI), Z2, Z5 \
	VPDPBUSD 128(DI), Z3, Z4 \
	VPDPBUSD 192(DI), Z0, Z5 \
	VPADDD Z5, Z4, Z4 \
	VPSRLQ $32, Z4, Z1 \
	VPADDD Z1, Z4, Z4 \
	VPMOVQD Z4, Y0 \
	VPSUBD (BX), Y0, Y0 \
	VPERMW scales, Z14, Z13 \
	RACC

// func q2RowsAVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32)
// mask: the tail group's bytes (18*tail, at most 54).
TEXT ·q2RowsAVX512(SB), NOSPLIT, $0-80
	ROWARGS
	KMOVQ mask+64(FP), K1
	MOVQ  out+72(FP), R8
	VPBROADCASTQ q2rthree<>(SB), Z15
	VMOVDQU64 q2rscale<>(SB), Z14
	TESTQ R10, R10
	JZ    q2rdone

q2rrow:
	ROWSTART(q2rtail)

q2rgroup:
	Q2RLOAD
	Q2RSUMS(0(SI))
	ADDQ $72, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q2rgroup

q2rtail:
	// The partial group: only its blocks' codes (lanes of blocks past
	// the row stay zero) and, masked, its bytes for the scales.
	TESTQ R9, R9
	JZ    q2rfold
	VMOVDQU 2(SI), X0
	CMPQ  R9, $2
	JLT   q2rpart
	VINSERTI32X4 $1, 20(SI), Z0, Z0
	CMPQ  R9, $3
	JLT   q2rpart
	VINSERTI32X4 $2, 38(SI), Z0, Z0

q2rpart:
	VMOVDQU8.Z 0(SI), K1, Z6
	Q2RSUMS(Z6)

q2rfold:
	ROWNEXT(q2rrow)

q2rdone:
	VZEROUPPER
	RET

// Q8_0. A group is 8 blocks of 34 bytes (fp16 d, 32 signed codes). Zp
// takes blocks 2p and 2p+1 (a 256-bit half each), XORed with 0x80 (w+128,
// unsigned) for VPDPBUSD against the signed activations; the sub-block's
// activation sum times 128 is subtracted. The 4 accumulators (sub-block
// 2p in the low half of Zp, 2p+1 in the high) are reduced by lane shuffles
// to 8 totals in sub-block order.
// Q8RBLKS(base, p, Zacc): blocks 2p and 2p+1 of the group at base into
// Zacc.
#define Q8RBLKS(base, p, Zacc) \
	VMOVDQU (2+68*p)(base), Y0 \
	VINSERTI64X4 $1, (36+68*p)(base), Z0, Z0 \
	VPXORQ Z15, Z0, Z0 \
	VPXORQ Zacc, Zacc, Zacc \
	VPDPBUSD (64*p)(DI), Z0, Zacc


// Q8RSUMSS(Yacc): the group's terms into Yacc from Z4..Z7 and the scales
// in X13.
#define Q8RSUMSS(Yacc) \
	VSHUFI64X2 $0x88, Z5, Z4, Z8 \
	VSHUFI64X2 $0xdd, Z5, Z4, Z9 \
	VPADDD Z9, Z8, Z8 \
	VSHUFI64X2 $0x88, Z7, Z6, Z10 \
	VSHUFI64X2 $0xdd, Z7, Z6, Z11 \
	VPADDD Z11, Z10, Z10 \
	VPUNPCKLQDQ Z10, Z8, Z4 \
	VPUNPCKHQDQ Z10, Z8, Z5 \
	VPADDD Z5, Z4, Z4 \
	VPSHUFD $0xb1, Z4, Z5 \
	VPADDD Z5, Z4, Z4 \
	VPERMD Z4, Z14, Z4 \
	VMOVDQU (BX), Y1 \
	VPSLLD $7, Y1, Y1 \
	VPSUBD Y1, Y4, Y0 \
	RACCS(Yacc)


// Words 0, 17 of a first table and 0, 17 of a second (32, 49), twice.
DATA q8rscw<>+0(SB)/8, $0x0031002000110000
DATA q8rscw<>+8(SB)/8, $0x0031002000110000
GLOBL q8rscw<>(SB), RODATA|NOPTR, $64

// SCALES8P(base): X13 = SCALES8B(base, 34) by two word permutes, each from
// two 64-byte windows of the group holding two scales each (bytes 0 and
// 34 of the window at 0, 68 and 102 of the one at 68; the same at 136 and
// 204): Z19 the words (q8rscw), K3 words 4..7 from the second.
#define SCALES8P(base) \
	VMOVDQU64 0(base), Z17 \
	VPERMT2W 68(base), Z19, Z17 \
	VMOVDQU64 136(base), Z18 \
	VPERMT2W 204(base), Z19, Z18 \
	VPBLENDMW Z18, Z17, K3, Z13

// Q8RGROUPS(base, Yacc): one row's whole group.
#define Q8RGROUPS(base, Yacc) \
	Q8RBLKS(base, 0, Z4) \
	Q8RBLKS(base, 1, Z5) \
	Q8RBLKS(base, 2, Z6) \
	Q8RBLKS(base, 3, Z7) \
	SCALES8P(base) \
	Q8RSUMSS(Yacc)

// Q8RPARTS(base, p, Zacc): blocks 2p and 2p+1 of the partial group at
// base by masked loads (masks at R12: block 2p's 32 bytes at 16p, 2p+1's
// at 16p+8, each empty past the row).
#define Q8RPARTS(base, p, Zacc) \
	KMOVQ (16*p)(R12), K1 \
	KMOVQ (16*p+8)(R12), K2 \
	VMOVDQU8.Z (2+68*p)(base), K1, Z0 \
	VMOVDQU8 (4+68*p)(base), K2, Z0 \
	VPXORQ Z15, Z0, Z0 \
	VPXORQ Zacc, Zacc, Zacc \
	VPDPBUSD (64*p)(DI), Z0, Zacc

// Q8RTAILS(base, Yacc, lbl): the partial group of CX blocks at base into
// Yacc: its blocks by masked loads, its scales one by one (zero past the
// row); lbl is a label of the caller's, unique to the use.
#define Q8RTAILS(base, Yacc, lbl) \
	Q8RPARTS(base, 0, Z4) \
	Q8RPARTS(base, 1, Z5) \
	Q8RPARTS(base, 2, Z6) \
	Q8RPARTS(base, 3, Z7) \
	MOVWLZX 0(base), AX \
	VMOVD   AX, X13 \
	CMPQ    CX, $2 \
	JLT     lbl \
	VPINSRW $1, 34(base), X13, X13 \
	CMPQ    CX, $3 \
	JLT     lbl \
	VPINSRW $2, 68(base), X13, X13 \
	CMPQ    CX, $4 \
	JLT     lbl \
	VPINSRW $3, 102(base), X13, X13 \
	CMPQ    CX, $5 \
	JLT     lbl \
	VPINSRW $4, 136(base), X13, X13 \
	CMPQ    CX, $6 \
	JLT     lbl \
	VPINSRW $5, 170(base), X13, X13 \
	CMPQ    CX, $7 \
	JLT     lbl \
	VPINSRW $6, 204(base), X13, X13 \
lbl: \
	Q8RSUMSS(Yacc)

// func q8RowsQ8_0AVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[8]uint64, out *float32)
// masks: per block pair p of the partial group, the load masks of block
// 2p (low 32 bytes) and 2p+1 (high 32), zero for a block past the row.
TEXT ·q8RowsQ8_0AVX512(SB), NOSPLIT, $0-80
	VMOVDQU64 q8rscw<>(SB), Z19
	MOVQ $0xf0, AX
	KMOVD AX, K3
	ROWARGS
	MOVQ  masks+64(FP), R12
	MOVQ  out+72(FP), R8
	VPBROADCASTQ q8rx80<>(SB), Z15
	VMOVDQU64 q8rperm<>(SB), Z14
	TESTQ R10, R10
	JZ    q8rdone

q8rrow:
	ROWSTART(q8rtail)

q8rgroup:
	Q8RGROUPS(SI, Y12)
	ADDQ $272, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q8rgroup

q8rtail:
	// The partial group (CX is free: no groups left).
	TESTQ R9, R9
	JZ    q8rfold
	MOVQ  R9, CX
	Q8RTAILS(SI, Y12, q8rscales)

q8rfold:
	ROWNEXT(q8rrow)

q8rdone:
	VZEROUPPER
	RET

// Q2_0, two rows at once (adds AVX-512 VBMI and GFNI): rows A (SI) and B
// (R15, boff bytes after A) share each group's activation loads, each
// stream prefetched pf bytes ahead (a line per group), and their terms run
// side by side in the two 256-bit halves of Z12 (A low, B high), each lane
// the same float steps as the one-row kernel's. Per row and group: the 64
// bytes at 0 and the 64 at 8 hold the 4 blocks' codes, gathered into one
// lane per block by VPERMT2B (q2pcodes); the fp16 scales of both rows are
// picked by VPERMT2W (q2pscale); plane k of the codes is one GF2 affine
// map per byte (bits 2k, 2k+1 to bits 0, 1: q2pmat), then VPDPBUSD as in
// the one-row kernel; the dword pairs of both rows are summed by
// VPERMT2D (q2peven, q2podd) into 16 sub-block totals, A's then B's.

// Byte 16b+i: group byte 18b+2+i, of the bytes at 0 (index < 64) or of
// those at 8 (64 + byte - 8): block 3's all from the second.
DATA q2pcodes<>+0(SB)/8, $0x0908070605040302
DATA q2pcodes<>+8(SB)/8, $0x11100f0e0d0c0b0a
DATA q2pcodes<>+16(SB)/8, $0x1b1a191817161514
DATA q2pcodes<>+24(SB)/8, $0x232221201f1e1d1c
DATA q2pcodes<>+32(SB)/8, $0x2d2c2b2a29282726
DATA q2pcodes<>+40(SB)/8, $0x3534333231302f2e
DATA q2pcodes<>+48(SB)/8, $0x7776757473727170
DATA q2pcodes<>+56(SB)/8, $0x7f7e7d7c7b7a7978
GLOBL q2pcodes<>(SB), RODATA|NOPTR, $64

// Word l < 8: row A's word 9(l/2) (block l/2's scale); l in 8..15: row
// B's (32 + 9((l-8)/2)).
DATA q2pscale<>+0(SB)/8, $0x0009000900000000
DATA q2pscale<>+8(SB)/8, $0x001b001b00120012
DATA q2pscale<>+16(SB)/8, $0x0029002900200020
DATA q2pscale<>+24(SB)/8, $0x003b003b00320032
DATA q2pscale<>+32(SB)/8, $0
DATA q2pscale<>+40(SB)/8, $0
DATA q2pscale<>+48(SB)/8, $0
DATA q2pscale<>+56(SB)/8, $0
GLOBL q2pscale<>(SB), RODATA|NOPTR, $64

// Dword l < 8: A's dword 2l (+1 for q2podd); l >= 8: B's 2(l-8) (+1).
DATA q2peven<>+0(SB)/8, $0x0000000200000000
DATA q2peven<>+8(SB)/8, $0x0000000600000004
DATA q2peven<>+16(SB)/8, $0x0000000a00000008
DATA q2peven<>+24(SB)/8, $0x0000000e0000000c
DATA q2peven<>+32(SB)/8, $0x0000001200000010
DATA q2peven<>+40(SB)/8, $0x0000001600000014
DATA q2peven<>+48(SB)/8, $0x0000001a00000018
DATA q2peven<>+56(SB)/8, $0x0000001e0000001c
GLOBL q2peven<>(SB), RODATA|NOPTR, $64

DATA q2podd<>+0(SB)/8, $0x0000000300000001
DATA q2podd<>+8(SB)/8, $0x0000000700000005
DATA q2podd<>+16(SB)/8, $0x0000000b00000009
DATA q2podd<>+24(SB)/8, $0x0000000f0000000d
DATA q2podd<>+32(SB)/8, $0x0000001300000011
DATA q2podd<>+40(SB)/8, $0x0000001700000015
DATA q2podd<>+48(SB)/8, $0x0000001b00000019
DATA q2podd<>+56(SB)/8, $0x0000001f0000001d
GLOBL q2podd<>(SB), RODATA|NOPTR, $64

// GF2P8AFFINEQB matrices: output bit i is the parity of matrix byte 7-i
// AND the input byte, so plane k takes byte 7 = 1<<2k, byte 6 = 2<<2k.
DATA q2pmat<>+0(SB)/8, $0x0102000000000000
DATA q2pmat<>+8(SB)/8, $0x0408000000000000
DATA q2pmat<>+16(SB)/8, $0x1020000000000000
DATA q2pmat<>+24(SB)/8, $0x4080000000000000
GLOBL q2pmat<>(SB), RODATA|NOPTR, $32

// Q2PPLANES(Zc, Za, Zb): Za = row's sub-block dword pairs (16 dwords,
// pairs 2s, 2s+1) from codes Zc against the activations Z16..Z19; Zb is
// clobbered (Z4, Z5 too).
#define Q2PPLANES(Zc, Za, Zb) \
	VGF2P8AFFINEQB $0, Z24, Zc, Z4 \
	VGF2P8AFFINEQB $0, Z25, Zc, Z5 \
	VPXORQ Za, Za, Za \
	VPXORQ Zb, Zb, Zb \
	VPDPBUSD Z16, Z4, Za \
	VPDPBUSD Z17, Z5, Zb \
	VGF2P8AFFINEQB $0, Z26, Zc, Z4 \
	VGF2P8AFFINEQB $0, Z27, Zc, Z5 \
	VPDPBUSD Z18, Z4, Za \
	VPDPBUSD Z19, Z5, Zb \
	VPADDD Zb, Za, Za

// Q2PSUMS: with Z0, Z1 the codes of rows A and B and Z2 their scales
// (words 0..15), the group's terms into Z12.
#define Q2PSUMS \
	VMOVDQU64 0(DI), Z16 \
	VMOVDQU64 64(DI), Z17 \
	VMOVDQU64 128(DI), Z18 \
	VMOVDQU64 192(DI), Z19 \
	Q2PPLANES(Z0, Z20, Z21) \
	Q2PPLANES(Z1, Z22, Z23) \
	VMOVDQA64 Z20, Z3 \
	VPERMT2D Z22, Z29, Z3 \
	VPERMT2D Z22, Z28, Z20 \
	VPADDD Z20, Z3, Z3 \
	VBROADCASTI64X4 (BX), Z0 \
	VPSUBD Z0, Z3, Z0 \
	VCVTDQ2PS Z0, Z0 \
	VCVTPH2PS Y2, Z13 \
	VBROADCASTF64X4 (DX), Z1 \
	VMULPS Z1, Z13, Z13 \
	VMULPS Z13, Z0, Z0 \
	VADDPS Z0, Z12, Z12

// func q2Rows2AVX512(w *byte, stride, pairs int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32, boff int, outB *float32, pf int)
// pairs: rows A, each stride bytes from the last, outputs at out, and as
// many rows B, boff bytes after each A, outputs at outB; mask: the tail
// group's bytes (18*tail).
TEXT ·q2Rows2AVX512(SB), NOSPLIT, $0-104
	ROWARGS
	KMOVQ mask+64(FP), K1
	MOVQ  out+72(FP), R8
	MOVQ  pf+96(FP), R12
	MOVQ  outB+88(FP), AX
	VMOVDQU64 q2pcodes<>(SB), Z31
	VMOVDQU64 q2pscale<>(SB), Z30
	VMOVDQU64 q2peven<>(SB), Z29
	VMOVDQU64 q2podd<>(SB), Z28
	VPBROADCASTQ q2pmat<>+0(SB), Z24
	VPBROADCASTQ q2pmat<>+8(SB), Z25
	VPBROADCASTQ q2pmat<>+16(SB), Z26
	VPBROADCASTQ q2pmat<>+24(SB), Z27
	VPXORQ Z15, Z15, Z15
	TESTQ R10, R10
	JZ    q2pdone

q2prow:
	MOVQ R13, SI
	MOVQ boff+80(FP), R15
	ADDQ R13, R15
	MOVQ xq+24(FP), DI
	MOVQ xd+32(FP), DX
	MOVQ xs+40(FP), BX
	MOVQ R11, CX
	VPXORQ Z12, Z12, Z12
	TESTQ CX, CX
	JZ    q2ptail

q2pgroup:
	PREFETCHT0 (SI)(R12*1)
	PREFETCHT0 (R15)(R12*1)
	VMOVDQU64 (SI), Z0
	VMOVDQU64 (R15), Z1
	VMOVDQA64 Z0, Z2
	VPERMT2W Z1, Z30, Z2
	VPERMT2B 8(SI), Z31, Z0
	VPERMT2B 8(R15), Z31, Z1
	Q2PSUMS
	ADDQ $72, SI
	ADDQ $72, R15
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q2pgroup

q2ptail:
	// The partial group: its bytes by masked loads (at most 54, all in
	// the first 64: block 3, the only one from the bytes at 8, is never
	// in it), the rest zero.
	TESTQ R9, R9
	JZ    q2pfold
	VMOVDQU8.Z (SI), K1, Z0
	VMOVDQU8.Z (R15), K1, Z1
	VMOVDQA64 Z0, Z2
	VPERMT2W Z1, Z30, Z2
	VPERMT2B Z15, Z31, Z0
	VPERMT2B Z15, Z31, Z1
	Q2PSUMS

q2pfold:
	RFOLD
	VEXTRACTF64X4 $1, Z12, Y12
	XCHGQ AX, R8
	RFOLD
	XCHGQ AX, R8
	ADDQ $4, R8
	ADDQ $4, AX
	ADDQ R14, R13
	DECQ R10
	JNZ  q2prow

q2pdone:
	VZEROUPPER
	RET

// Q8_0, several rows at once from separate parts of the matrix (2 to 4
// streams): rows A, B, C, D (SI, R15, R11, R9: boff bytes apart), each the
// one-row kernel's steps into its own lanes (Y12, Y2, Y3, Y16), so each
// row's bits are the one-row kernel's; the activations are shared. Each
// stream can be prefetched pf bytes ahead (5 lines a group, so that every
// line of the 272 is touched), PREFETCHT0 (hint 1) or PREFETCHT2 (hint 2).

// PF5(op, base): prefetch op of the 5 lines from R14 bytes after base
// that a group's 272 bytes there can touch.
#define PF5(op, base) \
	op (base)(R14*1) \
	op 64(base)(R14*1) \
	op 128(base)(R14*1) \
	op 192(base)(R14*1) \
	op 256(base)(R14*1)

// func q8RowsNQ8_0AVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, masks *[8]uint64, out *float32, boff, ooff, n, pf, hint int)
// rows: rows A, each stride bytes from the last, outputs at out; with n
// (2..4) streams, as many rows B, C, D, boff, 2boff, 3boff bytes after
// each A, outputs ooff, 2ooff, 3ooff bytes after A's; masks as the one-row
// kernel's; pf and hint: the software prefetch (hint 0: none).
TEXT ·q8RowsNQ8_0AVX512(SB), NOSPLIT, $0-120
	VMOVDQU64 q8rscw<>(SB), Z19
	MOVQ $0xf0, AX
	KMOVD AX, K3
	MOVQ w+0(FP), R13
	MOVQ rows+16(FP), R10
	MOVQ masks+64(FP), R12
	MOVQ out+72(FP), R8
	MOVQ pf+104(FP), R14
	VPBROADCASTQ q8rx80<>(SB), Z15
	VMOVDQU64 q8rperm<>(SB), Z14
	TESTQ R10, R10
	JZ    q8ndone

q8nrow:
	MOVQ R13, SI
	MOVQ boff+80(FP), AX
	LEAQ (R13)(AX*1), R15
	LEAQ (R13)(AX*2), R11
	LEAQ (R15)(AX*2), R9
	MOVQ xq+24(FP), DI
	MOVQ xd+32(FP), DX
	MOVQ xs+40(FP), BX
	MOVQ groups+48(FP), CX
	VXORPS Y12, Y12, Y12
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VPXORD Y16, Y16, Y16
	TESTQ CX, CX
	JZ    q8ntail

q8ngroup:
	CMPQ hint+112(FP), $1
	JLT  q8nA
	JGT  q8npf2
	PF5(PREFETCHT0, SI)
	PF5(PREFETCHT0, R15)
	CMPQ n+96(FP), $3
	JLT  q8nA
	PF5(PREFETCHT0, R11)
	CMPQ n+96(FP), $4
	JLT  q8nA
	PF5(PREFETCHT0, R9)
	JMP  q8nA

q8npf2:
	PF5(PREFETCHT2, SI)
	PF5(PREFETCHT2, R15)
	CMPQ n+96(FP), $3
	JLT  q8nA
	PF5(PREFETCHT2, R11)
	CMPQ n+96(FP), $4
	JLT  q8nA
	PF5(PREFETCHT2, R9)

q8nA:
	Q8RGROUPS(SI, Y12)
	Q8RGROUPS(R15, Y2)
	CMPQ n+96(FP), $3
	JLT  q8nnext
	Q8RGROUPS(R11, Y3)
	CMPQ n+96(FP), $4
	JLT  q8nnext
	Q8RGROUPS(R9, Y16)

q8nnext:
	ADDQ $272, SI
	ADDQ $272, R15
	ADDQ $272, R11
	ADDQ $272, R9
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q8ngroup

q8ntail:
	MOVQ tail+56(FP), CX
	TESTQ CX, CX
	JZ    q8nfold
	Q8RTAILS(SI, Y12, q8ntA)
	Q8RTAILS(R15, Y2, q8ntB)
	CMPQ n+96(FP), $3
	JLT  q8nfold
	Q8RTAILS(R11, Y3, q8ntC)
	CMPQ n+96(FP), $4
	JLT  q8nfold
	Q8RTAILS(R9, Y16, q8ntD)

q8nfold:
	MOVQ ooff+88(FP), AX
	FOLDLANES(Y12, X12, (R8))
	VMOVAPS Y2, Y12
	FOLDLANES(Y12, X12, (R8)(AX*1))
	CMPQ n+96(FP), $3
	JLT  q8nadv
	VMOVAPS Y3, Y12
	FOLDLANES(Y12, X12, (R8)(AX*2))
	CMPQ n+96(FP), $4
	JLT  q8nadv
	VMOVAPS Y16, Y12
	LEAQ (R8)(AX*2), R9
	FOLDLANES(Y12, X12, (R9)(AX*1))

q8nadv:
	ADDQ $4, R8
	ADDQ stride+8(FP), R13
	DECQ R10
	JNZ  q8nrow

q8ndone:
	VZEROUPPER
	RET

// Q8_0 on AVX2 and F16C, two rows at once from separate parts of the
// matrix, whole groups only: rows A (SI) and B (R15, boff bytes after A),
// each q8dotQ8_0AVX2's steps (qdot_amd64.s) into its own lanes (Y12, Y3)
// and folded as foldLanes, so each row's bits are DotQ8's on that path;
// each stream prefetched as q8RowsNQ8_0AVX512's (pf, hint).

// Q8SUBS(base, j, Yout) is qdot_amd64.s's Q8SUB from base.
#define Q8SUBS(base, j, Yout) \
	VMOVDQU (2+34*j)(base), Y0 \
	SUMSIGNED(32*j, Yout)

// Q8GROUPV(base, Yacc): one row's group into Yacc (qdot_amd64.s's loop body).
#define Q8GROUPV(base, Yacc) \
	Q8SUBS(base, 0, Y4) \
	Q8SUBS(base, 1, Y5) \
	Q8SUBS(base, 2, Y6) \
	Q8SUBS(base, 3, Y7) \
	Q8SUBS(base, 4, Y8) \
	Q8SUBS(base, 5, Y9) \
	Q8SUBS(base, 6, Y10) \
	Q8SUBS(base, 7, Y11) \
	REDUCE8 \
	SCALES8B(base, 34) \
	RACCS(Yacc)

// func q8Rows2Q8_0AVX2(w *byte, stride, rows int, xq *int8, xd *float32, groups int, out *float32, boff, ooff, pf, hint int)
TEXT ·q8Rows2Q8_0AVX2(SB), NOSPLIT, $0-88
	MOVQ w+0(FP), R13
	MOVQ rows+16(FP), R10
	MOVQ out+48(FP), R8
	MOVQ boff+56(FP), R11
	MOVQ ooff+64(FP), R9
	MOVQ pf+72(FP), R14
	VMOVDQU q8ones16<>(SB), Y15
	TESTQ R10, R10
	JZ    q8vdone

q8vrow:
	MOVQ R13, SI
	LEAQ (R13)(R11*1), R15
	MOVQ xq+24(FP), DI
	MOVQ xd+32(FP), DX
	MOVQ groups+40(FP), CX
	VXORPS Y12, Y12, Y12
	VXORPS Y3, Y3, Y3
	TESTQ CX, CX
	JZ    q8vfold

q8vgroup:
	CMPQ hint+80(FP), $1
	JLT  q8vA
	JGT  q8vpf2
	PF5(PREFETCHT0, SI)
	PF5(PREFETCHT0, R15)
	JMP  q8vA

q8vpf2:
	PF5(PREFETCHT2, SI)
	PF5(PREFETCHT2, R15)

q8vA:
	Q8GROUPV(SI, Y12)
	Q8GROUPV(R15, Y3)
	ADDQ $272, SI
	ADDQ $272, R15
	ADDQ $256, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  q8vgroup

q8vfold:
	FOLDLANES(Y12, X12, (R8))
	VMOVAPS Y3, Y12
	FOLDLANES(Y12, X12, (R8)(R9*1))
	ADDQ $4, R8
	ADDQ stride+8(FP), R13
	DECQ R10
	JNZ  q8vrow

q8vdone:
	VZEROUPPER
	RET

// Q2_0, four rows at once from separate parts of the matrix (VBMI and
// GFNI, as the two-row kernel): rows A, B, C, D (SI, R15, R11, R9: boff
// bytes apart) share each group's activation loads, pairs (A, B) and (C, D)
// each run the two-row kernel's steps into one register of both rows' lanes
// (Z12, Z11), each stream prefetched pf bytes ahead (a line per group).
// Where the row ends in a partial group of one or two blocks (tail 1 or 2;
// the caller takes tail 3 elsewhere), both rows of a pair run theirs in
// one register: A's blocks in lanes 0 and 1, B's in 2 and 3, against the
// partial group's activations twice over (xt, Q8Row.q2t), their sub-block
// sums moved to the lanes of A's and B's first four sub-blocks, zero
// elsewhere (+0 terms, which leave a lane as it is). The four rows' lanes
// are folded together, each row in foldLanes's order.
//
// The body is a macro (Q4BODY) of the plane map: a variant that took
// each plane at bits 2 and 3 (VPMULTISHIFTQB and ANDs, to spare the port
// Intel's affine maps share with VPDPBUSD) ran slower on the lent Xeon and
// on Zen 5 alike, and was dropped (docs/BENCHMARKS.md).

// Byte 16l+i: byte 2+i (l = 0) or 20+i (l = 1) of the first table, of the
// second for l = 2, 3 (64 + the same bytes): two rows' first two blocks of
// codes.
DATA q2tcodes<>+0(SB)/8, $0x0908070605040302
DATA q2tcodes<>+8(SB)/8, $0x11100f0e0d0c0b0a
DATA q2tcodes<>+16(SB)/8, $0x1b1a191817161514
DATA q2tcodes<>+24(SB)/8, $0x232221201f1e1d1c
DATA q2tcodes<>+32(SB)/8, $0x4948474645444342
DATA q2tcodes<>+40(SB)/8, $0x51504f4e4d4c4b4a
DATA q2tcodes<>+48(SB)/8, $0x5b5a595857565554
DATA q2tcodes<>+56(SB)/8, $0x636261605f5e5d5c
GLOBL q2tcodes<>(SB), RODATA|NOPTR, $64

// Dword l of l < 4: the tail's dword 2l (+1 for q2todd), A's sub-blocks;
// 8 <= l < 12: dword 2(l-4), B's; the rest dword 16, of the zero table.
DATA q2teven<>+0(SB)/8, $0x0000000200000000
DATA q2teven<>+8(SB)/8, $0x0000000600000004
DATA q2teven<>+16(SB)/8, $0x0000001000000010
DATA q2teven<>+24(SB)/8, $0x0000001000000010
DATA q2teven<>+32(SB)/8, $0x0000000a00000008
DATA q2teven<>+40(SB)/8, $0x0000000e0000000c
DATA q2teven<>+48(SB)/8, $0x0000001000000010
DATA q2teven<>+56(SB)/8, $0x0000001000000010
GLOBL q2teven<>(SB), RODATA|NOPTR, $64

DATA q2todd<>+0(SB)/8, $0x0000000300000001
DATA q2todd<>+8(SB)/8, $0x0000000700000005
DATA q2todd<>+16(SB)/8, $0x0000001000000010
DATA q2todd<>+24(SB)/8, $0x0000001000000010
DATA q2todd<>+32(SB)/8, $0x0000000b00000009
DATA q2todd<>+40(SB)/8, $0x0000000f0000000d
DATA q2todd<>+48(SB)/8, $0x0000001000000010
DATA q2todd<>+56(SB)/8, $0x0000001000000010
GLOBL q2todd<>(SB), RODATA|NOPTR, $64

// Q4GSCALE: what a group's activation sums (Z14) and scales (Z10) take
// before its terms for the plane maps of Q2PPLANES: nothing (the body's
// SC hook, for plane maps that scale the sums).
#define Q4GSCALE

// Q4TERMS(Zs, Zacc): the sub-block sums Zs (both rows' 8, sums at Z14 not
// yet subtracted) to terms (fp16 scales in words of Y2, activation scales
// Z10) added to Zacc.
#define Q4TERMS(Zs, Zacc) \
	VPSUBD Z14, Zs, Zs \
	VCVTDQ2PS Zs, Zs \
	VCVTPH2PS Y2, Z2 \
	VMULPS Z10, Z2, Z2 \
	VMULPS Z2, Zs, Zs \
	VADDPS Zs, Zacc, Zacc

// Q4PAIR(PL, a, b, Zacc): rows a and b's group into Zacc, the planes by PL.
#define Q4PAIR(PL, a, b, Zacc) \
	VMOVDQU64 (a), Z0 \
	VMOVDQU64 (b), Z1 \
	VMOVDQU64 (a), Z2 \
	VPERMT2W Z1, Z30, Z2 \
	VPERMT2B 8(a), Z31, Z0 \
	VPERMT2B 8(b), Z31, Z1 \
	PL(Z0, Z20, Z21) \
	PL(Z1, Z22, Z23) \
	VMOVDQU64 q2peven<>(SB), Z3 \
	VPERMI2D Z22, Z20, Z3 \
	VPERMT2D Z22, Z28, Z20 \
	VPADDD Z20, Z3, Z3 \
	Q4TERMS(Z3, Zacc)

// Q4TPAIR(PL, a, b, Zacc): rows a and b's partial groups (K1: their bytes)
// into Zacc, in one register (Z9, Z13: q2tcodes, q2todd; Z15 zero).
#define Q4TPAIR(PL, a, b, Zacc) \
	VMOVDQU8.Z (a), K1, Z0 \
	VMOVDQU8.Z (b), K1, Z1 \
	VMOVDQA64 Z0, Z2 \
	VPERMT2W Z1, Z30, Z2 \
	VPERMT2B Z1, Z9, Z0 \
	PL(Z0, Z20, Z21) \
	VMOVDQU64 q2teven<>(SB), Z3 \
	VPERMI2D Z15, Z20, Z3 \
	VPERMT2D Z15, Z13, Z20 \
	VPADDD Z20, Z3, Z3 \
	Q4TERMS(Z3, Zacc)

// Q4BODY(PL, SC, row, group, tail, fold, done): the four-row kernel with
// the plane map PL and the group scaling SC (Q2PPLANES, Q4GSCALE), its
// constants set (Z24..Z27 PL's, Z28, Z30, Z31); the rest are its labels.
#define Q4BODY(PL, SC, row, group, tail, fold, done) \
	MOVQ w+0(FP), R13 \
	MOVQ rows+16(FP), R10 \
	MOVQ out+72(FP), R8 \
	MOVQ pf+104(FP), R12 \
	KMOVQ mask+64(FP), K1 \
	VMOVDQU64 q2pcodes<>(SB), Z31 \
	VMOVDQU64 q2pscale<>(SB), Z30 \
	VMOVDQU64 q2podd<>(SB), Z28 \
	VPXORQ Z15, Z15, Z15 \
	TESTQ R10, R10 \
	JZ    done \
row: \
	MOVQ boff+80(FP), AX \
	MOVQ R13, SI \
	LEAQ (R13)(AX*1), R15 \
	LEAQ (R13)(AX*2), R11 \
	LEAQ (R15)(AX*2), R9 \
	MOVQ xq+24(FP), DI \
	MOVQ xd+32(FP), DX \
	MOVQ xs+40(FP), BX \
	MOVQ groups+48(FP), CX \
	VPXORQ Z12, Z12, Z12 \
	VPXORQ Z11, Z11, Z11 \
	TESTQ CX, CX \
	JZ    tail \
group: \
	PREFETCHT0 (SI)(R12*1) \
	PREFETCHT0 (R15)(R12*1) \
	PREFETCHT0 (R11)(R12*1) \
	PREFETCHT0 (R9)(R12*1) \
	VMOVDQU64 0(DI), Z16 \
	VMOVDQU64 64(DI), Z17 \
	VMOVDQU64 128(DI), Z18 \
	VMOVDQU64 192(DI), Z19 \
	VBROADCASTI64X4 (BX), Z14 \
	VBROADCASTF64X4 (DX), Z10 \
	SC \
	Q4PAIR(PL, SI, R15, Z12) \
	Q4PAIR(PL, R11, R9, Z11) \
	ADDQ $72, SI \
	ADDQ $72, R15 \
	ADDQ $72, R11 \
	ADDQ $72, R9 \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $32, BX \
	DECQ CX \
	JNZ  group \
tail: \
	CMPQ tail+56(FP), $0 \
	JEQ  fold \
	MOVQ xt+96(FP), AX \
	VMOVDQU64 0(AX), Z16 \
	VMOVDQU64 64(AX), Z17 \
	VMOVDQU64 128(AX), Z18 \
	VMOVDQU64 192(AX), Z19 \
	VBROADCASTI64X4 (BX), Z14 \
	VBROADCASTF64X4 (DX), Z10 \
	SC \
	VMOVDQU64 q2tcodes<>(SB), Z9 \
	VMOVDQU64 q2todd<>(SB), Z13 \
	Q4TPAIR(PL, SI, R15, Z12) \
	Q4TPAIR(PL, R11, R9, Z11) \
fold: \
	VSHUFF32X4 $0x88, Z11, Z12, Z0 \
	VSHUFF32X4 $0xdd, Z11, Z12, Z1 \
	VADDPS Z1, Z0, Z0 \
	VPERMILPS $0x4e, Z0, Z1 \
	VADDPS Z1, Z0, Z0 \
	VMOVSHDUP Z0, Z1 \
	VADDPS Z1, Z0, Z0 \
	MOVQ ooff+88(FP), AX \
	LEAQ (AX)(AX*2), CX \
	VMOVSS X0, (R8) \
	VEXTRACTF32X4 $1, Z0, X1 \
	VMOVSS X1, (R8)(AX*1) \
	VEXTRACTF32X4 $2, Z0, X1 \
	VMOVSS X1, (R8)(AX*2) \
	VEXTRACTF32X4 $3, Z0, X1 \
	VMOVSS X1, (R8)(CX*1) \
	ADDQ $4, R8 \
	ADDQ stride+8(FP), R13 \
	DECQ R10 \
	JNZ  row \
done: \
	VZEROUPPER \
	RET

// The fold above: lanes 0-3 and 4-7 of A, B, C, D side by side, then
// foldLanes's adds on all four at once, row r's result in dword 4r.

// func q2Rows4AVX512(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, mask uint64, out *float32, boff, ooff int, xt *int8, pf int)
// rows: rows A, each stride bytes from the last, outputs at out, and as
// many rows B, C, D, boff, 2boff, 3boff bytes after each A, outputs ooff,
// 2ooff, 3ooff bytes after A's; tail 0, 1 or 2 blocks, mask their bytes
// (18*tail), xt the partial group's activations (Q8Row.q2t; unused for
// tail 0).
TEXT ·q2Rows4AVX512(SB), NOSPLIT, $0-112
	VPBROADCASTQ q2pmat<>+0(SB), Z24
	VPBROADCASTQ q2pmat<>+8(SB), Z25
	VPBROADCASTQ q2pmat<>+16(SB), Z26
	VPBROADCASTQ q2pmat<>+24(SB), Z27
	Q4BODY(Q2PPLANES, Q4GSCALE, q2qrow, q2qgroup, q2qtail, q2qfold, q2qdone)

// Q2_0 on AVX2 and F16C, two rows at once from separate parts of the
// matrix: rows A (SI) and B (R15, boff bytes after A) share each group's
// activation loads (Q8Row.q2's plane order), each stream prefetched pf
// bytes ahead (a line per group). Per row and group, Y0 takes blocks 0 and
// 1's codes (a 128-bit lane each), Y1 blocks 2 and 3's; plane k, (c >> 2k)
// & 3, against the activations at 64k (Y0's) and 64k+32 (Y1's) by
// VPMADDUBSW (at most 2*3*127 a word), the four planes' words added (at
// most 3048), then VPMADDWD with ones to dwords, 4 per block: the first
// two its first sub-block's, the other two its second's. VPHADDD of the
// two leaves the 8 sub-block sums in the order 0, 1, 4, 5, 2, 3, 6, 7
// (Q2VORDER), which the lanes keep throughout: the activation sums and
// scales are permuted to it (VPERMQ $0xd8), each block's fp16 scale picked
// twice, and the fold adds the lanes in foldLanes's order of the lanes
// they hold. A last partial group of 1 to 3 blocks loads only its blocks
// (16 code bytes and a scale each, inside the row), the rest zero.

// Q2VPLANE(shift, xoff): plane shift/2 of Y0 and Y1 against the
// activations at xoff(DI), the words added to Y4 (Y0's) and Y5 (Y1's).
#define Q2VPLANE(shift, xoff) \
	VPSRLW $shift, Y0, Y2 \
	VPAND Y15, Y2, Y2 \
	VPMADDUBSW xoff(DI), Y2, Y2 \
	VPADDW Y2, Y4, Y4 \
	VPSRLW $shift, Y1, Y3 \
	VPAND Y15, Y3, Y3 \
	VPMADDUBSW (xoff+32)(DI), Y3, Y3 \
	VPADDW Y3, Y5, Y5

// Q2VSUMS(Yacc): the group's terms of codes Y0, Y1 and fp16 scales in the
// words of X6 (blocks 0, 2, 1, 3) into Yacc (Y7 the activation sums, Y8
// their scales, both in Q2VORDER).
#define Q2VSUMS(Yacc) \
	VPAND Y15, Y0, Y2 \
	VPMADDUBSW 0(DI), Y2, Y4 \
	VPAND Y15, Y1, Y3 \
	VPMADDUBSW 32(DI), Y3, Y5 \
	Q2VPLANE(2, 64) \
	Q2VPLANE(4, 128) \
	Q2VPLANE(6, 192) \
	VPMADDWD Y14, Y4, Y4 \
	VPMADDWD Y14, Y5, Y5 \
	VPHADDD Y5, Y4, Y4 \
	VPSUBD Y7, Y4, Y4 \
	VCVTDQ2PS Y4, Y4 \
	VPUNPCKLWD X6, X6, X6 \
	VCVTPH2PS X6, Y6 \
	VMULPS Y8, Y6, Y6 \
	VMULPS Y6, Y4, Y4 \
	VADDPS Y4, Yacc, Yacc

// Q2VGROUP(base, Yacc): one row's whole group.
#define Q2VGROUP(base, Yacc) \
	VMOVDQU 2(base), X0 \
	VINSERTI128 $1, 20(base), Y0, Y0 \
	VMOVDQU 38(base), X1 \
	VINSERTI128 $1, 56(base), Y1, Y1 \
	MOVWLZX 0(base), AX \
	VMOVD AX, X6 \
	VPINSRW $1, 36(base), X6, X6 \
	VPINSRW $2, 18(base), X6, X6 \
	VPINSRW $3, 54(base), X6, X6 \
	Q2VSUMS(Yacc)

// Q2VTAIL(base, Yacc, lbl): one row's partial group of CX (1..3) blocks.
#define Q2VTAIL(base, Yacc, lbl) \
	VPXOR Y1, Y1, Y1 \
	VMOVDQU 2(base), X0 \
	MOVWLZX 0(base), AX \
	VMOVD AX, X6 \
	CMPQ CX, $2 \
	JLT  lbl \
	VINSERTI128 $1, 20(base), Y0, Y0 \
	VPINSRW $2, 18(base), X6, X6 \
	CMPQ CX, $3 \
	JLT  lbl \
	VMOVDQU 38(base), X1 \
	VPINSRW $1, 36(base), X6, X6 \
lbl: \
	Q2VSUMS(Yacc)

// Q2VFOLD(dst): Y12's lanes (in Q2VORDER: position p holds lane 0, 1, 4,
// 5, 2, 3, 6, 7) folded as foldLanes to dst.
#define Q2VFOLD(dst) \
	VPERMILPS $0x4e, Y12, Y0 \
	VADDPS Y0, Y12, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, dst

// func q2Rows2AVX2(w *byte, stride, rows int, xq *int8, xd *float32, xs *int32, groups, tail int, out *float32, boff, ooff, pf int)
// rows: rows A, each stride bytes from the last, outputs at out, and as
// many rows B, boff bytes after each A, outputs ooff bytes after A's
// (boff and ooff 0: each row twice, to the same output); tail: the
// partial group's blocks (0..3).
TEXT ·q2Rows2AVX2(SB), NOSPLIT, $0-96
	MOVQ w+0(FP), R13
	MOVQ rows+16(FP), R10
	MOVQ out+64(FP), R8
	MOVQ boff+72(FP), R11
	MOVQ ooff+80(FP), R9
	MOVQ pf+88(FP), R14
	VMOVDQU q8ones16<>(SB), Y14
	VPBROADCASTQ q2rthree<>(SB), Y15
	TESTQ R10, R10
	JZ    q2vdone

q2vrow:
	MOVQ R13, SI
	LEAQ (R13)(R11*1), R15
	MOVQ xq+24(FP), DI
	MOVQ xd+32(FP), DX
	MOVQ xs+40(FP), BX
	MOVQ groups+48(FP), CX
	VXORPS Y12, Y12, Y12
	VXORPS Y11, Y11, Y11
	TESTQ CX, CX
	JZ    q2vtail

q2vgroup:
	PREFETCHT0 (SI)(R14*1)
	PREFETCHT0 (R15)(R14*1)
	VPERMQ $0xd8, (BX), Y7
	VPERMQ $0xd8, (DX), Y8
	Q2VGROUP(SI, Y12)
	Q2VGROUP(R15, Y11)
	ADDQ $72, SI
	ADDQ $72, R15
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q2vgroup

q2vtail:
	MOVQ tail+56(FP), CX
	TESTQ CX, CX
	JZ    q2vfold
	VPERMQ $0xd8, (BX), Y7
	VPERMQ $0xd8, (DX), Y8
	Q2VTAIL(SI, Y12, q2vtA)
	Q2VTAIL(R15, Y11, q2vtB)

q2vfold:
	Q2VFOLD((R8))
	VMOVAPS Y11, Y12
	Q2VFOLD((R8)(R9*1))
	ADDQ $4, R8
	ADDQ stride+8(FP), R13
	DECQ R10
	JNZ  q2vrow

q2vdone:
	VZEROUPPER
	RET

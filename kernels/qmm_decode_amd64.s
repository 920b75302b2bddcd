//go:build amd64 && !noasm

#include "textflag.h"

// Decoders of whole groups of 8 sub-blocks into q8Decoded's layout for the
// tiled products (qmm.go): 256 integer weights, 8 multipliers (all 1 for
// these types) and 8 weight scales (the blocks' fp16 d as float32) per
// group, exactly weightSub's. AVX (128-bit) and F16C.

DATA qmmones16<>+0(SB)/8, $0x0001000100010001
DATA qmmones16<>+8(SB)/8, $0x0001000100010001
GLOBL qmmones16<>(SB), RODATA|NOPTR, $16

DATA qmmnib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA qmmnib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL qmmnib<>(SB), RODATA|NOPTR, $16

// Q2_0 codes of a nibble n: (n&3)-1 and ((n>>2)&3)-1.
DATA qmmq2lo<>+0(SB)/8, $0x020100ff020100ff
DATA qmmq2lo<>+8(SB)/8, $0x020100ff020100ff
GLOBL qmmq2lo<>(SB), RODATA|NOPTR, $16
DATA qmmq2hi<>+0(SB)/8, $0x00000000ffffffff
DATA qmmq2hi<>+8(SB)/8, $0x0202020201010101
GLOBL qmmq2hi<>(SB), RODATA|NOPTR, $16

// func qmmDecodeQ8_0AVX(w *byte, groups int, out *int8, m *int16, dw *float32)
TEXT ·qmmDecodeQ8_0AVX(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ m+24(FP), R9
	MOVQ dw+32(FP), R11
	VMOVDQU qmmones16<>(SB), X14
	TESTQ CX, CX
	JZ    q80done

q80loop:
	VMOVDQU 2(SI), Y0
	VMOVDQU Y0, 0(DI)
	VMOVDQU 36(SI), Y0
	VMOVDQU Y0, 32(DI)
	VMOVDQU 70(SI), Y0
	VMOVDQU Y0, 64(DI)
	VMOVDQU 104(SI), Y0
	VMOVDQU Y0, 96(DI)
	VMOVDQU 138(SI), Y0
	VMOVDQU Y0, 128(DI)
	VMOVDQU 172(SI), Y0
	VMOVDQU Y0, 160(DI)
	VMOVDQU 206(SI), Y0
	VMOVDQU Y0, 192(DI)
	VMOVDQU 240(SI), Y0
	VMOVDQU Y0, 224(DI)
	MOVWLZX 0(SI), AX
	VMOVD   AX, X13
	VPINSRW $1, 34(SI), X13, X13
	VPINSRW $2, 68(SI), X13, X13
	VPINSRW $3, 102(SI), X13, X13
	VPINSRW $4, 136(SI), X13, X13
	VPINSRW $5, 170(SI), X13, X13
	VPINSRW $6, 204(SI), X13, X13
	VPINSRW $7, 238(SI), X13, X13
	VCVTPH2PS X13, Y13
	VMOVUPS Y13, (R11)
	VMOVDQU X14, (R9)
	ADDQ $272, SI
	ADDQ $256, DI
	ADDQ $16, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  q80loop

q80done:
	VZEROUPPER
	RET

// Q2BLOCK(b): block b of the group (18 bytes at 18*b(SI)): its 64 weights
// to 64*b(DI). Weight 4i+k is bits 2k..2k+1 of code byte i, minus 1: the
// low nibble gives k = 0, 1, the high nibble k = 2, 3, each through a
// 16-entry table, interleaved back into order.
#define Q2BLOCK(b) \
	VMOVDQU (18*b+2)(SI), X0 \
	VPAND   X15, X0, X1 \
	VPSRLW  $4, X0, X2 \
	VPAND   X15, X2, X2 \
	VPSHUFB X1, X12, X3 \
	VPSHUFB X1, X11, X4 \
	VPSHUFB X2, X12, X5 \
	VPSHUFB X2, X11, X6 \
	VPUNPCKLBW X4, X3, X7 \
	VPUNPCKHBW X4, X3, X8 \
	VPUNPCKLBW X6, X5, X9 \
	VPUNPCKHBW X6, X5, X10 \
	VPUNPCKLWD X9, X7, X0 \
	VMOVDQU X0, (64*b)(DI) \
	VPUNPCKHWD X9, X7, X0 \
	VMOVDQU X0, (64*b+16)(DI) \
	VPUNPCKLWD X10, X8, X0 \
	VMOVDQU X0, (64*b+32)(DI) \
	VPUNPCKHWD X10, X8, X0 \
	VMOVDQU X0, (64*b+48)(DI)

// func qmmDecodeQ2_0AVX(w *byte, groups int, out *int8, m *int16, dw *float32)
TEXT ·qmmDecodeQ2_0AVX(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ m+24(FP), R9
	MOVQ dw+32(FP), R11
	VMOVDQU qmmones16<>(SB), X14
	VMOVDQU qmmnib<>(SB), X15
	VMOVDQU qmmq2lo<>(SB), X12
	VMOVDQU qmmq2hi<>(SB), X11
	TESTQ CX, CX
	JZ    q20done

q20loop:
	Q2BLOCK(0)
	Q2BLOCK(1)
	Q2BLOCK(2)
	Q2BLOCK(3)
	MOVWLZX 0(SI), AX
	VMOVD   AX, X13
	VPINSRW $1, AX, X13, X13
	MOVWLZX 18(SI), AX
	VPINSRW $2, AX, X13, X13
	VPINSRW $3, AX, X13, X13
	MOVWLZX 36(SI), AX
	VPINSRW $4, AX, X13, X13
	VPINSRW $5, AX, X13, X13
	MOVWLZX 54(SI), AX
	VPINSRW $6, AX, X13, X13
	VPINSRW $7, AX, X13, X13
	VCVTPH2PS X13, Y13
	VMOVUPS Y13, (R11)
	VMOVDQU X14, (R9)
	ADDQ $72, SI
	ADDQ $256, DI
	ADDQ $16, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  q20loop

q20done:
	VZEROUPPER
	RET

// NIBBLOCK(b): block b of the group (18 bytes at 18*b(SI): fp16 d, 16
// bytes of nibbles) to its 32 weights at 32*b(DI): weight j is the table
// value of byte j's low nibble, weight j+16 of its high nibble.
#define NIBBLOCK(b) \
	VMOVDQU (18*b+2)(SI), X0 \
	VPAND   X15, X0, X1 \
	VPSRLW  $4, X0, X2 \
	VPAND   X15, X2, X2 \
	VPSHUFB X1, X12, X1 \
	VPSHUFB X2, X12, X2 \
	VMOVDQU X1, (32*b)(DI) \
	VMOVDQU X2, (32*b+16)(DI)

// func qmmDecodeNibAVX(w *byte, groups int, table *int8, out *int8, m *int16, dw *float32)
//
// Q4_0 and IQ4_NL (table: the 16 values of a nibble), whole groups of 8
// blocks of 32.
TEXT ·qmmDecodeNibAVX(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ table+16(FP), AX
	MOVQ out+24(FP), DI
	MOVQ m+32(FP), R9
	MOVQ dw+40(FP), R11
	VMOVDQU qmmones16<>(SB), X14
	VMOVDQU qmmnib<>(SB), X15
	VMOVDQU (AX), X12
	TESTQ CX, CX
	JZ    nibdone

nibloop:
	NIBBLOCK(0)
	NIBBLOCK(1)
	NIBBLOCK(2)
	NIBBLOCK(3)
	NIBBLOCK(4)
	NIBBLOCK(5)
	NIBBLOCK(6)
	NIBBLOCK(7)
	MOVWLZX 0(SI), AX
	VMOVD   AX, X13
	VPINSRW $1, 18(SI), X13, X13
	VPINSRW $2, 36(SI), X13, X13
	VPINSRW $3, 54(SI), X13, X13
	VPINSRW $4, 72(SI), X13, X13
	VPINSRW $5, 90(SI), X13, X13
	VPINSRW $6, 108(SI), X13, X13
	VPINSRW $7, 126(SI), X13, X13
	VCVTPH2PS X13, Y13
	VMOVUPS Y13, (R11)
	VMOVDQU X14, (R9)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $16, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  nibloop

nibdone:
	VZEROUPPER
	RET

DATA qmmq6lo<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA qmmq6lo<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA qmmq6lo<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA qmmq6lo<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL qmmq6lo<>(SB), RODATA|NOPTR, $32

DATA qmmq6hi<>+0(SB)/8, $0x3030303030303030
DATA qmmq6hi<>+8(SB)/8, $0x3030303030303030
DATA qmmq6hi<>+16(SB)/8, $0x3030303030303030
DATA qmmq6hi<>+24(SB)/8, $0x3030303030303030
GLOBL qmmq6hi<>(SB), RODATA|NOPTR, $32

DATA qmmq632<>+0(SB)/8, $0x2020202020202020
DATA qmmq632<>+8(SB)/8, $0x2020202020202020
DATA qmmq632<>+16(SB)/8, $0x2020202020202020
DATA qmmq632<>+24(SB)/8, $0x2020202020202020
GLOBL qmmq632<>(SB), RODATA|NOPTR, $32

// Q6HALF(h): half h of the block (sub-blocks 4h..4h+3): ql0, ql1 the 32
// bytes at 64h and 64h+32, qh the 32 at 128+32h; sub-block 4h+i's code j is
// (nibble of ql_(i%2)[j], low for i < 2) | (bits 2i, 2i+1 of qh[j]) << 4,
// minus 32. Y15 0x0f, Y14 0x30, Y13 32.
#define Q6HALF(h) \
	VMOVDQU (64*h)(SI), Y0 \
	VMOVDQU (64*h+32)(SI), Y1 \
	VMOVDQU (128+32*h)(SI), Y2 \
	VPAND   Y15, Y0, Y3 \
	VPSLLW  $4, Y2, Y4 \
	VPAND   Y14, Y4, Y4 \
	VPOR    Y4, Y3, Y3 \
	VPSUBB  Y13, Y3, Y3 \
	VMOVDQU Y3, (128*h)(DI) \
	VPAND   Y15, Y1, Y3 \
	VPSLLW  $2, Y2, Y4 \
	VPAND   Y14, Y4, Y4 \
	VPOR    Y4, Y3, Y3 \
	VPSUBB  Y13, Y3, Y3 \
	VMOVDQU Y3, (128*h+32)(DI) \
	VPSRLW  $4, Y0, Y3 \
	VPAND   Y15, Y3, Y3 \
	VPAND   Y14, Y2, Y4 \
	VPOR    Y4, Y3, Y3 \
	VPSUBB  Y13, Y3, Y3 \
	VMOVDQU Y3, (128*h+64)(DI) \
	VPSRLW  $4, Y1, Y3 \
	VPAND   Y15, Y3, Y3 \
	VPSRLW  $2, Y2, Y4 \
	VPAND   Y14, Y4, Y4 \
	VPOR    Y4, Y3, Y3 \
	VPSUBB  Y13, Y3, Y3 \
	VMOVDQU Y3, (128*h+96)(DI)

// func qmmDecodeQ6KAVX2(w *byte, groups int, out *int8, mh *int16, dw *float32)
//
// Q6_K for the halves tiles: per 210-byte block (ql[128], qh[64],
// scales[16] int8, fp16 d) its 256 codes, its 16 scales as int16 (the
// multipliers of the 16 halves, in order) and d eight times.
TEXT ·qmmDecodeQ6KAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ mh+24(FP), R9
	MOVQ dw+32(FP), R11
	VMOVDQU qmmq6lo<>(SB), Y15
	VMOVDQU qmmq6hi<>(SB), Y14
	VMOVDQU qmmq632<>(SB), Y13
	TESTQ CX, CX
	JZ    q6done

q6loop:
	Q6HALF(0)
	Q6HALF(1)
	VPMOVSXBW 192(SI), Y5
	VMOVDQU   Y5, (R9)
	MOVWLZX   208(SI), AX
	VMOVD     AX, X6
	VPBROADCASTW X6, X6
	VCVTPH2PS X6, Y6
	VMOVUPS   Y6, (R11)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  q6loop

q6done:
	VZEROUPPER
	RET

//go:build amd64 && !noasm

#include "textflag.h"

// q8quantAVX2 quantizes nb blocks of 32 activations by quant.Q8_0Block's
// rule (qdot.go's QuantizeQ8Row): amax of |x|, d = amax/127, id = 1/d (0
// when d is 0), codes roundHalfAway(x*id) (C's roundf inside the int8
// range, 0 outside or for NaN), each step one correctly rounded float32
// operation as in Go. It stores the codes, the block sums and d unrounded
// (the caller rounds it through fp16), and returns whether a NaN was seen
// (then the caller quantizes the row portably: the max of a NaN differs).
// It also writes each block's codes to q2 in Q8Row.q2's plane order: block
// b's 32 codes c[4i+k] (i < 8, k < 4) go to q2[256(b/8) + 64k + 8(b%8) + i],
// eight bytes per plane k (the caller clears a partial last group's planes).
//
// Two passes over the row: every block's d, then every block's codes (a
// block's amax, d, id and codes are one chain of some 80 cycles; in two
// passes each pass's blocks are independent of each other).
//
// Registers: SI x, DI codes, DX scales, R8 sums, R9 the block's bytes in the
// first plane of q2, R11 blocks left in its group of 8, CX blocks left; Y0..Y3
// a block; Y7 id; Y9 NaN flags; Y10 the VPERMD order after packing (also the
// planes' order); Y11..Y15 constants; Y4..Y6, Y8 temporaries.

DATA q8qabs<>+0(SB)/8, $0x7fffffff7fffffff
DATA q8qabs<>+8(SB)/8, $0x7fffffff7fffffff
DATA q8qabs<>+16(SB)/8, $0x7fffffff7fffffff
DATA q8qabs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL q8qabs<>(SB), RODATA|NOPTR, $32

DATA q8qperm<>+0(SB)/8, $0x0000000400000000
DATA q8qperm<>+8(SB)/8, $0x0000000500000001
DATA q8qperm<>+16(SB)/8, $0x0000000600000002
DATA q8qperm<>+24(SB)/8, $0x0000000700000003
GLOBL q8qperm<>(SB), RODATA|NOPTR, $32

// VPSHUFB: in each 16-code lane, code 4i+k to byte 4k+i (the lane's four
// planes, four codes each; VPERMD by q8qperm then puts each plane's eight
// codes of the block together).
DATA q8qplane<>+0(SB)/8, $0x0d0905010c080400
DATA q8qplane<>+8(SB)/8, $0x0f0b07030e0a0602
DATA q8qplane<>+16(SB)/8, $0x0d0905010c080400
DATA q8qplane<>+24(SB)/8, $0x0f0b07030e0a0602
GLOBL q8qplane<>(SB), RODATA|NOPTR, $32

// 127, 1, 127.5, -128.5, 0.5, -0.5 as float32.
DATA q8qf<>+0(SB)/4, $0x42fe0000
DATA q8qf<>+4(SB)/4, $0x3f800000
DATA q8qf<>+8(SB)/4, $0x42ff0000
DATA q8qf<>+12(SB)/4, $0xc3008000
DATA q8qf<>+16(SB)/4, $0x3f000000
DATA q8qf<>+20(SB)/4, $0xbf000000
GLOBL q8qf<>(SB), RODATA|NOPTR, $24

DATA q8qsign<>+0(SB)/4, $0x80000000
GLOBL q8qsign<>(SB), RODATA|NOPTR, $4
DATA q8qnan<>+0(SB)/4, $0x7fc00000
GLOBL q8qnan<>(SB), RODATA|NOPTR, $4

// CODES(Y): Y (float32 activations) to its int32 codes.
#define CODES(Y) \
	VMULPS     Y7, Y, Y \
	VCMPPS     $0x11, Y14, Y, Y4 \
	VCMPPS     $0x1e, Y13, Y, Y5 \
	VANDPS     Y5, Y4, Y4 \
	VCVTTPS2DQ Y, Y5 \
	VCVTDQ2PS  Y5, Y6 \
	VSUBPS     Y6, Y, Y6 \
	VCMPPS     $0x1d, Y12, Y6, Y8 \
	VPSUBD     Y8, Y5, Y5 \
	VCMPPS     $0x12, Y11, Y6, Y8 \
	VPADDD     Y8, Y5, Y5 \
	VPAND      Y4, Y5, Y

// func q8quantAVX2(x *float32, nb int, qs *int8, d *float32, sums *int32, q2 *int8) bool
TEXT ·q8quantAVX2(SB), NOSPLIT, $0-49
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ sums+32(FP), R8
	MOVQ q2+40(FP), R9
	MOVQ $8, R11
	VMOVDQU q8qabs<>(SB), Y15
	VBROADCASTSS q8qf<>+8(SB), Y14
	VBROADCASTSS q8qf<>+12(SB), Y13
	VBROADCASTSS q8qf<>+16(SB), Y12
	VBROADCASTSS q8qf<>+20(SB), Y11
	VMOVDQU q8qperm<>(SB), Y10
	VPXOR Y9, Y9, Y9
	TESTQ CX, CX
	JZ    q8qdone

q8qamax:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VCMPPS  $3, Y0, Y0, Y4
	VCMPPS  $3, Y1, Y1, Y5
	VORPS   Y5, Y4, Y4
	VCMPPS  $3, Y2, Y2, Y5
	VORPS   Y5, Y4, Y4
	VCMPPS  $3, Y3, Y3, Y5
	VORPS   Y5, Y4, Y4
	VORPS   Y4, Y9, Y9
	VANDPS  Y15, Y0, Y4
	VANDPS  Y15, Y1, Y5
	VMAXPS  Y5, Y4, Y4
	VANDPS  Y15, Y2, Y5
	VMAXPS  Y5, Y4, Y4
	VANDPS  Y15, Y3, Y5
	VMAXPS  Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS  X5, X4, X4
	VPERMILPS $0x4e, X4, X5
	VMAXPS  X5, X4, X4
	VPERMILPS $0xb1, X4, X5
	VMAXPS  X5, X4, X4
	VDIVSS  q8qf<>+0(SB), X4, X6
	VMOVSS  X6, (DX)
	ADDQ $128, SI
	ADDQ $4, DX
	DECQ CX
	JNZ  q8qamax

	// The codes, each block's id from its d (no chain from one block to
	// the next: the scales first let the blocks overlap).
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ d+24(FP), DX

q8qloop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVSS  (DX), X6
	VMOVSS  q8qf<>+4(SB), X7
	VDIVSS  X6, X7, X7
	VXORPS  X8, X8, X8
	VCMPSS  $4, X8, X6, X8
	VANDPS  X8, X7, X7
	VBROADCASTSS X7, Y7
	CODES(Y0)
	CODES(Y1)
	CODES(Y2)
	CODES(Y3)
	VPADDD  Y1, Y0, Y4
	VPADDD  Y3, Y2, Y5
	VPADDD  Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD  X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPADDD  X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPADDD  X5, X4, X4
	VMOVD   X4, (R8)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD  Y0, Y10, Y0
	VMOVDQU Y0, (DI)
	VPSHUFB q8qplane<>(SB), Y0, Y4
	VPERMD  Y4, Y10, Y4
	VMOVQ   X4, 0(R9)
	VPEXTRQ $1, X4, 64(R9)
	VEXTRACTI128 $1, Y4, X5
	VMOVQ   X5, 128(R9)
	VPEXTRQ $1, X5, 192(R9)
	ADDQ $8, R9
	DECQ R11
	JNZ  q8qsamegroup
	ADDQ $192, R9
	MOVQ $8, R11

q8qsamegroup:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, R8
	DECQ CX
	JNZ  q8qloop

q8qdone:
	VPTEST Y9, Y9
	SETNE  ret+48(FP)
	VZEROUPPER
	RET

// func roundFP16F16C(d *float32, n int)
//
// Rounds n (a positive multiple of 8) float32s in place through binary16
// and back: VCVTPS2PH to nearest even, VCVTPH2PS, a NaN then replaced by
// its sign and 0x7fc00000, the bits of quant.FP16ToFloat32(
// quant.Float32ToFP16(x)) for every x (F16C, AVX).
TEXT ·roundFP16F16C(SB), NOSPLIT, $0-16
	MOVQ d+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VBROADCASTSS q8qsign<>(SB), Y3
	VBROADCASTSS q8qnan<>(SB), Y4

fp16loop:
	VMOVUPS     (SI), Y0
	VCVTPS2PH   $0, Y0, X1
	VCVTPH2PS   X1, Y1
	VANDPS      Y3, Y0, Y2
	VORPS       Y4, Y2, Y2
	VCMPPS      $3, Y0, Y0, Y5
	VBLENDVPS   Y5, Y2, Y1, Y1
	VMOVUPS     Y1, (SI)
	ADDQ        $32, SI
	DECQ        CX
	JNZ         fp16loop
	VZEROUPPER
	RET

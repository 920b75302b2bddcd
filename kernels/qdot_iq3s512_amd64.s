//go:build amd64 && !noasm

#include "textflag.h"
#include "prefetch_amd64.h"

#include "qdot_amd64.h"

// IQ3_S against Q8_0 activations in AVX-512 (F, BW, VNNI; the VEX parts
// AVX2 and F16C): DotQ8's order, as q8dotIQ3SAVX2. A block (110 bytes: fp16
// d, qs[64], qh[8], signs[32], scales[4]) is four ZMMs of 16 grid entries
// (64 weights, sub-blocks 2i and 2i+1): the 9-bit indices are qs widened
// to dwords with qh's bits (bit g of qh's qword is group g's ninth bit) ORed
// in as 256 under a mask, the entries fetched by one VPGATHERDD, the
// activations negated under the mask of the signs (bit e of the signs'
// qword i is element 64i+e; a Q8Row holds no -128, so the negation is
// exact), and the unsigned grid bytes times the signed activations summed
// by VPDPBUSD: each sub-block's sum is exact, as in the AVX2 kernel. The
// sums are then reduced to one per sub-block (REDUCE8), times 1+2*scale
// (VPMULLD: at most 31*32*15*127, exact), converted, times (d * dx) and
// added to the 8 lanes. Only Z0..Z15 are used, so VZEROUPPER leaves no dirty
// upper state.
//
// Registers: SI block, DI activation codes, DX activation scales, R8 grid,
// R11 lanes, CX blocks left; Y12 the lanes; Z14 256 in every dword; Z15
// zero; Y4..Y11 the sub-blocks' partial sums; Z0..Z3, Y13 temporaries.

DATA iq3sShifts<>+0(SB)/8, $0x0000000400000000
DATA iq3sShifts<>+8(SB)/8, $0x0000000c00000008
DATA iq3sShifts<>+16(SB)/8, $0x0000001400000010
DATA iq3sShifts<>+24(SB)/8, $0x0000001c00000018
GLOBL iq3sShifts<>(SB), RODATA|NOPTR, $32

DATA iq3sNib<>+0(SB)/8, $0x0000000f0000000f
DATA iq3sNib<>+8(SB)/8, $0x0000000f0000000f
DATA iq3sNib<>+16(SB)/8, $0x0000000f0000000f
DATA iq3sNib<>+24(SB)/8, $0x0000000f0000000f
GLOBL iq3sNib<>(SB), RODATA|NOPTR, $32

DATA iq3sOnes<>+0(SB)/8, $0x0000000100000001
DATA iq3sOnes<>+8(SB)/8, $0x0000000100000001
DATA iq3sOnes<>+16(SB)/8, $0x0000000100000001
DATA iq3sOnes<>+24(SB)/8, $0x0000000100000001
GLOBL iq3sOnes<>(SB), RODATA|NOPTR, $32

// IQ3Z512(i, Zs, Yhi): quarter i of the block at SI; Zs's low 8 dwords are
// partial sums of sub-block 2i, its high 8 (moved to Yhi) of 2i+1.
#define IQ3Z512(i, Zs, Yhi) \
	VPMOVZXBD  (2+16*i)(SI), Z0 \
	KMOVW      (66+2*i)(SI), K1 \
	VPORD      Z14, Z0, K1, Z0 \
	KXNORW     K2, K2, K2 \
	VPGATHERDD (R8)(Z0*4), K2, Z1 \
	KMOVQ      (74+8*i)(SI), K3 \
	VMOVDQU8   (64*i)(DI), Z2 \
	VPSUBB     Z2, Z15, K3, Z2 \
	VPXORD     Zs, Zs, Zs \
	VPDPBUSD   Z2, Z1, Zs \
	VEXTRACTI64X4 $1, Zs, Yhi

// func q8dotIQ3SAVX512(w *byte, xq *int8, xd *float32, blocks int, lanes *[8]float32, grid *uint32)
TEXT ·q8dotIQ3SAVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ lanes+32(FP), R11
	MOVQ grid+40(FP), R8
	VMOVUPS (R11), Y12
	MOVL    $256, AX
	VPBROADCASTD AX, Z14
	VPXORD  Z15, Z15, Z15
	TESTQ CX, CX
	JZ    iq3zdone

iq3zloop:
	PFAHEAD2(110)
	IQ3Z512(0, Z4, Y5)
	IQ3Z512(1, Z6, Y7)
	IQ3Z512(2, Z8, Y9)
	IQ3Z512(3, Z10, Y11)
	REDUCE8
	// Y3 = 1 + 2*scale of each sub-block (scales[b/2] >> 4*(b%2) & 15).
	VPBROADCASTD (106)(SI), Y3
	VPSRLVD iq3sShifts<>(SB), Y3, Y3
	VPAND   iq3sNib<>(SB), Y3, Y3
	VPADDD  Y3, Y3, Y3
	VPOR    iq3sOnes<>(SB), Y3, Y3
	VPMULLD Y3, Y0, Y0
	VCVTDQ2PS Y0, Y0
	VPBROADCASTW (SI), X13
	VCVTPH2PS X13, Y13
	VMULPS (DX), Y13, Y13
	VMULPS Y13, Y0, Y0
	VADDPS Y0, Y12, Y12
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  iq3zloop

iq3zdone:
	VMOVUPS Y12, (R11)
	VZEROUPPER
	RET

// IQ3DEC512(i): quarter i of the block at SI: its 64 grid bytes with the
// signs applied (the grid's values are at most 15, so the negation is
// exact), stored at DI+64i.
#define IQ3DEC512(i) \
	VPMOVZXBD  (2+16*i)(SI), Z0 \
	KMOVW      (66+2*i)(SI), K1 \
	VPORD      Z14, Z0, K1, Z0 \
	KXNORW     K2, K2, K2 \
	VPGATHERDD (R8)(Z0*4), K2, Z1 \
	KMOVQ      (74+8*i)(SI), K3 \
	VPSUBB     Z1, Z15, K3, Z1 \
	VMOVDQU8   Z1, (64*i)(DI)

// func q8decodeIQ3SAVX512(w *byte, blocks int, grid *uint32, out *int8, m *int16, dw *float32)
// q8decodeIQ3SAVX2's output: one group per block, the grid bytes with the
// signs applied, 1+2*scale per sub-block, and d eight times.
TEXT ·q8decodeIQ3SAVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ grid+16(FP), R8
	MOVQ out+24(FP), DI
	MOVQ m+32(FP), R9
	MOVQ dw+40(FP), R11
	MOVL    $256, AX
	VPBROADCASTD AX, Z14
	VPXORD  Z15, Z15, Z15
	TESTQ CX, CX
	JZ    iq3zddone

iq3zdloop:
	IQ3DEC512(0)
	IQ3DEC512(1)
	IQ3DEC512(2)
	IQ3DEC512(3)
	VPBROADCASTD (106)(SI), Y3
	VPSRLVD iq3sShifts<>(SB), Y3, Y3
	VPAND   iq3sNib<>(SB), Y3, Y3
	VPADDD  Y3, Y3, Y3
	VPOR    iq3sOnes<>(SB), Y3, Y3
	VPMOVDW Z3, Y3
	VMOVDQU X3, (R9)
	VPBROADCASTW (SI), X13
	VCVTPH2PS X13, Y13
	VMOVUPS Y13, (R11)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $16, R9
	ADDQ $32, R11
	DECQ CX
	JNZ  iq3zdloop

iq3zddone:
	VZEROUPPER
	RET

//go:build amd64 && !noasm

#include "textflag.h"

// The wide kernels: codeStepsGo, groupSumsGo, dotPairLanesGo and
// mulAddLanesGo at wideLanes (16) rows per ZMM register, a wideVec (64
// bytes) per row of lanes; the same products and sums in the same order
// as the 8-lane kernels above, K registers in place of the blends.

#include "lanes_amd64.h"

// DOTLANES16BY is DOTLANESBY for wideVec rows (m at DX, 64 bytes each;
// the frame's 512 bytes hold s_p): DOTLANESG in Z0-Z8.
#define ZEROZ(R) VPXORD R, R, R
#define DOTLANES16BY(LOAD, XB, XS) DOTLANESG(LOAD, XB, XS, 64, 6, ZEROZ, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8)

#define DOTLANES16 DOTLANES16BY(BCASTX, 4, 2)

// TRY16 is TRY in 16 lanes: Z3 the current level, Z14 the scale, Z2 H_jj,
// Z1 2·g_j; the best cost, step and level so far in Z4, Z5, Z6.
#define TRY16(OFF) \
	VBROADCASTSS wideconst<>+OFF(SB), Z7 \
	VSUBPS       Z3, Z7, Z9 \
	VMULPS       Z9, Z14, Z9 \
	VMULPS       Z2, Z9, Z10 \
	VSUBPS       Z1, Z10, Z10 \
	VMULPS       Z10, Z9, Z10 \
	VCMPPS       $1, Z4, Z10, K2 \
	VCMPPS       $4, Z3, Z7, K3 \
	KANDW        K3, K2, K2 \
	VMOVAPS      Z10, K2, Z4 \
	VMOVAPS      Z9, K2, Z5 \
	VMOVAPS      Z7, K2, Z6

// DECIDE16 is DECIDE in 16 lanes: Z0 the dot products, Z15 the damping,
// Z2 H_jj, Z14 the scale; errors in Z8, levels in Z3, the best step and
// level in Z5 and Z6, the lanes that move in K1.
#define DECIDE16 \
	VMOVUPS (R12), Z8 \
	VMULPS  Z8, Z15, Z1 \
	VADDPS  Z0, Z1, Z1 \
	VADDPS  Z1, Z1, Z1 \
	VMOVUPS (R13), Z3 \
	VPXORD  Z4, Z4, Z4 \
	VPXORD  Z5, Z5, Z5 \
	VMOVAPS Z3, Z6 \
	TRY16(0) \
	TRY16(4) \
	TRY16(8) \
	TRY16(12) \
	VPXORD  Z7, Z7, Z7 \
	VCMPPS  $1, Z7, Z4, K1

#define VLOADX16(A, R) VMOVUPS A, R

DATA wideconst<>+0(SB)/4, $0xbf800000 // -1
DATA wideconst<>+4(SB)/4, $0x00000000 // 0
DATA wideconst<>+8(SB)/4, $0x3f800000 // 1
DATA wideconst<>+12(SB)/4, $0x40000000 // 2
DATA wideconst<>+16(SB)/4, $0x80000000 // sign bit
GLOBL wideconst<>(SB), RODATA|NOPTR, $20

// func codeStepsAVX512(xt *float32, n int, r, e, lv *wideVec, sq *float32, cnt int, d *wideVec, lam float32) int
TEXT ·codeStepsAVX512(SB), $512-80
	MOVQ         xt+0(FP), AX
	MOVQ         n+8(FP), BX
	MOVQ         r+16(FP), DX
	MOVQ         e+24(FP), R12
	MOVQ         lv+32(FP), R13
	MOVQ         sq+40(FP), R14
	MOVQ         cnt+48(FP), R15
	MOVQ         d+56(FP), R8
	VBROADCASTSS lam+64(FP), Z15
	VMOVUPS      (R8), Z14
	XORQ         R8, R8 // lanes that moved
	MOVQ         BX, R9
	SHRQ         $5, R9

wcol:
	DOTLANES16
	VBROADCASTSS (R14), Z2
	VADDPS       Z15, Z2, Z2 // H_jj = lam + ‖x_j‖²
	DECIDE16
	VSUBPS       Z5, Z8, K1, Z8
	VMOVUPS      Z8, (R12)
	VMOVAPS      Z6, K1, Z3
	VMOVUPS      Z3, (R13)
	KMOVW        K1, CX
	ORQ          CX, R8
	TESTQ        CX, CX
	JZ           wnextcol
	VBROADCASTSS wideconst<>+16(SB), Z7
	VPXORD       Z7, Z5, Z5 // −step
	MOVQ         AX, SI
	MOVQ         DX, DI
	MOVQ         BX, CX

wrl:
	VBROADCASTSS (SI), Z7
	VMULPS       Z5, Z7, Z7
	VMOVUPS      (DI), Z9
	VADDPS       Z9, Z7, K1, Z9
	VMOVUPS      Z9, (DI)
	ADDQ         $4, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          wrl

wnextcol:
	LEAQ (AX)(BX*4), AX
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $4, R14
	DECQ R15
	JNZ  wcol

	MOVQ R8, ret+72(FP)
	VZEROUPPER
	RET

// func groupSumsAVX512(xt *float32, n int, r, e, lv, u *wideVec, cnt int, lam float32, num, l2 *wideVec)
// groupSumsAVX2 in 16 lanes (u unmasked for the same reason; num and l2
// masked by K1, the lanes whose level is not 0).
TEXT ·groupSumsAVX512(SB), $512-80
	MOVQ         xt+0(FP), AX
	MOVQ         n+8(FP), BX
	MOVQ         r+16(FP), DX
	MOVQ         e+24(FP), R12
	MOVQ         lv+32(FP), R13
	MOVQ         u+40(FP), R14
	MOVQ         cnt+48(FP), R15
	VBROADCASTSS lam+56(FP), Z15
	MOVQ         num+64(FP), R8
	VMOVUPS      (R8), Z13
	MOVQ         l2+72(FP), R8
	VMOVUPS      (R8), Z12
	MOVQ         BX, R9
	SHRQ         $5, R9

wgcol:
	VMOVUPS  (R13), Z14 // the levels
	VPXORD   Z8, Z8, Z8
	VCMPPS   $4, Z8, Z14, K1 // l != 0
	KORTESTW K1, K1
	JZ       wgnext
	MOVQ     AX, SI
	MOVQ     R14, DI
	MOVQ     BX, CX

wul:
	VBROADCASTSS (SI), Z7
	VMULPS       Z14, Z7, Z7
	VADDPS       (DI), Z7, Z7
	VMOVUPS      Z7, (DI)
	ADDQ         $4, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          wul
	DOTLANES16
	VMOVUPS      (R12), Z8
	VMULPS       Z8, Z15, Z8
	VADDPS       Z0, Z8, Z8  // g_j
	VMULPS       Z8, Z14, Z8 // l·g_j
	VADDPS       Z8, Z13, K1, Z13
	VMULPS       Z14, Z14, Z8 // l·l
	VADDPS       Z8, Z12, K1, Z12

wgnext:
	LEAQ (AX)(BX*4), AX
	ADDQ $64, R12
	ADDQ $64, R13
	DECQ R15
	JNZ  wgcol

	MOVQ    num+64(FP), R8
	VMOVUPS Z13, (R8)
	MOVQ    l2+72(FP), R8
	VMOVUPS Z12, (R8)
	VZEROUPPER
	RET

// func dotPairLanesAVX512(a, b *wideVec, n int, out *wideVec)
TEXT ·dotPairLanesAVX512(SB), $512-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), DX
	MOVQ n+16(FP), BX
	MOVQ BX, R9
	SHRQ $5, R9
	DOTLANES16BY(VLOADX16, 64, 6)
	MOVQ    out+24(FP), R8
	VMOVUPS Z0, (R8)
	VZEROUPPER
	RET

// func mulAddLanesAVX512(m *wideVec, a *wideVec, mask *wideMask, x *wideVec, n int)
TEXT ·mulAddLanesAVX512(SB), NOSPLIT, $0-40
	MOVQ    m+0(FP), DI
	MOVQ    a+8(FP), AX
	MOVQ    mask+16(FP), BX
	MOVQ    x+24(FP), SI
	MOVQ    n+32(FP), CX
	VMOVUPS (AX), Z1
	VMOVUPS (BX), Z2
	VPTESTMD Z2, Z2, K1

wmal:
	VMULPS  (SI), Z1, Z3
	VMOVUPS (DI), Z4
	VADDPS  Z4, Z3, K1, Z4
	VMOVUPS Z4, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     wmal
	VZEROUPPER
	RET

// func carryBlockAVX512(et *wideVec, cnt int, cp *float32, n int, z *wideVec, xt *float32, kcnt int, dots *wideVec)
// carryBlockOf in 16 lanes: for each of the cnt columns, z += e·cp_jj
// (cp_jj n values at cp + jj·n) in the lanes whose error is not 0 (K1),
// then dots[k] = DOTLANES16 of column k of xt with z, for k < kcnt.
TEXT ·carryBlockAVX512(SB), $512-64
	MOVQ et+0(FP), R12
	MOVQ cnt+8(FP), R13
	MOVQ cp+16(FP), R14
	MOVQ n+24(FP), BX
	MOVQ z+32(FP), DX
	MOVQ BX, R9
	SHRQ $5, R9

cjj:
	VMOVUPS  (R12), Z12
	VPXORD   Z13, Z13, Z13
	VCMPPS   $4, Z13, Z12, K1 // e != 0
	KORTESTW K1, K1
	JZ       cnext
	MOVQ     R14, SI
	MOVQ     DX, DI
	MOVQ     BX, CX

cax:
	VBROADCASTSS (SI), Z7
	VMULPS       Z12, Z7, Z7
	VMOVUPS      (DI), Z9
	VADDPS       Z9, Z7, K1, Z9
	VMOVUPS      Z9, (DI)
	ADDQ         $4, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          cax

cnext:
	ADDQ $64, R12
	LEAQ (R14)(BX*4), R14
	DECQ R13
	JNZ  cjj

	MOVQ xt+40(FP), AX
	MOVQ kcnt+48(FP), R15
	MOVQ dots+56(FP), R8

cdot:
	DOTLANES16
	VMOVUPS Z0, (R8)
	ADDQ    $64, R8
	LEAQ    (AX)(BX*4), AX
	DECQ    R15
	JNZ     cdot
	VZEROUPPER
	RET

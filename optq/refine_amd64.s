//go:build amd64 && !noasm

#include "textflag.h"

// DOTLANES sets Y0 to dotLanesGo(x, m) for x at AX (n = BX values, R9 =
// n/32 whole chunks) and m at DX. One chunk (32 <= n < 64, the common
// case) runs unrolled in registers (Y0-Y8); no chunk gives the fold of
// zeros, +0; more run position p's 4 accumulators over the chunks, their
// sum s_p kept in the frame's 256 bytes, then the fold. The tail follows.
// It uses SI, DI, CX, R10, R11 and Y0-Y8 (labels are the function's: one
// expansion per function).
#define DOTLANES \
	CMPQ   R9, $1 \
	JEQ    onechunk \
	VXORPS Y0, Y0, Y0 \
	TESTQ  R9, R9 \
	JZ     chunksdone \
	XORQ R10, R10 \
ploop: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	LEAQ   (AX)(R10*4), SI \
	MOVQ   R10, DI \
	SHLQ   $5, DI \
	ADDQ   DX, DI \
	MOVQ   R9, CX \
chunk: \
	VBROADCASTSS 0(SI), Y4 \
	VMULPS       0(DI), Y4, Y4 \
	VADDPS       Y4, Y0, Y0 \
	VBROADCASTSS 32(SI), Y5 \
	VMULPS       256(DI), Y5, Y5 \
	VADDPS       Y5, Y1, Y1 \
	VBROADCASTSS 64(SI), Y6 \
	VMULPS       512(DI), Y6, Y6 \
	VADDPS       Y6, Y2, Y2 \
	VBROADCASTSS 96(SI), Y7 \
	VMULPS       768(DI), Y7, Y7 \
	VADDPS       Y7, Y3, Y3 \
	ADDQ         $128, SI \
	ADDQ         $1024, DI \
	DECQ         CX \
	JNZ          chunk \
	VADDPS  Y1, Y0, Y0 \
	VADDPS  Y3, Y2, Y2 \
	VADDPS  Y2, Y0, Y0 \
	MOVQ    R10, R11 \
	SHLQ    $5, R11 \
	VMOVUPS Y0, (SP)(R11*1) \
	INCQ    R10 \
	CMPQ    R10, $8 \
	JLT     ploop \
	VMOVUPS 0(SP), Y0 \
	VADDPS  128(SP), Y0, Y0 \
	VMOVUPS 64(SP), Y1 \
	VADDPS  192(SP), Y1, Y1 \
	VADDPS  Y1, Y0, Y0 \
	VMOVUPS 32(SP), Y2 \
	VADDPS  160(SP), Y2, Y2 \
	VMOVUPS 96(SP), Y3 \
	VADDPS  224(SP), Y3, Y3 \
	VADDPS  Y3, Y2, Y2 \
	VADDPS  Y2, Y0, Y0 \
	JMP     chunksdone \
onechunk: \
	VXORPS Y0, Y0, Y0 \
	SPOS(0, Y5) \
	SPOS(4, Y6) \
	VADDPS Y6, Y5, Y5 \
	SPOS(2, Y6) \
	SPOS(6, Y7) \
	VADDPS Y7, Y6, Y6 \
	VADDPS Y6, Y5, Y5 \
	SPOS(1, Y6) \
	SPOS(5, Y7) \
	VADDPS Y7, Y6, Y6 \
	SPOS(3, Y7) \
	SPOS(7, Y8) \
	VADDPS Y8, Y7, Y7 \
	VADDPS Y7, Y6, Y6 \
	VADDPS Y6, Y5, Y0 \
chunksdone: \
	MOVQ R9, CX \
	SHLQ $5, CX \
	CMPQ CX, BX \
	JGE  taildone \
	LEAQ (AX)(CX*4), SI \
	MOVQ CX, DI \
	SHLQ $5, DI \
	ADDQ DX, DI \
tail: \
	VBROADCASTSS (SI), Y4 \
	VMULPS       (DI), Y4, Y4 \
	VADDPS       Y4, Y0, Y0 \
	ADDQ         $4, SI \
	ADDQ         $32, DI \
	INCQ         CX \
	CMPQ         CX, BX \
	JLT          tail \
taildone:

// SPOS sets S to s_p of the first chunk, (a0+a1)+(a2+a3) with a_q = 0 +
// x[8q+p]·m[8q+p] (Y0 holds 0; Y1-Y4 are scratch).
#define SPOS(p, S) \
	VBROADCASTSS (4*p)(AX), Y1 \
	VMULPS       (32*p)(DX), Y1, Y1 \
	VADDPS       Y1, Y0, Y1 \
	VBROADCASTSS (4*(8+p))(AX), Y2 \
	VMULPS       (32*(8+p))(DX), Y2, Y2 \
	VADDPS       Y2, Y0, Y2 \
	VBROADCASTSS (4*(16+p))(AX), Y3 \
	VMULPS       (32*(16+p))(DX), Y3, Y3 \
	VADDPS       Y3, Y0, Y3 \
	VBROADCASTSS (4*(24+p))(AX), Y4 \
	VMULPS       (32*(24+p))(DX), Y4, Y4 \
	VADDPS       Y4, Y0, Y4 \
	VADDPS       Y2, Y1, Y1 \
	VADDPS       Y4, Y3, Y3 \
	VADDPS       Y3, Y1, S

// func dotLanesAVX2(x *float32, n int, m *laneVec, out *laneVec)
TEXT ·dotLanesAVX2(SB), NOSPLIT, $256-32
	MOVQ x+0(FP), AX
	MOVQ n+8(FP), BX
	MOVQ m+16(FP), DX
	MOVQ BX, R9
	SHRQ $5, R9
	DOTLANES
	MOVQ    out+24(FP), R8
	VMOVUPS Y0, (R8)
	VZEROUPPER
	RET

DATA lanesconst<>+0(SB)/4, $0xbf800000 // -1
DATA lanesconst<>+4(SB)/4, $0x00000000 // 0
DATA lanesconst<>+8(SB)/4, $0x3f800000 // 1
DATA lanesconst<>+12(SB)/4, $0x40000000 // 2
DATA lanesconst<>+16(SB)/4, $0x80000000 // sign bit
GLOBL lanesconst<>(SB), RODATA|NOPTR, $20

// TRY is codeStepsGo's candidate level nl (broadcast from OFF): Y3 the
// current level, Y14 the scale, Y2 H_jj, Y1 2·g_j; the best cost, step and
// level so far in Y4, Y5, Y6.
#define TRY(OFF) \
	VBROADCASTSS lanesconst<>+OFF(SB), Y7 \
	VSUBPS       Y3, Y7, Y9 \
	VMULPS       Y9, Y14, Y9 \
	VMULPS       Y2, Y9, Y10 \
	VSUBPS       Y1, Y10, Y10 \
	VMULPS       Y10, Y9, Y10 \
	VCMPPS       $1, Y4, Y10, Y11 \
	VCMPPS       $4, Y3, Y7, Y12 \
	VANDPS       Y12, Y11, Y11 \
	VBLENDVPS    Y11, Y10, Y4, Y4 \
	VBLENDVPS    Y11, Y9, Y5, Y5 \
	VBLENDVPS    Y11, Y7, Y6, Y6

// func codeStepsAVX2(xt *float32, n int, r, e, lv *laneVec, sq *float32, cnt int, d *laneVec, lam float32) int
TEXT ·codeStepsAVX2(SB), NOSPLIT, $256-80
	MOVQ         xt+0(FP), AX
	MOVQ         n+8(FP), BX
	MOVQ         r+16(FP), DX
	MOVQ         e+24(FP), R12
	MOVQ         lv+32(FP), R13
	MOVQ         sq+40(FP), R14
	MOVQ         cnt+48(FP), R15
	MOVQ         d+56(FP), R8
	VBROADCASTSS lam+64(FP), Y15
	VMOVUPS      (R8), Y14
	VXORPS       Y13, Y13, Y13 // lanes that moved
	MOVQ         BX, R9
	SHRQ         $5, R9

col:
	DOTLANES
	VMOVUPS      (R12), Y8      // e_j
	VMULPS       Y8, Y15, Y1
	VADDPS       Y0, Y1, Y1     // g_j = lam·e_j + x_jᵀr
	VADDPS       Y1, Y1, Y1     // 2·g_j
	VBROADCASTSS (R14), Y2
	VADDPS       Y15, Y2, Y2    // H_jj = lam + ‖x_j‖²
	VMOVUPS      (R13), Y3      // the level
	VXORPS       Y4, Y4, Y4
	VXORPS       Y5, Y5, Y5
	VMOVAPS      Y3, Y6
	TRY(0)
	TRY(4)
	TRY(8)
	TRY(12)
	VXORPS       Y7, Y7, Y7
	VCMPPS       $1, Y7, Y4, Y11 // moved: best cost < 0
	VSUBPS       Y5, Y8, Y9
	VBLENDVPS    Y11, Y9, Y8, Y8
	VMOVUPS      Y8, (R12)
	VBLENDVPS    Y11, Y6, Y3, Y3
	VMOVUPS      Y3, (R13)
	VORPS        Y11, Y13, Y13
	VMOVMSKPS    Y11, CX
	TESTL        CX, CX
	JZ           next
	VBROADCASTSS lanesconst<>+16(SB), Y7
	VXORPS       Y7, Y5, Y5     // −step
	MOVQ         AX, SI
	MOVQ         DX, DI
	MOVQ         BX, CX

rloop:
	VBROADCASTSS (SI), Y7
	VMULPS       Y5, Y7, Y7
	VMOVUPS      (DI), Y9
	VADDPS       Y9, Y7, Y7
	VBLENDVPS    Y11, Y7, Y9, Y9
	VMOVUPS      Y9, (DI)
	ADDQ         $4, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          rloop

next:
	LEAQ (AX)(BX*4), AX
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $4, R14
	DECQ R15
	JNZ  col

	VMOVMSKPS Y13, AX
	MOVQ      AX, ret+72(FP)
	VZEROUPPER
	RET

// func axpyLanesAVX2(m *laneVec, a *laneVec, mask *laneMask, x *float32, n int)
// m[t][l] += a[l]*x[t] (product rounded, then the add) where mask[l] is set.
TEXT ·axpyLanesAVX2(SB), NOSPLIT, $0-40
	MOVQ    m+0(FP), DI
	MOVQ    a+8(FP), AX
	MOVQ    mask+16(FP), BX
	MOVQ    x+24(FP), SI
	MOVQ    n+32(FP), CX
	VMOVUPS (AX), Y1
	VMOVUPS (BX), Y2
	TESTQ   CX, CX
	JZ      axdone

axloop:
	VBROADCASTSS (SI), Y3
	VMULPS       Y1, Y3, Y3
	VMOVUPS      (DI), Y4
	VADDPS       Y4, Y3, Y3
	VBLENDVPS    Y2, Y3, Y4, Y4
	VMOVUPS      Y4, (DI)
	ADDQ         $4, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          axloop

axdone:
	VZEROUPPER
	RET

// func groupSumsAVX2(xt *float32, n int, r, e, lv, u *laneVec, cnt int, lam float32, num, l2 *laneVec)
// groupSumsGo: for the columns whose level is not 0 in a lane, u += l·x_j,
// num += l·(lam·e_j + x_jᵀr), l2 += l·l, each in column order. u takes
// every lane's term unmasked: a lane with l = 0 adds 0·x_j = ±0 (x_j is
// finite), which leaves any u but −0 as it is, and u starts at +0 and
// cannot become −0 by additions (a sum is −0 only when both terms are).
TEXT ·groupSumsAVX2(SB), NOSPLIT, $256-80
	MOVQ         xt+0(FP), AX
	MOVQ         n+8(FP), BX
	MOVQ         r+16(FP), DX
	MOVQ         e+24(FP), R12
	MOVQ         lv+32(FP), R13
	MOVQ         u+40(FP), R14
	MOVQ         cnt+48(FP), R15
	VBROADCASTSS lam+56(FP), Y15
	MOVQ         num+64(FP), R8
	VMOVUPS      (R8), Y13
	MOVQ         l2+72(FP), R8
	VMOVUPS      (R8), Y12
	MOVQ         BX, R9
	SHRQ         $5, R9

gcol:
	VMOVUPS   (R13), Y14 // the levels
	VXORPS    Y8, Y8, Y8
	VCMPPS    $4, Y8, Y14, Y11 // l != 0
	VMOVMSKPS Y11, CX
	TESTL     CX, CX
	JZ        gnext
	MOVQ      AX, SI
	MOVQ      R14, DI
	MOVQ      BX, CX

uloop:
	VBROADCASTSS (SI), Y7
	VMULPS       Y14, Y7, Y7
	VADDPS       (DI), Y7, Y7
	VMOVUPS      Y7, (DI)
	ADDQ         $4, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          uloop
	DOTLANES
	VMOVUPS      (R12), Y8
	VMULPS       Y8, Y15, Y8
	VADDPS       Y0, Y8, Y8   // g_j
	VMULPS       Y8, Y14, Y8  // l·g_j
	VADDPS       Y8, Y13, Y8
	VBLENDVPS    Y11, Y8, Y13, Y13
	VMULPS       Y14, Y14, Y8 // l·l
	VADDPS       Y8, Y12, Y8
	VBLENDVPS    Y11, Y8, Y12, Y12

gnext:
	LEAQ (AX)(BX*4), AX
	ADDQ $32, R12
	ADDQ $32, R13
	DECQ R15
	JNZ  gcol

	MOVQ    num+64(FP), R8
	VMOVUPS Y13, (R8)
	MOVQ    l2+72(FP), R8
	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

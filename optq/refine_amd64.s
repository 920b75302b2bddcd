//go:build amd64 && !noasm

#include "textflag.h"

#include "lanes_amd64.h"

// DOTLANES sets Y0 to dotLanesGo(x, m): DOTLANESG at 8 lanes (laneVec rows
// of 32 bytes, the frame's 256 bytes for s_p).
#define DOTLANES DOTLANESBY(BCASTX, 4, 2)

// DOTLANESBY is DOTLANES with x's element i (XB = 1<<XS bytes each) loaded
// into the lanes by LOAD(address, register): BCASTX broadcasts a float32
// (dotLanes), VLOADX loads a laneVec (dotPairLanes, lane by lane).
#define VLOADX(A, R) VMOVUPS A, R
#define ZEROY(R) VXORPS R, R, R
#define DOTLANESBY(LOAD, XB, XS) DOTLANESG(LOAD, XB, XS, 32, 5, ZEROY, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8)

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

// DECIDE is descend's choice of level in every lane (codeStepsGo's):
// with Y0 the lanes' dot products x_jᵀr, R12 and R13 their errors and
// levels, Y2 H_jj, Y14 the scale and Y15 the damping lam, it takes the
// gradient g_j = lam·e_j + x_jᵀr, tries the levels in order (TRY) and
// leaves the errors in Y8, the levels in Y3, the best step and level in
// Y5 and Y6, and the lanes that move (best cost < 0) in Y11.
#define DECIDE \
	VMOVUPS (R12), Y8 \
	VMULPS  Y8, Y15, Y1 \
	VADDPS  Y0, Y1, Y1 \
	VADDPS  Y1, Y1, Y1 \
	VMOVUPS (R13), Y3 \
	VXORPS  Y4, Y4, Y4 \
	VXORPS  Y5, Y5, Y5 \
	VMOVAPS Y3, Y6 \
	TRY(0) \
	TRY(4) \
	TRY(8) \
	TRY(12) \
	VXORPS  Y7, Y7, Y7 \
	VCMPPS  $1, Y7, Y4, Y11

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
	VBROADCASTSS (R14), Y2
	VADDPS       Y15, Y2, Y2    // H_jj = lam + ‖x_j‖²
	DECIDE
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

// func mulAddLanesAVX2(m *laneVec, a *laneVec, mask *laneMask, x *laneVec, n int)
// m[t][l] += a[l]*x[t][l] (product rounded, then the add) where mask[l] is
// set.
TEXT ·mulAddLanesAVX2(SB), NOSPLIT, $0-40
	MOVQ    m+0(FP), DI
	MOVQ    a+8(FP), AX
	MOVQ    mask+16(FP), BX
	MOVQ    x+24(FP), SI
	MOVQ    n+32(FP), CX
	VMOVUPS (AX), Y1
	VMOVUPS (BX), Y2

maloop:
	VMULPS    (SI), Y1, Y3
	VMOVUPS   (DI), Y4
	VADDPS    Y4, Y3, Y3
	VBLENDVPS Y2, Y3, Y4, Y4
	VMOVUPS   Y4, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       maloop
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

// func wcodeStepsAVX2(blk *laneVec, n int, r, e, lv, sq *float32, cnt int, d, mu float32) int
// wcodeStepsGo over cnt blocks of rowLanes columns: the block's gradients
// from r (DOTLANES), every lane decided at once (TRY), then the first
// eligible lane that moves (R8: the eligible lanes) takes its step, r its
// column (kernels.Axpy's rounding, element by element), and the block's
// later lanes are computed again from the new r. The frame: DOTLANES' 256
// bytes, the steps and levels of the lanes (256, 288), moved (320).
TEXT ·wcodeStepsAVX2(SB), NOSPLIT, $328-72
	MOVQ         blk+0(FP), DX
	MOVQ         n+8(FP), BX
	MOVQ         r+16(FP), AX
	MOVQ         e+24(FP), R12
	MOVQ         lv+32(FP), R13
	MOVQ         sq+40(FP), R14
	MOVQ         cnt+48(FP), R15
	VBROADCASTSS d+56(FP), Y14
	VBROADCASTSS mu+60(FP), Y15
	MOVQ         $0, 320(SP)
	MOVQ         BX, R9
	SHRQ         $5, R9

wblk:
	MOVQ $0xff, R8

wagain:
	DOTLANES
	VMOVUPS   (R14), Y2
	VADDPS    Y15, Y2, Y2 // H_jj = mu + ‖sx_j‖²
	DECIDE
	VMOVMSKPS Y11, CX
	ANDQ      R8, CX
	JZ        wnext
	BSFQ      CX, CX          // the first eligible lane that moves
	VMOVUPS   Y5, 256(SP)
	VMOVUPS   Y6, 288(SP)
	VMOVSS    256(SP)(CX*4), X9
	VMOVSS    288(SP)(CX*4), X10
	VMOVSS    (R12)(CX*4), X11
	VSUBSS    X9, X11, X11
	VMOVSS    X11, (R12)(CX*4)
	VMOVSS    X10, (R13)(CX*4)
	VMOVSS    lanesconst<>+16(SB), X12
	VXORPS    X12, X9, X9     // −step
	LEAQ      (DX)(CX*4), SI
	MOVQ      AX, DI
	MOVQ      BX, R10

wrloop:
	VMOVSS (SI), X11
	VMULSS X9, X11, X11
	VADDSS (DI), X11, X11
	VMOVSS X11, (DI)
	ADDQ   $32, SI
	ADDQ   $4, DI
	DECQ   R10
	JNZ    wrloop
	MOVQ   $1, 320(SP)
	INCQ   CX
	MOVQ   $0xff, R8
	SHLQ   CX, R8
	ANDQ   $0xff, R8 // the lanes after it
	JNZ    wagain

wnext:
	MOVQ BX, CX
	SHLQ $5, CX
	ADDQ CX, DX
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, R14
	DECQ R15
	JNZ  wblk

	MOVQ 320(SP), AX
	MOVQ AX, ret+64(FP)
	VZEROUPPER
	RET

// func wgroupSumsAVX2(lv, e *float32, cnt int, mu float32, np int, off *int32, coef *float32, num, l2 *float32) int
// wgroupSumsGo without branches: every column's offset and level are
// written at off[k], coef[k], and k moves on only for a level not 0; num
// takes (l·mu)·e_j masked to +0 for a level 0 and l2 takes l·l (+0 for a
// level 0). Adding +0 leaves a sum as it is unless the sum is −0, and
// neither is: the caller's start at +0, and a sum is −0 only when both of
// its terms are.
TEXT ·wgroupSumsAVX2(SB), NOSPLIT, $0-80
	MOVQ         lv+0(FP), SI
	MOVQ         e+8(FP), DI
	MOVQ         cnt+16(FP), CX
	VMOVSS       mu+24(FP), X5
	MOVQ         np+32(FP), R8
	MOVQ         off+40(FP), R9
	MOVQ         coef+48(FP), R10
	MOVQ         num+56(FP), R11
	VMOVSS       (R11), X0
	MOVQ         l2+64(FP), R12
	VMOVSS       (R12), X1
	VXORPS       X6, X6, X6
	XORQ         AX, AX // k
	XORQ         DX, DX // the column's offset
	XORQ         BX, BX

gsloop:
	VMOVSS   (SI), X2
	MOVL     DX, (R9)(AX*4)
	VMOVSS   X2, (R10)(AX*4)
	VCMPSS   $4, X6, X2, X3 // l != 0
	VMULSS   X5, X2, X4     // l·mu
	VMULSS   (DI), X4, X4   // ·e_j
	VANDPS   X3, X4, X4
	VADDSS   X4, X0, X0
	VMULSS   X2, X2, X4
	VADDSS   X4, X1, X1
	VMOVD    X3, BX
	ANDL     $1, BX
	ADDQ     BX, AX
	ADDQ     $4, SI
	ADDQ     $4, DI
	ADDQ     R8, DX
	DECQ     CX
	JNZ      gsloop

	VMOVSS X0, (R11)
	VMOVSS X1, (R12)
	MOVQ   AX, ret+72(FP)
	RET

// func wgroupUAVX2(sx *float32, off *int32, coef *float32, cnt int, u *float32, np int)
// u[t] = Σ_i coef[i]·sx[off[i]+t] in order i from 0, for t < np (a
// multiple of 8): 32 positions at a time in four accumulators, then 8.
TEXT ·wgroupUAVX2(SB), NOSPLIT, $0-48
	MOVQ sx+0(FP), SI
	MOVQ off+8(FP), R8
	MOVQ coef+16(FP), R9
	MOVQ cnt+24(FP), R10
	MOVQ u+32(FP), DI
	MOVQ np+40(FP), R11
	XORQ DX, DX

gu4:
	MOVQ   R11, AX
	SUBQ   DX, AX
	CMPQ   AX, $32
	JLT    gu1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   CX, CX
	TESTQ  R10, R10
	JZ     gu4store

gu4col:
	MOVLQSX      (R8)(CX*4), AX
	ADDQ         DX, AX
	VBROADCASTSS (R9)(CX*4), Y4
	VMULPS       (SI)(AX*4), Y4, Y5
	VADDPS       Y5, Y0, Y0
	VMULPS       32(SI)(AX*4), Y4, Y6
	VADDPS       Y6, Y1, Y1
	VMULPS       64(SI)(AX*4), Y4, Y7
	VADDPS       Y7, Y2, Y2
	VMULPS       96(SI)(AX*4), Y4, Y8
	VADDPS       Y8, Y3, Y3
	INCQ         CX
	CMPQ         CX, R10
	JLT          gu4col

gu4store:
	VMOVUPS Y0, (DI)(DX*4)
	VMOVUPS Y1, 32(DI)(DX*4)
	VMOVUPS Y2, 64(DI)(DX*4)
	VMOVUPS Y3, 96(DI)(DX*4)
	ADDQ    $32, DX
	JMP     gu4

gu1:
	CMPQ   DX, R11
	JGE    gudone
	VXORPS Y0, Y0, Y0
	XORQ   CX, CX
	TESTQ  R10, R10
	JZ     gu1store

gu1col:
	MOVLQSX      (R8)(CX*4), AX
	ADDQ         DX, AX
	VBROADCASTSS (R9)(CX*4), Y4
	VMULPS       (SI)(AX*4), Y4, Y5
	VADDPS       Y5, Y0, Y0
	INCQ         CX
	CMPQ         CX, R10
	JLT          gu1col

gu1store:
	VMOVUPS Y0, (DI)(DX*4)
	ADDQ    $8, DX
	JMP     gu1

gudone:
	VZEROUPPER
	RET

// func dotPairLanesAVX2(a, b *laneVec, n int, out *laneVec)
// dotPairLanesGo: DOTLANES with a's lanes in place of the broadcast x.
TEXT ·dotPairLanesAVX2(SB), NOSPLIT, $256-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), DX
	MOVQ n+16(FP), BX
	MOVQ BX, R9
	SHRQ $5, R9
	DOTLANESBY(VLOADX, 32, 5)
	MOVQ    out+24(FP), R8
	VMOVUPS Y0, (R8)
	VZEROUPPER
	RET

// func scaleLanesAVX2(m *laneVec, s *float32, n, cnt int, dst *laneVec)
// dst[k·n+t] = s[t]·m[k·n+t] for t < n, k < cnt.
TEXT ·scaleLanesAVX2(SB), NOSPLIT, $0-40
	MOVQ m+0(FP), SI
	MOVQ s+8(FP), R8
	MOVQ n+16(FP), BX
	MOVQ cnt+24(FP), R9
	MOVQ dst+32(FP), DI

slblk:
	XORQ DX, DX

slrow:
	VBROADCASTSS (R8)(DX*4), Y0
	VMULPS       (SI), Y0, Y1
	VMOVUPS      Y1, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	INCQ         DX
	CMPQ         DX, BX
	JLT          slrow
	DECQ         R9
	JNZ          slblk
	VZEROUPPER
	RET

// func scaleColsAVX2(xt, s *float32, n, np, cols int, dst *float32)
// dst[j·np+t] = s[t]·xt[j·n+t] for t < n, 0 for n <= t < np.
TEXT ·scaleColsAVX2(SB), NOSPLIT, $0-48
	MOVQ   xt+0(FP), SI
	MOVQ   s+8(FP), R8
	MOVQ   n+16(FP), BX
	MOVQ   np+24(FP), R9
	MOVQ   cols+32(FP), R10
	MOVQ   dst+40(FP), DI
	VXORPS X2, X2, X2

sccol:
	XORQ DX, DX

sc8:
	LEAQ    8(DX), AX
	CMPQ    AX, BX
	JGT     sc1
	VMOVUPS (SI)(DX*4), Y1
	VMULPS  (R8)(DX*4), Y1, Y1
	VMOVUPS Y1, (DI)(DX*4)
	MOVQ    AX, DX
	JMP     sc8

sc1:
	CMPQ   DX, BX
	JGE    scpad
	VMOVSS (SI)(DX*4), X1
	VMULSS (R8)(DX*4), X1, X1
	VMOVSS X1, (DI)(DX*4)
	INCQ   DX
	JMP    sc1

scpad:
	CMPQ   DX, R9
	JGE    scnext
	VMOVSS X2, (DI)(DX*4)
	INCQ   DX
	JMP    scpad

scnext:
	LEAQ (SI)(BX*4), SI
	LEAQ (DI)(R9*4), DI
	DECQ R10
	JNZ  sccol
	VZEROUPPER
	RET


//go:build amd64 && !noasm

#include "textflag.h"

// Eight lanes of each of swiglu.go's constants, in order: the sign bit,
// siluHi, siluLo, log2e, ln2Hi, ln2Lo, expP0 .. expP5, 1, 127 (int32) and
// +Inf.
#define K8(off, v) \
	DATA swk<>+(off+0)(SB)/4, v \
	DATA swk<>+(off+4)(SB)/4, v \
	DATA swk<>+(off+8)(SB)/4, v \
	DATA swk<>+(off+12)(SB)/4, v \
	DATA swk<>+(off+16)(SB)/4, v \
	DATA swk<>+(off+20)(SB)/4, v \
	DATA swk<>+(off+24)(SB)/4, v \
	DATA swk<>+(off+28)(SB)/4, v

K8(0, $0x80000000)
K8(32, $88.0)
K8(64, $-87.0)
K8(96, $1.44269504088896341)
K8(128, $0.693359375)
K8(160, $-2.12194440e-4)
K8(192, $1.9875691500e-4)
K8(224, $1.3981999507e-3)
K8(256, $8.3334519073e-3)
K8(288, $4.1665795894e-2)
K8(320, $1.6666665459e-1)
K8(352, $5.0000001201e-1)
K8(384, $1.0)
K8(416, $127)
K8(448, $0x7f800000)
GLOBL swk<>(SB), RODATA|NOPTR, $480

// EXPCORE sets Y4 = expCore(Y1) per lane (Y1 in [siluLo, siluHi]): n =
// round-to-even(t*log2e), r = (t - n*ln2Hi) - n*ln2Lo, z = r*r, the
// polynomial by Horner, y = (p*z + r) + 1, e = y * 2^n; Y2, Y3, Y5, Y6
// scratch; the constants in Y8 (127), Y9 (1), Y10 (ln2Lo), Y11 (ln2Hi),
// Y12 (log2e).
#define EXPCORE \
	VMULPS  Y12, Y1, Y2 \
	VROUNDPS $0, Y2, Y2 \
	VMULPS  Y11, Y2, Y3 \
	VSUBPS  Y3, Y1, Y3 \
	VMULPS  Y10, Y2, Y4 \
	VSUBPS  Y4, Y3, Y3 \
	VMULPS  Y3, Y3, Y5 \
	VMOVUPS swk<>+192(SB), Y4 \
	VMULPS  Y3, Y4, Y4 \
	VADDPS  swk<>+224(SB), Y4, Y4 \
	VMULPS  Y3, Y4, Y4 \
	VADDPS  swk<>+256(SB), Y4, Y4 \
	VMULPS  Y3, Y4, Y4 \
	VADDPS  swk<>+288(SB), Y4, Y4 \
	VMULPS  Y3, Y4, Y4 \
	VADDPS  swk<>+320(SB), Y4, Y4 \
	VMULPS  Y3, Y4, Y4 \
	VADDPS  swk<>+352(SB), Y4, Y4 \
	VMULPS  Y5, Y4, Y4 \
	VADDPS  Y3, Y4, Y4 \
	VADDPS  Y9, Y4, Y4 \
	VCVTPS2DQ Y2, Y6 \
	VPADDD  Y8, Y6, Y6 \
	VPSLLD  $23, Y6, Y6 \
	VMULPS  Y6, Y4, Y4

// LOADK loads the constants of EXPCORE and the clamp: Y14 (siluHi), Y13
// (siluLo).
#define LOADK \
	VMOVUPS swk<>+32(SB), Y14 \
	VMOVUPS swk<>+64(SB), Y13 \
	VMOVUPS swk<>+96(SB), Y12 \
	VMOVUPS swk<>+128(SB), Y11 \
	VMOVUPS swk<>+160(SB), Y10 \
	VMOVUPS swk<>+384(SB), Y9 \
	VMOVDQU swk<>+416(SB), Y8

// func swigluAVX2(h, u *float32, n int)
// Per lane, swigluGo's operations: over = t > siluHi (ordered: false for
// NaN), t = -g clamped (min with siluHi, then
// max with siluLo: a NaN t becomes the bound, as the Go comparisons make
// it), n = round-to-even(t*log2e), r = (t - n*ln2Hi) - n*ln2Lo, z = r*r,
// the polynomial by Horner, y = (p*z + r) + 1, e = y * 2^n (+Inf where
// over), then
// h = (g / (1 + e)) * u. Every product and sum rounded (no FMA).
TEXT ·swigluAVX2(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   swdone
	VMOVUPS swk<>+0(SB), Y15   // sign
	LOADK

swloop:
	VMOVUPS (DI), Y0             // g
	VXORPS  Y15, Y0, Y1          // t = -g
	VCMPPS  $0x1e, Y14, Y1, Y7   // over: t > hi (GT_OQ)
	VMINPS  Y14, Y1, Y1          // t < hi ? t : hi
	VMAXPS  Y13, Y1, Y1          // t > lo ? t : lo
	EXPCORE
	VBLENDVPS Y7, swk<>+448(SB), Y4, Y4 // +Inf where over
	VADDPS  Y9, Y4, Y4           // 1 + e
	VDIVPS  Y4, Y0, Y4           // g / (1 + e)
	VMULPS  (SI), Y4, Y4         // * u
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     swloop
	VZEROUPPER

swdone:
	RET

// func expAVX2(dst, x *float32, n int)
// Per lane, expF32: t = x clamped as in swigluAVX2, e = EXPCORE(t), then
// +Inf where x > siluHi, 0 where x < siluLo, x where x is NaN.
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   exdone
	LOADK

exloop:
	VMOVUPS (SI), Y0             // x
	VMINPS  Y14, Y0, Y1
	VMAXPS  Y13, Y1, Y1          // t
	EXPCORE
	VCMPPS  $0x1e, Y14, Y0, Y7   // x > hi (GT_OQ)
	VBLENDVPS Y7, swk<>+448(SB), Y4, Y4
	VCMPPS  $0x11, Y13, Y0, Y7   // x < lo (LT_OQ)
	VXORPS  Y15, Y15, Y15
	VBLENDVPS Y7, Y15, Y4, Y4
	VCMPPS  $3, Y0, Y0, Y7       // x unordered (NaN)
	VBLENDVPS Y7, Y0, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     exloop
	VZEROUPPER

exdone:
	RET

//go:build amd64 && !noasm

#include "textflag.h"

// REDUCE folds Y0..Y3 into X0[0] in the order of lanes.reduce (dot.go).
#define REDUCE \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	VZEROUPPER

#define ZERO4 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

// func dotF32AVX2(w, x *float32, n int) float32
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO4
	SHRQ $5, CX
	JZ   f32done

f32loop:
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMULPS  0(DI), Y4, Y4
	VMULPS  32(DI), Y5, Y5
	VMULPS  64(DI), Y6, Y6
	VMULPS  96(DI), Y7, Y7
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     f32loop

f32done:
	REDUCE
	MOVSS X0, ret+24(FP)
	RET

// func dotBF16AVX2(w *byte, x *float32, n int) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO4
	SHRQ $5, CX
	JZ   bf16done

bf16loop:
	VPMOVZXWD 0(SI), Y4
	VPMOVZXWD 16(SI), Y5
	VPMOVZXWD 32(SI), Y6
	VPMOVZXWD 48(SI), Y7
	VPSLLD    $16, Y4, Y4
	VPSLLD    $16, Y5, Y5
	VPSLLD    $16, Y6, Y6
	VPSLLD    $16, Y7, Y7
	VMULPS    0(DI), Y4, Y4
	VMULPS    32(DI), Y5, Y5
	VMULPS    64(DI), Y6, Y6
	VMULPS    96(DI), Y7, Y7
	VADDPS    Y4, Y0, Y0
	VADDPS    Y5, Y1, Y1
	VADDPS    Y6, Y2, Y2
	VADDPS    Y7, Y3, Y3
	ADDQ      $64, SI
	ADDQ      $128, DI
	DECQ      CX
	JNZ       bf16loop

bf16done:
	REDUCE
	MOVSS X0, ret+24(FP)
	RET

// func dotF16AVX2(w *byte, x *float32, n int) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO4
	SHRQ $5, CX
	JZ   f16done

f16loop:
	VCVTPH2PS 0(SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VMULPS    0(DI), Y4, Y4
	VMULPS    32(DI), Y5, Y5
	VMULPS    64(DI), Y6, Y6
	VMULPS    96(DI), Y7, Y7
	VADDPS    Y4, Y0, Y0
	VADDPS    Y5, Y1, Y1
	VADDPS    Y6, Y2, Y2
	VADDPS    Y7, Y3, Y3
	ADDQ      $64, SI
	ADDQ      $128, DI
	DECQ      CX
	JNZ       f16loop

f16done:
	REDUCE
	MOVSS X0, ret+24(FP)
	RET

// func dotQ8AVX2(w *byte, x *float32, blocks int) float32
// Each 34-byte block: fp16 scale d, then 32 int8. The weight is q*d (exact),
// multiplied by x and added, as DotF32 on the decoded row would.
TEXT ·dotQ8AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ blocks+16(FP), CX
	ZERO4
	TESTQ CX, CX
	JZ    q8done

q8loop:
	VPBROADCASTW 0(SI), X8
	VCVTPH2PS    X8, Y8
	VPMOVSXBD    2(SI), Y4
	VPMOVSXBD    10(SI), Y5
	VPMOVSXBD    18(SI), Y6
	VPMOVSXBD    26(SI), Y7
	VCVTDQ2PS    Y4, Y4
	VCVTDQ2PS    Y5, Y5
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VMULPS       Y8, Y4, Y4
	VMULPS       Y8, Y5, Y5
	VMULPS       Y8, Y6, Y6
	VMULPS       Y8, Y7, Y7
	VMULPS       0(DI), Y4, Y4
	VMULPS       32(DI), Y5, Y5
	VMULPS       64(DI), Y6, Y6
	VMULPS       96(DI), Y7, Y7
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	ADDQ         $34, SI
	ADDQ         $128, DI
	DECQ         CX
	JNZ          q8loop

q8done:
	REDUCE
	MOVSS X0, ret+24(FP)
	RET

// Q2_0: code c of element j is (qs[j/4] >> 2*(j%4)) & 3, weight (c-1)*d.
// Eight elements come from two bytes: broadcast them, give lanes 0-3 the
// first byte and lanes 4-7 the second (VPSHUFB), shift each lane by
// 0,2,4,6 (VPSRLVD), and look c-1 up with VPERMPS, which reads only the low
// three bits of each index, so the table repeats {-1,0,1,2} twice instead of
// masking.
DATA q2shuf<>+0(SB)/8, $0x8080800080808000
DATA q2shuf<>+8(SB)/8, $0x8080800080808000
DATA q2shuf<>+16(SB)/8, $0x8080800180808001
DATA q2shuf<>+24(SB)/8, $0x8080800180808001
GLOBL q2shuf<>(SB), RODATA|NOPTR, $32

// The shifts are ·q2shifts (qdot_amd64.s).

// float32 -1, 0, 1, 2, -1, 0, 1, 2
DATA q2vals<>+0(SB)/8, $0x00000000bf800000
DATA q2vals<>+8(SB)/8, $0x400000003f800000
DATA q2vals<>+16(SB)/8, $0x00000000bf800000
DATA q2vals<>+24(SB)/8, $0x400000003f800000
GLOBL q2vals<>(SB), RODATA|NOPTR, $32

// Y12 holds the block's four weights (c-1)*d (exact products), so a lookup
// gives the decoded weight directly.
#define Q2GROUP(off, xoff, acc) \
	VPBROADCASTW off(SI), Y4 \
	VPSHUFB      Y10, Y4, Y4 \
	VPSRLVD      Y11, Y4, Y4 \
	VPERMPS      Y12, Y4, Y4 \
	VMULPS       xoff(DI), Y4, Y4 \
	VADDPS       Y4, acc, acc

// func dotQ2AVX2(w *byte, x *float32, blocks int) float32
TEXT ·dotQ2AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ blocks+16(FP), CX
	ZERO4
	VMOVDQU q2shuf<>(SB), Y10
	VMOVDQU ·q2shifts(SB), Y11
	VMOVUPS q2vals<>(SB), Y9
	TESTQ   CX, CX
	JZ      q2done

q2loop:
	VPBROADCASTW 0(SI), X8
	VCVTPH2PS    X8, Y8
	VMULPS       Y8, Y9, Y12
	Q2GROUP(2, 0, Y0)
	Q2GROUP(4, 32, Y1)
	Q2GROUP(6, 64, Y2)
	Q2GROUP(8, 96, Y3)
	Q2GROUP(10, 128, Y0)
	Q2GROUP(12, 160, Y1)
	Q2GROUP(14, 192, Y2)
	Q2GROUP(16, 224, Y3)
	ADDQ $18, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  q2loop

q2done:
	REDUCE
	MOVSS X0, ret+24(FP)
	RET

// IQ4_NL: element j < 16 is the low nibble of qs[j], element j+16 the high
// nibble; the weight is d * kvalues[nibble]. VPSHUFB maps 16 nibbles to
// their int8 codebook values at once.
DATA nibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibmask<>(SB), RODATA|NOPTR, $16

// func dotIQ4NLAVX2(w *byte, x *float32, blocks int, table *int8) float32
TEXT ·dotIQ4NLAVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ table+24(FP), AX
	ZERO4
	VMOVDQU (AX), X9
	VMOVDQU nibmask<>(SB), X10
	TESTQ   CX, CX
	JZ      iq4done

iq4loop:
	VPBROADCASTW 0(SI), X8
	VCVTPH2PS    X8, Y8
	VMOVDQU      2(SI), X4
	VPSRLW       $4, X4, X5
	VPAND        X10, X4, X4
	VPAND        X10, X5, X5
	VPSHUFB      X4, X9, X4
	VPSHUFB      X5, X9, X5
	VPMOVSXBD    X4, Y6
	VPSRLDQ      $8, X4, X4
	VPMOVSXBD    X4, Y7
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VMULPS       Y8, Y6, Y6
	VMULPS       Y8, Y7, Y7
	VMULPS       0(DI), Y6, Y6
	VMULPS       32(DI), Y7, Y7
	VADDPS       Y6, Y0, Y0
	VADDPS       Y7, Y1, Y1
	VPMOVSXBD    X5, Y6
	VPSRLDQ      $8, X5, X5
	VPMOVSXBD    X5, Y7
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VMULPS       Y8, Y6, Y6
	VMULPS       Y8, Y7, Y7
	VMULPS       64(DI), Y6, Y6
	VMULPS       96(DI), Y7, Y7
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	ADDQ         $18, SI
	ADDQ         $128, DI
	DECQ         CX
	JNZ          iq4loop

iq4done:
	REDUCE
	MOVSS X0, ret+32(FP)
	RET

// func axpyAVX2(y *float32, a float32, x *float32, n int)
// y[i] += a*x[i], product rounded then added (n a multiple of 8).
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	VBROADCASTSS a+8(FP), Y1
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	JZ           axpydone

axpyloop:
	VMULPS  0(SI), Y1, Y2
	VADDPS  0(DI), Y2, Y2
	VMOVUPS Y2, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     axpyloop

axpydone:
	VZEROUPPER
	RET

// REDUCEKEEP is REDUCE without the VZEROUPPER: Y8..Y11 survive it.
#define REDUCEKEEP \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0

// func dotF32x2AVX2(w0, w1, x *float32, n int, o0, o1 *float32)
// Two rows at once, each in dotF32AVX2's order exactly (its own Y0..Y3,
// or Y8..Y11, accumulators; the products w*x rounded, then added): two
// streams of weights in flight per thread, x loaded once for both.
TEXT ·dotF32x2AVX2(SB), NOSPLIT, $0-48
	MOVQ w0+0(FP), SI
	MOVQ w1+8(FP), DX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ o0+32(FP), AX
	MOVQ o1+40(FP), BX
	ZERO4
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	SHRQ $5, CX
	JZ   f32x2done

f32x2loop:
	VMOVUPS 0(DI), Y12
	VMOVUPS 32(DI), Y13
	VMOVUPS 64(DI), Y14
	VMOVUPS 96(DI), Y15
	VMULPS  0(SI), Y12, Y4
	VMULPS  32(SI), Y13, Y5
	VMULPS  64(SI), Y14, Y6
	VMULPS  96(SI), Y15, Y7
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	VMULPS  0(DX), Y12, Y4
	VMULPS  32(DX), Y13, Y5
	VMULPS  64(DX), Y14, Y6
	VMULPS  96(DX), Y15, Y7
	VADDPS  Y4, Y8, Y8
	VADDPS  Y5, Y9, Y9
	VADDPS  Y6, Y10, Y10
	VADDPS  Y7, Y11, Y11
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     f32x2loop

f32x2done:
	REDUCEKEEP
	MOVSS X0, 0(AX)
	VMOVAPS Y8, Y0
	VMOVAPS Y9, Y1
	VMOVAPS Y10, Y2
	VMOVAPS Y11, Y3
	REDUCE
	MOVSS X0, 0(BX)
	RET

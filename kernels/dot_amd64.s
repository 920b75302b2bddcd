//go:build amd64 && !purego

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

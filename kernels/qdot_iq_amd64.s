//go:build amd64 && !noasm

#include "textflag.h"
#include "qdot_amd64.h"

// DotQ8 on IQ4_XS and MXFP4 (qdot.go's order, AVX2): a group is 8
// sub-blocks of 32 nibble weights through a 16-entry value table, 136 bytes
// of weights (one IQ4_XS block, or 8 MXFP4 blocks), each sub-block's factor
// dw given as float32 (the Go side computes them). Registers as in
// qdot_amd64.s: SI weights, DI activation codes, DX activation scales, R9
// weight factors, CX groups left, R8 lanes; X14 the table, Y15 16-bit ones,
// Y12 the lane accumulators, Y4..Y11 the 8 sums.

#define IQPROLOGUE \
	MOVQ    w+0(FP), SI \
	MOVQ    xq+8(FP), DI \
	MOVQ    xd+16(FP), DX \
	MOVQ    dw+24(FP), R9 \
	MOVQ    groups+32(FP), CX \
	MOVQ    lanes+40(FP), R8 \
	MOVQ    table+48(FP), AX \
	VMOVDQU (AX), X14 \
	VMOVDQU q8ones16<>(SB), Y15 \
	VMOVUPS (R8), Y12

// IQACC: Y12 += float(Y0) * (8 factors at R9 * 8 activation scales at DX),
// then on to the next group.
#define IQACC \
	VCVTDQ2PS Y0, Y0 \
	VMOVUPS   (R9), Y13 \
	VMULPS    (DX), Y13, Y13 \
	VMULPS    Y13, Y0, Y0 \
	VADDPS    Y0, Y12, Y12 \
	ADDQ      $136, SI \
	ADDQ      $256, DI \
	ADDQ      $32, DX \
	ADDQ      $32, R9 \
	DECQ      CX

// func q8dotIQ4XSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)
// IQ4_XS: sub-block j's nibbles at 8+16*j in the block.
TEXT ·q8dotIQ4XSAVX2(SB), NOSPLIT, $0-56
	IQPROLOGUE

iq4xsloop:
	NIB32(8(SI))
	SUMSIGNED(0, Y4)
	NIB32(24(SI))
	SUMSIGNED(32, Y5)
	NIB32(40(SI))
	SUMSIGNED(64, Y6)
	NIB32(56(SI))
	SUMSIGNED(96, Y7)
	NIB32(72(SI))
	SUMSIGNED(128, Y8)
	NIB32(88(SI))
	SUMSIGNED(160, Y9)
	NIB32(104(SI))
	SUMSIGNED(192, Y10)
	NIB32(120(SI))
	SUMSIGNED(224, Y11)
	REDUCE8
	IQACC
	JNZ iq4xsloop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

// func q8dotMXFP4AVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)
// MXFP4: block j's nibbles at 1+17*j.
TEXT ·q8dotMXFP4AVX2(SB), NOSPLIT, $0-56
	IQPROLOGUE

mxfp4loop:
	NIB32(1(SI))
	SUMSIGNED(0, Y4)
	NIB32(18(SI))
	SUMSIGNED(32, Y5)
	NIB32(35(SI))
	SUMSIGNED(64, Y6)
	NIB32(52(SI))
	SUMSIGNED(96, Y7)
	NIB32(69(SI))
	SUMSIGNED(128, Y8)
	NIB32(86(SI))
	SUMSIGNED(160, Y9)
	NIB32(103(SI))
	SUMSIGNED(192, Y10)
	NIB32(120(SI))
	SUMSIGNED(224, Y11)
	REDUCE8
	IQACC
	JNZ mxfp4loop

	VMOVUPS Y12, (R8)
	VZEROUPPER
	RET

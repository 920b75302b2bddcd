// The lane dot product of the refinement kernels at either lane width
// (refine_amd64.s: 8 lanes in YMM registers, refine512_amd64.s: 16 in
// ZMM), written once: DOTLANESG sets V0 to dotLanesOf(x, m) for x at AX (n
// = BX values, R9 = n/32 whole chunks) and m at DX, rows of RB = 1<<RS
// bytes. One chunk (32 <= n < 64, the common case) runs unrolled in
// registers (V0-V8); no chunk gives the fold of zeros, +0; more run
// position p's 4 accumulators over the chunks, their sum s_p kept in the
// frame's 8·RB bytes, then the fold. The tail follows. x's element i (XB
// = 1<<XS bytes each) is loaded into the lanes by LOAD(address, register)
// and a register zeroed by ZERO(register). It uses SI, DI, CX, R10, R11
// and V0-V8 (labels are the function's: one expansion per function).
#define DOTLANESG(LOAD, XB, XS, RB, RS, ZERO, V0, V1, V2, V3, V4, V5, V6, V7, V8) \
	CMPQ   R9, $1 \
	JEQ    onechunk \
	ZERO(V0) \
	TESTQ  R9, R9 \
	JZ     chunksdone \
	XORQ   R10, R10 \
ploop: \
	ZERO(V0) \
	ZERO(V1) \
	ZERO(V2) \
	ZERO(V3) \
	MOVQ   R10, SI \
	SHLQ   $XS, SI \
	ADDQ   AX, SI \
	MOVQ   R10, DI \
	SHLQ   $RS, DI \
	ADDQ   DX, DI \
	MOVQ   R9, CX \
chunk: \
	LOAD(0(SI), V4) \
	VMULPS 0(DI), V4, V4 \
	VADDPS V4, V0, V0 \
	LOAD((8*XB)(SI), V5) \
	VMULPS (8*RB)(DI), V5, V5 \
	VADDPS V5, V1, V1 \
	LOAD((16*XB)(SI), V6) \
	VMULPS (16*RB)(DI), V6, V6 \
	VADDPS V6, V2, V2 \
	LOAD((24*XB)(SI), V7) \
	VMULPS (24*RB)(DI), V7, V7 \
	VADDPS V7, V3, V3 \
	ADDQ   $(32*XB), SI \
	ADDQ   $(32*RB), DI \
	DECQ   CX \
	JNZ    chunk \
	VADDPS  V1, V0, V0 \
	VADDPS  V3, V2, V2 \
	VADDPS  V2, V0, V0 \
	MOVQ    R10, R11 \
	SHLQ    $RS, R11 \
	VMOVUPS V0, (SP)(R11*1) \
	INCQ    R10 \
	CMPQ    R10, $8 \
	JLT     ploop \
	VMOVUPS 0(SP), V0 \
	VADDPS  (4*RB)(SP), V0, V0 \
	VMOVUPS (2*RB)(SP), V1 \
	VADDPS  (6*RB)(SP), V1, V1 \
	VADDPS  V1, V0, V0 \
	VMOVUPS (1*RB)(SP), V2 \
	VADDPS  (5*RB)(SP), V2, V2 \
	VMOVUPS (3*RB)(SP), V3 \
	VADDPS  (7*RB)(SP), V3, V3 \
	VADDPS  V3, V2, V2 \
	VADDPS  V2, V0, V0 \
	JMP     chunksdone \
onechunk: \
	ZERO(V0) \
	SPOSG(LOAD, XB, RB, 0, V5, V0, V1, V2, V3, V4) \
	SPOSG(LOAD, XB, RB, 4, V6, V0, V1, V2, V3, V4) \
	VADDPS V6, V5, V5 \
	SPOSG(LOAD, XB, RB, 2, V6, V0, V1, V2, V3, V4) \
	SPOSG(LOAD, XB, RB, 6, V7, V0, V1, V2, V3, V4) \
	VADDPS V7, V6, V6 \
	VADDPS V6, V5, V5 \
	SPOSG(LOAD, XB, RB, 1, V6, V0, V1, V2, V3, V4) \
	SPOSG(LOAD, XB, RB, 5, V7, V0, V1, V2, V3, V4) \
	VADDPS V7, V6, V6 \
	SPOSG(LOAD, XB, RB, 3, V7, V0, V1, V2, V3, V4) \
	SPOSG(LOAD, XB, RB, 7, V8, V0, V1, V2, V3, V4) \
	VADDPS V8, V7, V7 \
	VADDPS V7, V6, V6 \
	VADDPS V6, V5, V0 \
chunksdone: \
	MOVQ R9, CX \
	SHLQ $5, CX \
	CMPQ CX, BX \
	JGE  taildone \
	MOVQ CX, SI \
	SHLQ $XS, SI \
	ADDQ AX, SI \
	MOVQ CX, DI \
	SHLQ $RS, DI \
	ADDQ DX, DI \
tail: \
	LOAD((SI), V4) \
	VMULPS (DI), V4, V4 \
	VADDPS V4, V0, V0 \
	ADDQ   $XB, SI \
	ADDQ   $RB, DI \
	INCQ   CX \
	CMPQ   CX, BX \
	JLT    tail \
taildone:

// SPOSG sets S to s_p of the first chunk, (a0+a1)+(a2+a3) with a_q = 0 +
// x[8q+p]·m[8q+p] (Z holds 0; V1-V4 are scratch).
#define SPOSG(LOAD, XB, RB, p, S, Z, V1, V2, V3, V4) \
	LOAD((XB*p)(AX), V1) \
	VMULPS (RB*p)(DX), V1, V1 \
	VADDPS V1, Z, V1 \
	LOAD((XB*(8+p))(AX), V2) \
	VMULPS (RB*(8+p))(DX), V2, V2 \
	VADDPS V2, Z, V2 \
	LOAD((XB*(16+p))(AX), V3) \
	VMULPS (RB*(16+p))(DX), V3, V3 \
	VADDPS V3, Z, V3 \
	LOAD((XB*(24+p))(AX), V4) \
	VMULPS (RB*(24+p))(DX), V4, V4 \
	VADDPS V4, Z, V4 \
	VADDPS V2, V1, V1 \
	VADDPS V4, V3, V3 \
	VADDPS V3, V1, S

#define BCASTX(A, R) VBROADCASTSS A, R

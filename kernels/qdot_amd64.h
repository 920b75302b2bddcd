// Shared by the DotQ8 kernels' files (included by each; the constants are
// file-local, so each file has its own copy of them).

DATA q8ones16<>+0(SB)/8, $0x0001000100010001
DATA q8ones16<>+8(SB)/8, $0x0001000100010001
DATA q8ones16<>+16(SB)/8, $0x0001000100010001
DATA q8ones16<>+24(SB)/8, $0x0001000100010001
GLOBL q8ones16<>(SB), RODATA|NOPTR, $32

DATA q8nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q8nib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q8nib<>(SB), RODATA|NOPTR, $16




// SUMSIGNED: Yout = 8 int32 partial sums of w (Y0, signed bytes) times x
// (32 bytes at xoff(DI)).
#define SUMSIGNED(xoff, Yout) \
	VMOVDQU xoff(DI), Y1 \
	VPSIGNB Y0, Y0, Y2 \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Y2, Y2 \
	VPMADDWD Y15, Y2, Yout

// REDUCE8: Y4..Y11 (8 int32 each) to Y0 = their 8 totals, in order:
// REDUCE8A leaves Y4 = the totals of Y4..Y7's low 128-bit lanes, then of
// their high lanes, Y8 likewise of Y8..Y11's; REDUCE8B adds the lanes.
#define REDUCE8 \
	REDUCE8A \
	REDUCE8B

#define REDUCE8A \
	VPHADDD Y5, Y4, Y4 \
	VPHADDD Y7, Y6, Y6 \
	VPHADDD Y6, Y4, Y4 \
	VPHADDD Y9, Y8, Y8 \
	VPHADDD Y11, Y10, Y10 \
	VPHADDD Y10, Y8, Y8

#define REDUCE8B \
	VPERM2I128 $0x20, Y8, Y4, Y0 \
	VPERM2I128 $0x31, Y8, Y4, Y1 \
	VPADDD Y1, Y0, Y0

// NIB32(src): Y0 = the 32 weights of 16 bytes of nibbles at src (low
// nibbles are elements 0..15, high 16..31) through the 16-entry value
// table in X14.
#define NIB32(src) \
	VMOVDQU src, X0 \
	VPSRLW $4, X0, X1 \
	VPAND q8nib<>(SB), X0, X0 \
	VPAND q8nib<>(SB), X1, X1 \
	VPSHUFB X0, X14, X0 \
	VPSHUFB X1, X14, X1 \
	VINSERTI128 $1, X1, Y0, Y0

// Byte e of a lane picks byte e/8 of the broadcast sign word (lane-local:
// bytes 0,1 for elements 0..15, 2,3 for 16..31).
DATA q8sgnshuf<>+0(SB)/8, $0x0000000000000000
DATA q8sgnshuf<>+8(SB)/8, $0x0101010101010101
DATA q8sgnshuf<>+16(SB)/8, $0x0202020202020202
DATA q8sgnshuf<>+24(SB)/8, $0x0303030303030303
GLOBL q8sgnshuf<>(SB), RODATA|NOPTR, $32

DATA q8sgnbit<>+0(SB)/8, $0x8040201008040201
DATA q8sgnbit<>+8(SB)/8, $0x8040201008040201
DATA q8sgnbit<>+16(SB)/8, $0x8040201008040201
DATA q8sgnbit<>+24(SB)/8, $0x8040201008040201
GLOBL q8sgnbit<>(SB), RODATA|NOPTR, $32

// SCALES8B(base, st): X13 = the fp16 scales of 8 consecutive blocks st
// bytes apart from base; SCALES8(st) from SI.
#define SCALES8B(base, st) \
	MOVWLZX 0(base), AX \
	VMOVD   AX, X13 \
	VPINSRW $1, (st)(base), X13, X13 \
	VPINSRW $2, (2*st)(base), X13, X13 \
	VPINSRW $3, (3*st)(base), X13, X13 \
	VPINSRW $4, (4*st)(base), X13, X13 \
	VPINSRW $5, (5*st)(base), X13, X13 \
	VPINSRW $6, (6*st)(base), X13, X13 \
	VPINSRW $7, (7*st)(base), X13, X13

#define SCALES8(st) SCALES8B(SI, st)

// E8M0HALF(Y, Yones, Yt): the dwords e (0..255) of Y to quant.E8M0Half(e)'s
// float32 bits, 2^(e-128) exactly: (e-1) << 23 where e >= 2, else the
// subnormal (e+1) << 21 (0x00200000 << e); the signed maximum of the two
// picks it (for e >= 2 the first is the larger and positive, for e = 1 it
// is 0 and for e = 0 negative). Yones holds 1 in every dword; Yt is
// clobbered.
#define E8M0HALF(Y, Yones, Yt) \
	VPADDD  Yones, Y, Yt \
	VPSLLD  $21, Yt, Yt \
	VPSUBD  Yones, Y, Y \
	VPSLLD  $23, Y, Y \
	VPMAXSD Yt, Y, Y

// FOLDLANES(Yl, Xl, dst): dst = foldLanes' ((l0+l4)+(l2+l6)) +
// ((l1+l5)+(l3+l7)) of Yl's lanes (Xl its low half), the row kernels' one
// fold; X0 and X1 are clobbered.
#define FOLDLANES(Yl, Xl, dst) \
	VEXTRACTF128 $1, Yl, X1 \
	VADDPS X1, Xl, X0 \
	VPERMILPS $0x4e, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, dst

// FOLDROWS4(ooffarg, n, adv): the four-stream row kernels' folds: Y8..Y11's
// lanes (FOLDLANES) into out at R8 and ooff, 2ooff, 3ooff bytes after it
// (ooffarg the ooff argument), for the first n streams (n a register
// holding 1..4); adv the label after it. AX, R9, X0 and X1 are clobbered.
#define FOLDROWS4(ooffarg, n, adv) \
	MOVQ ooffarg, AX \
	FOLDLANES(Y8, X8, (R8)) \
	CMPQ n, $2 \
	JLT  adv \
	FOLDLANES(Y9, X9, (R8)(AX*1)) \
	CMPQ n, $3 \
	JLT  adv \
	FOLDLANES(Y10, X10, (R8)(AX*2)) \
	CMPQ n, $4 \
	JLT  adv \
	LEAQ (R8)(AX*2), R9 \
	FOLDLANES(Y11, X11, (R9)(AX*1))

// IQLACC(st): an IQ group's 8 sub-block sums (Y0) times their factors (Y1)
// and the activation scales (DX) into the lanes (Y12), then on to the next
// group, st bytes on (SI; DI the codes, DX the scales), its DECQ CX last.
#define IQLACC(st) \
	VCVTDQ2PS Y0, Y0 \
	VMULPS    (DX), Y1, Y1 \
	VMULPS    Y1, Y0, Y0 \
	VADDPS    Y0, Y12, Y12 \
	ADDQ      $(st), SI \
	ADDQ      $256, DI \
	ADDQ      $32, DX \
	DECQ      CX

// KROWSWALK(X, ROW, PF, bb, blockso, outo, boffo, ooffo, no, pfo, XSINIT,
// XSADV): the walk of the four-stream row kernels whose rows are whole
// blocks of bb bytes (the K-quants', IQ4_XS's; qdot_rows_k_amd64.s): rows
// A, each stride bytes from the last, outputs at out; with n (1..4)
// streams, as many rows B, C, D, boff, 2boff, 3boff bytes after each A
// (SI, R15, R11, R9), outputs ooff, 2ooff, 3ooff bytes after A's; each
// stream prefetched pf (R14) bytes ahead by PF(base) where pf is not 0.
// Per block X loads the activations (DI codes, DX scales), ROW(base, Yacc)
// adds a row's terms to Y8..Y11, and the lanes are folded (FOLDLANES) at
// each row's end. The arguments w, stride, rows, xq and xd come first; the
// offsets of blocks, out, boff, ooff, n and pf are the kernel's, XSINIT and
// XSADV set and step the activation sums (BX) where it takes them.
// Labels are the function's own.
#define KROWSWALK(X, ROW, PF, bb, blockso, outo, boffo, ooffo, no, pfo, XSINIT, XSADV) \
	MOVQ  w+0(FP), R13 \
	MOVQ  rows+16(FP), R10 \
	MOVQ  out+outo(FP), R8 \
	MOVQ  n+no(FP), R12 \
	MOVQ  pf+pfo(FP), R14 \
	TESTQ R10, R10 \
	JZ    kwdone \
kwrow: \
	MOVQ R13, SI \
	MOVQ boff+boffo(FP), AX \
	LEAQ (R13)(AX*1), R15 \
	LEAQ (R13)(AX*2), R11 \
	LEAQ (R15)(AX*2), R9 \
	MOVQ xq+24(FP), DI \
	MOVQ xd+32(FP), DX \
	XSINIT \
	MOVQ blocks+blockso(FP), CX \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
kwblock: \
	TESTQ R14, R14 \
	JZ    kwx \
	PF(SI) \
	CMPQ  R12, $2 \
	JLT   kwx \
	PF(R15) \
	CMPQ  R12, $3 \
	JLT   kwx \
	PF(R11) \
	CMPQ  R12, $4 \
	JLT   kwx \
	PF(R9) \
kwx: \
	X \
	ROW(SI, Y8) \
	CMPQ R12, $2 \
	JLT  kwnext \
	ROW(R15, Y9) \
	CMPQ R12, $3 \
	JLT  kwnext \
	ROW(R11, Y10) \
	CMPQ R12, $4 \
	JLT  kwnext \
	ROW(R9, Y11) \
kwnext: \
	ADDQ $(bb), SI \
	ADDQ $(bb), R15 \
	ADDQ $(bb), R11 \
	ADDQ $(bb), R9 \
	ADDQ $256, DI \
	ADDQ $32, DX \
	XSADV \
	DECQ CX \
	JNZ  kwblock \
	FOLDROWS4(ooff+ooffo(FP), R12, kwadv) \
kwadv: \
	ADDQ $4, R8 \
	ADDQ stride+8(FP), R13 \
	DECQ R10 \
	JNZ  kwrow \
kwdone: \
	VZEROUPPER \
	RET

// KXSINIT, KXSADV: KROWSWALK's activation sums (xs, at 40), for the
// kernels that take them; KNOXS: nothing, for those that do not.
#define KXSINIT MOVQ xs+40(FP), BX
#define KXSADV ADDQ $32, BX
#define KNOXS

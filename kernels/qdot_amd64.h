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

//go:build amd64 && !noasm

#include "textflag.h"
#include "prefetch_amd64.h"

// The K-quants' DotQ8 kernels (qdot.go's order, its K-quant terms;
// qdot_k.go is the portable definition). One loop iteration takes one
// 256-weight block, the 8 sub-blocks s of a group: the exact int32 sums
// A_s (and B_s for the types with mins) as a vector of 8 (lane j =
// sub-block j), converted to float32, times (d * dx_j) (and dmin * dx_j),
// the difference added to the 8 lane accumulators in Y12.
//
// Per-16 scales (Q2_K, Q3_K, Q6_K): each sub-block's product is reduced to
// 8 int32 partials, lanes 0..3 of its first 16 weights and 4..7 of its last
// 16; KREDUCE16 adds them to per-half sums, multiplies each by its scale
// and adds the halves. Per-32 scales (Q4_K, Q5_K): the sub-block sums times
// the scale. Signed codes (Q3_K, Q6_K) use VPSIGNB to move their signs onto
// the activations (never -128, see Q8Row), so VPMADDUBSW multiplies |q| by
// signed x exactly; unsigned codes go to VPMADDUBSW as they are (pair sums
// at most 2*63*127: no saturation).
//
// Registers: SI block, DI activation codes, DX activation scales, BX
// activation block sums, CX blocks left, R8 lanes; Y15 16-bit ones; Y12
// accumulators; Y4..Y11 the 8 sub-blocks' partials; Y2, Y3 scales (and
// mins); Y0, Y1, Y13, Y14 temporaries or per-type constants.

DATA kones16<>+0(SB)/8, $0x0001000100010001
DATA kones16<>+8(SB)/8, $0x0001000100010001
DATA kones16<>+16(SB)/8, $0x0001000100010001
DATA kones16<>+24(SB)/8, $0x0001000100010001
GLOBL kones16<>(SB), RODATA|NOPTR, $32

DATA kones8<>+0(SB)/8, $0x0101010101010101
DATA kones8<>+8(SB)/8, $0x0101010101010101
DATA kones8<>+16(SB)/8, $0x0101010101010101
DATA kones8<>+24(SB)/8, $0x0101010101010101
GLOBL kones8<>(SB), RODATA|NOPTR, $32

DATA k0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA k0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA k0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA k0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL k0f<>(SB), RODATA|NOPTR, $32

DATA k03<>+0(SB)/8, $0x0303030303030303
DATA k03<>+8(SB)/8, $0x0303030303030303
DATA k03<>+16(SB)/8, $0x0303030303030303
DATA k03<>+24(SB)/8, $0x0303030303030303
GLOBL k03<>(SB), RODATA|NOPTR, $32

DATA k04<>+0(SB)/8, $0x0404040404040404
DATA k04<>+8(SB)/8, $0x0404040404040404
DATA k04<>+16(SB)/8, $0x0404040404040404
DATA k04<>+24(SB)/8, $0x0404040404040404
GLOBL k04<>(SB), RODATA|NOPTR, $32

DATA k10<>+0(SB)/8, $0x1010101010101010
DATA k10<>+8(SB)/8, $0x1010101010101010
DATA k10<>+16(SB)/8, $0x1010101010101010
DATA k10<>+24(SB)/8, $0x1010101010101010
GLOBL k10<>(SB), RODATA|NOPTR, $32

DATA k20<>+0(SB)/8, $0x2020202020202020
DATA k20<>+8(SB)/8, $0x2020202020202020
DATA k20<>+16(SB)/8, $0x2020202020202020
DATA k20<>+24(SB)/8, $0x2020202020202020
GLOBL k20<>(SB), RODATA|NOPTR, $32

DATA k30<>+0(SB)/8, $0x3030303030303030
DATA k30<>+8(SB)/8, $0x3030303030303030
DATA k30<>+16(SB)/8, $0x3030303030303030
DATA k30<>+24(SB)/8, $0x3030303030303030
GLOBL k30<>(SB), RODATA|NOPTR, $32

// kperm16 orders 16 per-16 scales k as KREDUCE16 takes them: the first
// halves of sub-blocks 0..3 (k = 0, 2, 4, 6), their second halves (1, 3,
// 5, 7), then the same for sub-blocks 4..7.
DATA kperm16<>+0(SB)/8, $0x0705030106040200
DATA kperm16<>+8(SB)/8, $0x0f0d0b090e0c0a08
GLOBL kperm16<>(SB), RODATA|NOPTR, $16

// kq3shifts: Q3_K's high scale bits of scale k are bits 2*(k/4) of byte k%4.
DATA kq3shifts<>+0(SB)/8, $0x0000000200000000
DATA kq3shifts<>+8(SB)/8, $0x0000000600000004
GLOBL kq3shifts<>(SB), RODATA|NOPTR, $16

#define KPROLOGUE \
	MOVQ w+0(FP), SI \
	MOVQ xq+8(FP), DI \
	MOVQ xd+16(FP), DX \
	MOVQ xs+24(FP), BX \
	MOVQ blocks+32(FP), CX \
	MOVQ lanes+40(FP), R8 \
	VMOVDQU kones16<>(SB), Y15 \
	VMOVUPS (R8), Y12

#define KNEXT(bytes) \
	ADDQ $bytes, SI \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $32, BX \
	DECQ CX

#define KEPILOGUE \
	VMOVUPS Y12, (R8) \
	VZEROUPPER \
	RET

// KREDUCE32: Y4..Y11 (8 int32 each) to Y0 = their 8 totals, in order.
#define KREDUCE32 \
	VPHADDD Y5, Y4, Y4 \
	VPHADDD Y7, Y6, Y6 \
	VPHADDD Y6, Y4, Y4 \
	VPHADDD Y9, Y8, Y8 \
	VPHADDD Y11, Y10, Y10 \
	VPHADDD Y10, Y8, Y8 \
	VPERM2I128 $0x20, Y8, Y4, Y0 \
	VPERM2I128 $0x31, Y8, Y4, Y1 \
	VPADDD Y1, Y0, Y0

// KREDUCE16(P, Q): Y4..Y11 (per sub-block, lanes 0..3 its first half's
// partials, 4..7 its second's) to Y0 = per sub-block sum over its halves
// of scale times half sum, with the scales of sub-blocks 0..3 in P and of
// 4..7 in Q as KSCALES16 leaves them.
#define KREDUCE16(P, Q) \
	VPHADDD Y5, Y4, Y4 \
	VPHADDD Y7, Y6, Y6 \
	VPHADDD Y6, Y4, Y4 \
	VPHADDD Y9, Y8, Y8 \
	VPHADDD Y11, Y10, Y10 \
	VPHADDD Y10, Y8, Y8 \
	VPMULLD P, Y4, Y4 \
	VPMULLD Q, Y8, Y8 \
	VPERM2I128 $0x20, Y8, Y4, Y0 \
	VPERM2I128 $0x31, Y8, Y4, Y1 \
	VPADDD Y1, Y0, Y0

// KSCALES16(X, P, Q, EXT): the 16 scale bytes in X (k = 0..15) to int32 in
// KREDUCE16's order, extended by EXT (VPMOVSXBD or VPMOVZXBD).
#define KSCALES16(X, YP, YQ, EXT) \
	VPSHUFB kperm16<>(SB), X, X \
	EXT X, YP \
	VPSHUFD $0xee, X, X \
	EXT X, YQ

// KMULD(off, Y): Y = float32(Y) * (fp16 at off(SI) * the 8 activation scales).
#define KMULD(off, Y) \
	VCVTDQ2PS Y, Y \
	VPBROADCASTW off(SI), X13 \
	VCVTPH2PS X13, Y13 \
	VMULPS (DX), Y13, Y13 \
	VMULPS Y13, Y, Y

// KSIGNED(xoff, Yout): Yout = 8 int32 partials of the signed codes in Y0
// times the activations at xoff(DI) (Y1 clobbered).
#define KSIGNED(xoff, Yout) \
	VMOVDQU xoff(DI), Y1 \
	VPSIGNB Y0, Y0, Yout \
	VPSIGNB Y0, Y1, Y1 \
	VPMADDUBSW Y1, Yout, Yout \
	VPMADDWD Y15, Yout, Yout

// KUNSIGNED(xoff, Yout): the same for unsigned codes in Y0 (Y0 clobbered).
#define KUNSIGNED(xoff, Yout) \
	VPMADDUBSW xoff(DI), Y0, Y0 \
	VPMADDWD Y15, Y0, Yout

// ---- Q2_K: scales[16] (scale low nibble, min high nibble, per 16), qs[64]
// (sub-block s: bits 2*(s%4) of qs[32*(s/4):]), d at 80, dmin at 82. The
// mins' sums B_s are per-16 sums of the activations (VPMADDUBSW by ones)
// times the mins; Y14 holds byte ones for them.

#define Q2KXSUM(j, Yout) \
	VPMADDUBSW (32*j)(DI), Y14, Yout \
	VPMADDWD Y15, Yout, Yout

#define Q2KSUB(j, Yout) \
	VMOVDQU (16+32*(j/4))(SI), Y0 \
	VPSRLW $(2*(j%4)), Y0, Y0 \
	VPAND k03<>(SB), Y0, Y0 \
	KUNSIGNED(32*j, Yout)

// Q2KMINS: Y3 = B_s*(dmin*dx_s) from the activation sums in Y4..Y11.
#define Q2KMINS \
	VMOVDQU (SI), X0 \
	VPSRLW  $4, X0, X0 \
	VPAND   k0f<>(SB), X0, X0 \
	KSCALES16(X0, Y2, Y3, VPMOVZXBD) \
	KREDUCE16(Y2, Y3) \
	KMULD(82, Y0) \
	VMOVDQA Y0, Y3

// Q2KEND: lanes += A_s*(d*dx_s) - Y3, A_s from the code sums in Y4..Y11.
#define Q2KEND \
	VMOVDQU (SI), X0 \
	VPAND   k0f<>(SB), X0, X0 \
	KSCALES16(X0, Y2, Y13, VPMOVZXBD) \
	KREDUCE16(Y2, Y13) \
	KMULD(80, Y0) \
	VSUBPS  Y3, Y0, Y0 \
	VADDPS  Y0, Y12, Y12

// func q8dotQ2KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ2KAVX2(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU kones8<>(SB), Y14
	TESTQ CX, CX
	JZ    q2kdone

q2kloop:
	PFAHEAD2(84)
	Q2KXSUM(0, Y4)
	Q2KXSUM(1, Y5)
	Q2KXSUM(2, Y6)
	Q2KXSUM(3, Y7)
	Q2KXSUM(4, Y8)
	Q2KXSUM(5, Y9)
	Q2KXSUM(6, Y10)
	Q2KXSUM(7, Y11)
	Q2KMINS
	Q2KSUB(0, Y4)
	Q2KSUB(1, Y5)
	Q2KSUB(2, Y6)
	Q2KSUB(3, Y7)
	Q2KSUB(4, Y8)
	Q2KSUB(5, Y9)
	Q2KSUB(6, Y10)
	Q2KSUB(7, Y11)
	Q2KEND
	KNEXT(84)
	JNZ  q2kloop

q2kdone:
	KEPILOGUE

// ---- Q3_K: hmask[32] (bit s of byte j: code j of sub-block s as it is,
// else 4 less), qs[64] (as Q2_K's, at 32), scales[12] (16 signed 6-bit
// scales) at 96, d at 108. Y13 holds hmask; the high bit s goes to bit 2
// by a 16-bit shift (bits stay inside their byte: only bit 2 is kept).

#define Q3KSUB(j, SH, n, Yout) \
	VMOVDQU (32+32*(j/4))(SI), Y0 \
	VPSRLW $(2*(j%4)), Y0, Y0 \
	VPAND k03<>(SB), Y0, Y0 \
	SH $n, Y13, Yout \
	VPAND k04<>(SB), Yout, Yout \
	VPOR Yout, Y0, Y0 \
	VPSUBB k04<>(SB), Y0, Y0 \
	KSIGNED(32*j, Yout)

// Q3KSCALES: Y2, Y3 = the 16 scales in KREDUCE16's order: low 4 bits
// (bytes 0..7, then their high nibbles), high 2 bits (byte k%4 of bytes
// 8..11, shifted by 2*(k/4)), minus 32 (X0, X1 clobbered).
#define Q3KSCALES \
	VMOVQ   96(SI), X0 \
	VPSRLW  $4, X0, X1 \
	VPUNPCKLQDQ X1, X0, X0 \
	VPAND   k0f<>(SB), X0, X0 \
	VPBROADCASTD 104(SI), X1 \
	VPSRLVD kq3shifts<>(SB), X1, X1 \
	VPAND   k03<>(SB), X1, X1 \
	VPSLLW  $4, X1, X1 \
	VPOR    X1, X0, X0 \
	VPSUBB  k20<>(SB), X0, X0 \
	KSCALES16(X0, Y2, Y3, VPMOVSXBD)

// func q8dotQ3KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ3KAVX2(SB), NOSPLIT, $0-48
	KPROLOGUE
	TESTQ CX, CX
	JZ    q3kdone

q3kloop:
	PFAHEAD2(110)
	Q3KSCALES
	VMOVDQU (SI), Y13
	Q3KSUB(0, VPSLLW, 2, Y4)
	Q3KSUB(1, VPSLLW, 1, Y5)
	Q3KSUB(2, VPSRLW, 0, Y6)
	Q3KSUB(3, VPSRLW, 1, Y7)
	Q3KSUB(4, VPSRLW, 2, Y8)
	Q3KSUB(5, VPSRLW, 3, Y9)
	Q3KSUB(6, VPSRLW, 4, Y10)
	Q3KSUB(7, VPSRLW, 5, Y11)
	KREDUCE16(Y2, Y3)
	KMULD(108, Y0)
	VADDPS Y0, Y12, Y12
	KNEXT(110)
	JNZ  q3kloop

q3kdone:
	KEPILOGUE

// ---- Q4_K and Q5_K: d at 0, dmin at 2, scales[12] at 4 (8 six-bit scales
// and mins), Q5_K's qh[32] at 16, qs[128] at 16 (Q4_K) or 48 (Q5_K):
// sub-block s is the low (s even) or high nibbles of qs[32*(s/2):], plus 16
// for bit s of qh. The mins' sums B_s are the mins times the activation
// block sums. Y14 holds the nibble mask, Y13 Q5_K's qh.

// K4SCALES: Y2 = the 8 scales, Y3 the 8 mins, as int32 (ggml's unpacking of
// the 12 bytes as 3 words).
#define K4SCALES \
	MOVL  4(SI), AX \
	MOVL  8(SI), R9 \
	MOVL  12(SI), R10 \
	MOVL  R10, R11 \
	SHRL  $4, R11 \
	ANDL  $0x0f0f0f0f, R11 \
	MOVL  R9, R12 \
	SHRL  $6, R12 \
	ANDL  $0x03030303, R12 \
	SHLL  $4, R12 \
	ORL   R12, R11 \
	ANDL  $0x3f3f3f3f, R9 \
	ANDL  $0x0f0f0f0f, R10 \
	MOVL  AX, R12 \
	SHRL  $6, R12 \
	ANDL  $0x03030303, R12 \
	SHLL  $4, R12 \
	ORL   R12, R10 \
	ANDL  $0x3f3f3f3f, AX \
	VMOVD AX, X2 \
	VPINSRD $1, R10, X2, X2 \
	VPMOVZXBD X2, Y2 \
	VMOVD R9, X3 \
	VPINSRD $1, R11, X3, X3 \
	VPMOVZXBD X3, Y3

// K4END(bytes): A = sums (Y4..Y11) times scales, B = mins times the
// activation block sums, lanes += A*(d*dx) - B*(dmin*dx).
#define K4END(bytes) \
	KREDUCE32 \
	VPMULLD Y2, Y0, Y0 \
	KMULD(0, Y0) \
	VPMULLD (BX), Y3, Y1 \
	KMULD(2, Y1) \
	VSUBPS  Y1, Y0, Y0 \
	VADDPS  Y0, Y12, Y12 \
	KNEXT(bytes)

#define Q4KPAIR(c, Ylo, Yhi) \
	VMOVDQU (16+32*c)(SI), Y1 \
	VPAND Y14, Y1, Y0 \
	KUNSIGNED(64*c, Ylo) \
	VPSRLW $4, Y1, Y0 \
	VPAND Y14, Y0, Y0 \
	KUNSIGNED(64*c+32, Yhi)

// func q8dotQ4KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ4KAVX2(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU k0f<>(SB), Y14
	TESTQ CX, CX
	JZ    q4kdone

q4kloop:
	PFAHEAD3(144)
	K4SCALES
	Q4KPAIR(0, Y4, Y5)
	Q4KPAIR(1, Y6, Y7)
	Q4KPAIR(2, Y8, Y9)
	Q4KPAIR(3, Y10, Y11)
	K4END(144)
	JNZ  q4kloop

q4kdone:
	KEPILOGUE

// Q5KHI(SH, n, Yout): Y0 |= bit 4 from Y13 (qh) shifted by n (bit s to 4).
#define Q5KHI(SH, n, Yout) \
	SH $n, Y13, Yout \
	VPAND k10<>(SB), Yout, Yout \
	VPOR Yout, Y0, Y0

#define Q5KPAIR(c, SHlo, nlo, SHhi, nhi, Ylo, Yhi) \
	VMOVDQU (48+32*c)(SI), Y1 \
	VPAND Y14, Y1, Y0 \
	Q5KHI(SHlo, nlo, Ylo) \
	KUNSIGNED(64*c, Ylo) \
	VPSRLW $4, Y1, Y0 \
	VPAND Y14, Y0, Y0 \
	Q5KHI(SHhi, nhi, Yhi) \
	KUNSIGNED(64*c+32, Yhi)

// func q8dotQ5KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ5KAVX2(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU k0f<>(SB), Y14
	TESTQ CX, CX
	JZ    q5kdone

q5kloop:
	PFAHEAD3(176)
	K4SCALES
	VMOVDQU 16(SI), Y13
	Q5KPAIR(0, VPSLLW, 4, VPSLLW, 3, Y4, Y5)
	Q5KPAIR(1, VPSLLW, 2, VPSLLW, 1, Y6, Y7)
	Q5KPAIR(2, VPSRLW, 0, VPSRLW, 1, Y8, Y9)
	Q5KPAIR(3, VPSRLW, 2, VPSRLW, 3, Y10, Y11)
	K4END(176)
	JNZ  q5kloop

q5kdone:
	KEPILOGUE

// ---- Q6_K: ql[128], qh[64] at 128, scales[16] (int8) at 192, d at 208.
// Sub-block s = 4h+i: the low (i < 2) or high nibbles of ql[64h+32*(i%2):]
// and bits 2i, 2i+1 of qh[32h:] as bits 4, 5, minus 32. Y14 holds the
// nibble mask, Y13 the half's qh.

#define Q6KSUB(h, i, SH, n, Yout) \
	VMOVDQU (64*h+32*(i%2))(SI), Y0 \
	VPSRLW $(4*(i/2)), Y0, Y0 \
	VPAND Y14, Y0, Y0 \
	SH $n, Y13, Yout \
	VPAND k30<>(SB), Yout, Yout \
	VPOR Yout, Y0, Y0 \
	VPSUBB k20<>(SB), Y0, Y0 \
	KSIGNED(32*(4*h+i), Yout)

// func q8dotQ6KAVX2(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ6KAVX2(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU k0f<>(SB), Y14
	TESTQ CX, CX
	JZ    q6kdone

q6kloop:
	PFAHEAD4(210)
	VMOVDQU 192(SI), X0
	KSCALES16(X0, Y2, Y3, VPMOVSXBD)
	VMOVDQU 128(SI), Y13
	Q6KSUB(0, 0, VPSLLW, 4, Y4)
	Q6KSUB(0, 1, VPSLLW, 2, Y5)
	Q6KSUB(0, 2, VPSRLW, 0, Y6)
	Q6KSUB(0, 3, VPSRLW, 2, Y7)
	VMOVDQU 160(SI), Y13
	Q6KSUB(1, 0, VPSLLW, 4, Y8)
	Q6KSUB(1, 1, VPSLLW, 2, Y9)
	Q6KSUB(1, 2, VPSRLW, 0, Y10)
	Q6KSUB(1, 3, VPSRLW, 2, Y11)
	KREDUCE16(Y2, Y3)
	KMULD(208, Y0)
	VADDPS Y0, Y12, Y12
	KNEXT(210)
	JNZ  q6kloop

q6kdone:
	KEPILOGUE

// ---- AVX-512 (F, BW, VNNI): Q2_K and Q3_K with one ZMM per two
// sub-blocks (the 32 code bytes broadcast to both halves, shifted per half)
// and VPDPBUSD, whose 16 dword sums are the two sub-blocks' 8 partials
// each (the upper half extracted for KREDUCE16). Only Z0..Z15 are used, so
// VZEROUPPER leaves no dirty upper state.

DATA kz03<>+0(SB)/8, $0x0303030303030303
DATA kz03<>+8(SB)/8, $0x0303030303030303
DATA kz03<>+16(SB)/8, $0x0303030303030303
DATA kz03<>+24(SB)/8, $0x0303030303030303
DATA kz03<>+32(SB)/8, $0x0303030303030303
DATA kz03<>+40(SB)/8, $0x0303030303030303
DATA kz03<>+48(SB)/8, $0x0303030303030303
DATA kz03<>+56(SB)/8, $0x0303030303030303
GLOBL kz03<>(SB), RODATA|NOPTR, $64

DATA kz04<>+0(SB)/8, $0x0404040404040404
DATA kz04<>+8(SB)/8, $0x0404040404040404
DATA kz04<>+16(SB)/8, $0x0404040404040404
DATA kz04<>+24(SB)/8, $0x0404040404040404
DATA kz04<>+32(SB)/8, $0x0404040404040404
DATA kz04<>+40(SB)/8, $0x0404040404040404
DATA kz04<>+48(SB)/8, $0x0404040404040404
DATA kz04<>+56(SB)/8, $0x0404040404040404
GLOBL kz04<>(SB), RODATA|NOPTR, $64

DATA kzones8<>+0(SB)/8, $0x0101010101010101
DATA kzones8<>+8(SB)/8, $0x0101010101010101
DATA kzones8<>+16(SB)/8, $0x0101010101010101
DATA kzones8<>+24(SB)/8, $0x0101010101010101
DATA kzones8<>+32(SB)/8, $0x0101010101010101
DATA kzones8<>+40(SB)/8, $0x0101010101010101
DATA kzones8<>+48(SB)/8, $0x0101010101010101
DATA kzones8<>+56(SB)/8, $0x0101010101010101
GLOBL kzones8<>(SB), RODATA|NOPTR, $64

// kzsh02: 16-bit shift counts, 0 for the lower half, 2 for the upper.
DATA kzsh02<>+0(SB)/8, $0x0000000000000000
DATA kzsh02<>+8(SB)/8, $0x0000000000000000
DATA kzsh02<>+16(SB)/8, $0x0000000000000000
DATA kzsh02<>+24(SB)/8, $0x0000000000000000
DATA kzsh02<>+32(SB)/8, $0x0002000200020002
DATA kzsh02<>+40(SB)/8, $0x0002000200020002
DATA kzsh02<>+48(SB)/8, $0x0002000200020002
DATA kzsh02<>+56(SB)/8, $0x0002000200020002
GLOBL kzsh02<>(SB), RODATA|NOPTR, $64

// kzbits12: bit 0 in the lower half's bytes, bit 1 in the upper's.
DATA kzbits12<>+0(SB)/8, $0x0101010101010101
DATA kzbits12<>+8(SB)/8, $0x0101010101010101
DATA kzbits12<>+16(SB)/8, $0x0101010101010101
DATA kzbits12<>+24(SB)/8, $0x0101010101010101
DATA kzbits12<>+32(SB)/8, $0x0202020202020202
DATA kzbits12<>+40(SB)/8, $0x0202020202020202
DATA kzbits12<>+48(SB)/8, $0x0202020202020202
DATA kzbits12<>+56(SB)/8, $0x0202020202020202
GLOBL kzbits12<>(SB), RODATA|NOPTR, $64

// K2CODES512(off, p): Z0 = the 2-bit codes of sub-blocks 2p (lower half)
// and 2p+1 (upper) from the 32 bytes at off(SI): bits 2*(s%4). Z15 holds
// kzsh02.
#define K2CODES512(off, p) \
	VBROADCASTI64X4 off(SI), Z0 \
	VPSRLVW Z15, Z0, Z0 \
	VPSRLW  $(4*(p%2)), Z0, Z0 \
	VPANDD  kz03<>(SB), Z0, Z0

// Q2KXSUM512(p, Zp, Yhi): the per-16 activation sums of sub-blocks 2p, 2p+1
// (Z14 byte ones): Yp's partials for 2p, Yhi's for 2p+1.
#define Q2KXSUM512(p, Zp, Yhi) \
	VPXORD   Zp, Zp, Zp \
	VPDPBUSD (64*p)(DI), Z14, Zp \
	VEXTRACTI64X4 $1, Zp, Yhi

#define Q2KSUB512(p, Zp, Yhi) \
	K2CODES512(16+32*(p/2), p) \
	VPXORD   Zp, Zp, Zp \
	VPDPBUSD (64*p)(DI), Z0, Zp \
	VEXTRACTI64X4 $1, Zp, Yhi

// func q8dotQ2KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ2KAVX512(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU64 kzones8<>(SB), Z14
	VMOVDQU64 kzsh02<>(SB), Z15
	TESTQ CX, CX
	JZ    q2kzdone

q2kzloop:
	PFAHEAD2(84)
	Q2KXSUM512(0, Z4, Y5)
	Q2KXSUM512(1, Z6, Y7)
	Q2KXSUM512(2, Z8, Y9)
	Q2KXSUM512(3, Z10, Y11)
	Q2KMINS
	Q2KSUB512(0, Z4, Y5)
	Q2KSUB512(1, Z6, Y7)
	Q2KSUB512(2, Z8, Y9)
	Q2KSUB512(3, Z10, Y11)
	Q2KEND
	KNEXT(84)
	JNZ  q2kzloop

q2kzdone:
	KEPILOGUE

// Q3_K: the codes u = low + 4*hbit (0..7) by VPDPBUSD, then 4*(-x) by a
// second VPDPBUSD into the same sums: sum (u-4)*x exactly. Z13 holds hmask,
// shifted right by 2 per pair so that bits 0 and 1 of each byte are the
// pair's high bits (kzbits12 in Z14); Z2 holds byte fours.
#define Q3KSUB512(p, Zp, Yhi) \
	K2CODES512(32+32*(p/2), p) \
	VPTESTMB Z14, Z13, K1 \
	VPADDB   Z2, Z0, K1, Z0 \
	VPXORD   Zp, Zp, Zp \
	VPDPBUSD (64*p)(DI), Z0, Zp \
	VPXORD   Z1, Z1, Z1 \
	VPSUBB   (64*p)(DI), Z1, Z1 \
	VPDPBUSD Z1, Z2, Zp \
	VEXTRACTI64X4 $1, Zp, Yhi \
	VPSRLW   $2, Z13, Z13

// func q8dotQ3KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ3KAVX512(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU64 kzbits12<>(SB), Z14
	VMOVDQU64 kzsh02<>(SB), Z15
	TESTQ CX, CX
	JZ    q3kzdone

q3kzloop:
	PFAHEAD2(110)
	VMOVDQU64 kz04<>(SB), Z2
	VBROADCASTI64X4 (SI), Z13
	Q3KSUB512(0, Z4, Y5)
	Q3KSUB512(1, Z6, Y7)
	Q3KSUB512(2, Z8, Y9)
	Q3KSUB512(3, Z10, Y11)
	Q3KSCALES
	KREDUCE16(Y2, Y3)
	KMULD(108, Y0)
	VADDPS Y0, Y12, Y12
	KNEXT(110)
	JNZ  q3kzloop

q3kzdone:
	KEPILOGUE

// ---- AVX-512 (F, BW, VNNI): Q5_K and Q6_K, two sub-blocks per ZMM as
// above. (Q4_K's AVX2 kernel is as fast as this form of it measured on this
// CPU, so Q4_K has none.)

DATA kz0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kz0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kz0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kz0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kz0f<>+32(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kz0f<>+40(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kz0f<>+48(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kz0f<>+56(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kz0f<>(SB), RODATA|NOPTR, $64

DATA kz10<>+0(SB)/8, $0x1010101010101010
DATA kz10<>+8(SB)/8, $0x1010101010101010
DATA kz10<>+16(SB)/8, $0x1010101010101010
DATA kz10<>+24(SB)/8, $0x1010101010101010
DATA kz10<>+32(SB)/8, $0x1010101010101010
DATA kz10<>+40(SB)/8, $0x1010101010101010
DATA kz10<>+48(SB)/8, $0x1010101010101010
DATA kz10<>+56(SB)/8, $0x1010101010101010
GLOBL kz10<>(SB), RODATA|NOPTR, $64

DATA kz20<>+0(SB)/8, $0x2020202020202020
DATA kz20<>+8(SB)/8, $0x2020202020202020
DATA kz20<>+16(SB)/8, $0x2020202020202020
DATA kz20<>+24(SB)/8, $0x2020202020202020
DATA kz20<>+32(SB)/8, $0x2020202020202020
DATA kz20<>+40(SB)/8, $0x2020202020202020
DATA kz20<>+48(SB)/8, $0x2020202020202020
DATA kz20<>+56(SB)/8, $0x2020202020202020
GLOBL kz20<>(SB), RODATA|NOPTR, $64

DATA kz30<>+0(SB)/8, $0x3030303030303030
DATA kz30<>+8(SB)/8, $0x3030303030303030
DATA kz30<>+16(SB)/8, $0x3030303030303030
DATA kz30<>+24(SB)/8, $0x3030303030303030
DATA kz30<>+32(SB)/8, $0x3030303030303030
DATA kz30<>+40(SB)/8, $0x3030303030303030
DATA kz30<>+48(SB)/8, $0x3030303030303030
DATA kz30<>+56(SB)/8, $0x3030303030303030
GLOBL kz30<>(SB), RODATA|NOPTR, $64

// kzsh04: 16-bit shift counts, 0 for the lower half, 4 for the upper.
DATA kzsh04<>+0(SB)/8, $0x0000000000000000
DATA kzsh04<>+8(SB)/8, $0x0000000000000000
DATA kzsh04<>+16(SB)/8, $0x0000000000000000
DATA kzsh04<>+24(SB)/8, $0x0000000000000000
DATA kzsh04<>+32(SB)/8, $0x0004000400040004
DATA kzsh04<>+40(SB)/8, $0x0004000400040004
DATA kzsh04<>+48(SB)/8, $0x0004000400040004
DATA kzsh04<>+56(SB)/8, $0x0004000400040004
GLOBL kzsh04<>(SB), RODATA|NOPTR, $64

// kzsh42: 4 for the lower half, 2 for the upper.
DATA kzsh42<>+0(SB)/8, $0x0004000400040004
DATA kzsh42<>+8(SB)/8, $0x0004000400040004
DATA kzsh42<>+16(SB)/8, $0x0004000400040004
DATA kzsh42<>+24(SB)/8, $0x0004000400040004
DATA kzsh42<>+32(SB)/8, $0x0002000200020002
DATA kzsh42<>+40(SB)/8, $0x0002000200020002
DATA kzsh42<>+48(SB)/8, $0x0002000200020002
DATA kzsh42<>+56(SB)/8, $0x0002000200020002
GLOBL kzsh42<>(SB), RODATA|NOPTR, $64

// K4NIB512(off): Z0 = the low nibbles of the 32 bytes at off(SI) (lower
// half) and their high nibbles (upper): Q5_K's sub-blocks 2c and 2c+1 less
// their high bits. Z15 holds kzsh04.
#define K4NIB512(off) \
	VBROADCASTI64X4 off(SI), Z0 \
	VPSRLVW Z15, Z0, Z0 \
	VPANDD  kz0f<>(SB), Z0, Z0

// KDOT512(c, Zc, Yhi): Yc, Yhi = the partials of the codes in Z0 against
// the 64 activations of sub-blocks 2c, 2c+1.
#define KDOT512(c, Zc, Yhi) \
	VPXORD   Zc, Zc, Zc \
	VPDPBUSD (64*c)(DI), Z0, Zc \
	VEXTRACTI64X4 $1, Zc, Yhi

// Q5_K: bit s of qh adds 16: Z13 holds qh, shifted right by 2 per pair so
// that bits 0 and 1 of each byte are the pair's (kzbits12 in Z14).
#define Q5KSUB512(c, Zc, Yhi) \
	K4NIB512(48+32*c) \
	VPTESTMB Z14, Z13, K1 \
	VPADDB   kz10<>(SB), Z0, K1, Z0 \
	KDOT512(c, Zc, Yhi) \
	VPSRLW   $2, Z13, Z13

// func q8dotQ5KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ5KAVX512(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU64 kzbits12<>(SB), Z14
	VMOVDQU64 kzsh04<>(SB), Z15
	TESTQ CX, CX
	JZ    q5kzdone

q5kzloop:
	PFAHEAD3(176)
	K4SCALES
	VBROADCASTI64X4 16(SI), Z13
	Q5KSUB512(0, Z4, Y5)
	Q5KSUB512(1, Z6, Y7)
	Q5KSUB512(2, Z8, Y9)
	Q5KSUB512(3, Z10, Y11)
	K4END(176)
	JNZ  q5kzloop

q5kzdone:
	KEPILOGUE

// Q6_K: the pair (i, i+1) = (0, 1) of half h is the low nibbles of the 64
// bytes ql[64h:], (2, 3) their high nibbles; the high bits 2i, 2i+1 of
// qh[32h:] (broadcast to both halves in Z13) go to bits 4, 5 by a left
// shift of 4 | 2 (Z14) or a right shift of 0 | 2 (Z15). The codes u
// (0..63) by VPDPBUSD, then 32*(-x) into the same sums (Z2 byte 32s).
#define Q6KSUB512(h, j, SHV, ZSH, Zc, Yhi) \
	VMOVDQU64 (64*h)(SI), Z0 \
	VPSRLW  $(4*j), Z0, Z0 \
	VPANDD  kz0f<>(SB), Z0, Z0 \
	SHV     ZSH, Z13, Z1 \
	VPANDD  kz30<>(SB), Z1, Z1 \
	VPORD   Z1, Z0, Z0 \
	VPXORD   Zc, Zc, Zc \
	VPDPBUSD (128*h+64*j)(DI), Z0, Zc \
	VPXORD   Z1, Z1, Z1 \
	VPSUBB   (128*h+64*j)(DI), Z1, Z1 \
	VPDPBUSD Z1, Z2, Zc \
	VEXTRACTI64X4 $1, Zc, Yhi

// func q8dotQ6KAVX512(w *byte, xq *int8, xd *float32, xs *int32, blocks int, lanes *[8]float32)
TEXT ·q8dotQ6KAVX512(SB), NOSPLIT, $0-48
	KPROLOGUE
	VMOVDQU64 kzsh42<>(SB), Z14
	VMOVDQU64 kzsh02<>(SB), Z15
	TESTQ CX, CX
	JZ    q6kzdone

q6kzloop:
	PFAHEAD4(210)
	VMOVDQU64 kz20<>(SB), Z2
	VBROADCASTI64X4 128(SI), Z13
	Q6KSUB512(0, 0, VPSLLVW, Z14, Z4, Y5)
	Q6KSUB512(0, 1, VPSRLVW, Z15, Z6, Y7)
	VBROADCASTI64X4 160(SI), Z13
	Q6KSUB512(1, 0, VPSLLVW, Z14, Z8, Y9)
	Q6KSUB512(1, 1, VPSRLVW, Z15, Z10, Y11)
	VMOVDQU 192(SI), X0
	KSCALES16(X0, Y2, Y3, VPMOVSXBD)
	KREDUCE16(Y2, Y3)
	KMULD(208, Y0)
	VADDPS Y0, Y12, Y12
	KNEXT(210)
	JNZ  q6kzloop

q6kzdone:
	KEPILOGUE

// KSIGNS: K3 = ksigns_iq2xs of the 8 7-bit sign fields in AX's bytes, i.e.
// each field with its parity in bit 7 (three shifted XORs fold a byte's
// bits into its bit 0), as a mask of 64 weights: bit 8j+k negates weight k
// of the j-th 8 (qdot_iqxxs512_amd64.s, qdot_iqlow512_amd64.s). R13 holds
// 0x01 in every byte; AX (the fields with their parity), BX and R12 are
// clobbered.
#define KSIGNS \
	MOVQ    AX, BX \
	SHRQ    $4, BX \
	XORQ    AX, BX \
	MOVQ    BX, R12 \
	SHRQ    $2, R12 \
	XORQ    R12, BX \
	MOVQ    BX, R12 \
	SHRQ    $1, R12 \
	XORQ    R12, BX \
	ANDQ    R13, BX \
	SHLQ    $7, BX \
	ORQ     BX, AX \
	KMOVQ   AX, K3

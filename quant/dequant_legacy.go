package quant

import "math"

// The 32- to 128-element block types: the legacy Q4/Q5/Q8 formats, IQ4_NL,
// MXFP4 and the low-bit Q1_0/Q2_0/TQ types.

func init() {
	dequantizers[Q4_0] = dequantQ4_0
	dequantizers[Q4_1] = dequantQ4_1
	dequantizers[Q5_0] = dequantQ5_0
	dequantizers[Q5_1] = dequantQ5_1
	dequantizers[Q8_0] = dequantQ8_0
	dequantizers[IQ4_NL] = dequantIQ4NL
	dequantizers[MXFP4] = dequantMXFP4
	dequantizers[Q2_0] = dequantQ2_0
	dequantizers[Q1_0] = dequantQ1_0
	dequantizers[TQ1_0] = dequantTQ1_0
	dequantizers[TQ2_0] = dequantTQ2_0
}

// nibbles32 decodes the 32 weights of one block of 4-bit codes, as Q4_0,
// IQ4_NL, IQ4_XS (per 32) and MXFP4 store them: byte j of qs holds weight j
// in its low nibble and weight j+16 in its high one; each weight is d
// times the code's value in table.
func nibbles32(out []float32, qs []byte, d float32, table *[16]int8) {
	out, qs = out[:32], qs[:16]
	for j, q := range qs {
		out[j] = d * float32(table[q&0xf])
		out[j+16] = d * float32(table[q>>4])
	}
}

// q4Values is Q4_0's code values: code - 8.
var q4Values = [16]int8{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}

func dequantQ4_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/32; i++ {
		b := src[18*i : 18*i+18]
		y := dst[32*i : 32*i+32]
		nibbles32(y, b[2:18], half(b), &q4Values)
	}
}

func dequantQ4_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/32; i++ {
		b := src[20*i : 20*i+20]
		y := dst[32*i : 32*i+32]
		d, m := half(b), half(b[2:])
		qs := b[4:20]
		for j := 0; j < 16; j++ {
			y[j] = float32(float32(qs[j]&0xf)*d) + m
			y[j+16] = float32(float32(qs[j]>>4)*d) + m
		}
	}
}

func dequantQ5_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/32; i++ {
		b := src[22*i : 22*i+22]
		y := dst[32*i : 32*i+32]
		d := half(b)
		qh := le32(b[2:])
		qs := b[6:22]
		for j := 0; j < 16; j++ {
			lo := int(qs[j]&0xf) | int(qh>>j&1)<<4
			hi := int(qs[j]>>4) | int(qh>>(j+16)&1)<<4
			y[j] = float32(lo-16) * d
			y[j+16] = float32(hi-16) * d
		}
	}
}

func dequantQ5_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/32; i++ {
		b := src[24*i : 24*i+24]
		y := dst[32*i : 32*i+32]
		d, m := half(b), half(b[2:])
		qh := le32(b[4:])
		qs := b[8:24]
		for j := 0; j < 16; j++ {
			lo := qs[j]&0xf | byte(qh>>j&1)<<4
			hi := qs[j]>>4 | byte(qh>>(j+16)&1)<<4
			y[j] = float32(float32(lo)*d) + m
			y[j+16] = float32(float32(hi)*d) + m
		}
	}
}

func dequantQ8_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/32; i++ {
		b := src[34*i : 34*i+34]
		y := dst[32*i : 32*i+32]
		d := half(b)
		qs := b[2:34]
		for j := range y {
			y[j] = float32(int8(qs[j])) * d
		}
	}
}

func dequantIQ4NL(src []byte, dst []float32) {
	for i := 0; i < len(dst)/32; i++ {
		b := src[18*i : 18*i+18]
		y := dst[32*i : 32*i+32]
		nibbles32(y, b[2:18], half(b), &KvaluesIQ4NL)
	}
}

// E8M0Half is MXFP4's block factor 2^(e-128) as ggml builds it from bits:
// the two smallest exponents are float32 subnormals, and e = 255 is an
// ordinary 2^127 (not NaN).
func E8M0Half(e byte) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// MXFP4Codebook returns a copy of kvalues_mxfp4 (E2M1 values doubled), for
// vector decoders.
func MXFP4Codebook() [16]int8 { return kvaluesMXFP4 }

func dequantMXFP4(src []byte, dst []float32) {
	for i := 0; i < len(dst)/32; i++ {
		b := src[17*i : 17*i+17]
		y := dst[32*i : 32*i+32]
		nibbles32(y, b[1:17], E8M0Half(b[0]), &kvaluesMXFP4)
	}
}

func dequantQ2_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/64; i++ {
		b := src[18*i : 18*i+18]
		y := dst[64*i : 64*i+64]
		d := half(b)
		qs := b[2:18]
		for j := 0; j < 16; j++ {
			q := qs[j]
			y[4*j] = float32(q2_0Levels[q&3]) * d
			y[4*j+1] = float32(q2_0Levels[q>>2&3]) * d
			y[4*j+2] = float32(q2_0Levels[q>>4&3]) * d
			y[4*j+3] = float32(q2_0Levels[q>>6]) * d
		}
	}
}

// Q1_0 selects d or -d (a negation, not a product), so d = +0 with a clear
// bit gives -0.
func dequantQ1_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/128; i++ {
		b := src[18*i : 18*i+18]
		y := dst[128*i : 128*i+128]
		d := half(b)
		pick := [2]float32{-d, d}
		qs := b[2:18]
		for j := range y {
			y[j] = pick[qs[j/8]>>(j%8)&1]
		}
	}
}

func dequantTQ2_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[66*i : 66*i+66]
		y := dst[256*i : 256*i+256]
		d := half(b[64:])
		for h := 0; h < 2; h++ {
			qs := b[32*h : 32*h+32]
			for l := 0; l < 4; l++ {
				out := y[128*h+32*l : 128*h+32*l+32]
				for m := range out {
					out[m] = float32(tq2_0Levels[qs[m]>>(2*l)&3]) * d
				}
			}
		}
	}
}

// trit is digit n of TQ1_0's base-3 fixed-point byte.
func trit(b byte, n int) int { return int(uint16(b*tq1_0Pow3[n])*3>>8) - 1 }

func dequantTQ1_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[54*i : 54*i+54]
		y := dst[256*i : 256*i+256]
		d := half(b[52:])
		qs, qh := b[0:48], b[48:52]
		for n := 0; n < 5; n++ {
			for m := 0; m < 32; m++ {
				y[32*n+m] = float32(trit(qs[m], n)) * d
			}
		}
		for n := 0; n < 5; n++ {
			for m := 0; m < 16; m++ {
				y[160+16*n+m] = float32(trit(qs[32+m], n)) * d
			}
		}
		for n := 0; n < 4; n++ {
			for m := 0; m < 4; m++ {
				y[240+4*n+m] = float32(trit(qh[m], n)) * d
			}
		}
	}
}

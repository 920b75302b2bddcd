package quant

// The k-quants and IQ4_XS (256-element super-blocks with packed sub-block
// scales).

func init() {
	dequantizers[Q2_K] = dequantQ2K
	dequantizers[Q3_K] = dequantQ3K
	dequantizers[Q4_K] = dequantQ4K
	dequantizers[Q5_K] = dequantQ5K
	dequantizers[Q6_K] = dequantQ6K
	dequantizers[IQ4_XS] = dequantIQ4XS
}

// Q2KFactors writes the factors of one Q2_K block (b starts at the block):
// d*sc[k] at out[k] and dmin*m[k] at out[16+k], so y = out[k]*q - out[16+k].
func Q2KFactors(b []byte, out *[32]float32) {
	b = b[:84]
	d, dmin := half(b[80:]), half(b[82:])
	for k, sc := range b[0:16] {
		out[k] = d * float32(sc&0xf)
		out[16+k] = dmin * float32(sc>>4)
	}
}

func dequantQ2K(src []byte, dst []float32) {
	var f [32]float32
	for i := 0; i < len(dst)/256; i++ {
		b := src[84*i : 84*i+84]
		y := dst[256*i : 256*i+256]
		Q2KFactors(b, &f)
		qs := b[16:80]
		for h := 0; h < 2; h++ {
			for s := 0; s < 4; s++ {
				for t := 0; t < 2; t++ {
					k := 8*h + 2*s + t
					dl, ml := f[k], f[16+k]
					q := qs[32*h+16*t : 32*h+16*t+16]
					out := y[16*k : 16*k+16]
					for l := range out {
						out[l] = float32(dl*float32(q[l]>>(2*s)&3)) - ml
					}
				}
			}
		}
	}
}

// Q3KFactors writes d * (signed 6-bit scale k) of one Q3_K block (b starts
// at the block).
func Q3KFactors(b []byte, out *[16]float32) {
	b = b[:110]
	scales := b[96:108]
	d := half(b[108:])
	for k := 0; k < 16; k++ {
		out[k] = d * float32(Q3KScale(scales, k))
	}
}

// Q3KScale unpacks the signed 6-bit scale k (0..15, value -32..31) of a
// Q3_K block's 12 packed scale bytes (B[96:108]).
func Q3KScale(scales []byte, k int) int {
	scales = scales[:12]
	var low4 byte
	if k < 8 {
		low4 = scales[k] & 0xf
	} else {
		low4 = scales[k-8] >> 4
	}
	high2 := scales[8+k%4] >> (2 * (k / 4)) & 3
	return int(low4|high2<<4) - 32
}

func dequantQ3K(src []byte, dst []float32) {
	var f [16]float32
	for i := 0; i < len(dst)/256; i++ {
		b := src[110*i : 110*i+110]
		y := dst[256*i : 256*i+256]
		Q3KFactors(b, &f)
		hmask, qs := b[0:32], b[32:96]
		for h := 0; h < 2; h++ {
			for s := 0; s < 4; s++ {
				for t := 0; t < 2; t++ {
					k := 8*h + 2*s + t
					dl := f[k]
					q := qs[32*h+16*t : 32*h+16*t+16]
					hm := hmask[16*t : 16*t+16]
					out := y[16*k : 16*k+16]
					for l := range out {
						// low - 4, plus 4 back when the high bit is set
						v := int(q[l]>>(2*s)&3) - 4 + int(hm[l]>>(4*h+s)&1)<<2
						out[l] = dl * float32(v)
					}
				}
			}
		}
	}
}

// ScaleMinK4 unpacks sub-block j's (0..7) 6-bit scale and min from the 12
// packed scale bytes of a Q4_K or Q5_K block (B[4:16]).
func ScaleMinK4(j int, b []byte) (sc, m byte) {
	b = b[:12]
	if j < 4 {
		return b[j] & 63, b[j+4] & 63
	}
	return b[j+4]&0xf | b[j-4]>>6<<4, b[j+4]>>4 | b[j]>>6<<4
}

// Q4KFactors writes the factors of one Q4_K or Q5_K block (b starts at its
// d) exactly as the reference decoder forms them: d*sc[j] at out[j] and
// dmin*m[j] at out[8+j], so y = out[j]*q - out[8+j]. Vector decoders use it
// to share the definition.
func Q4KFactors(b []byte, out *[16]float32) {
	b = b[:16]
	d, dmin := half(b), half(b[2:])
	for j := 0; j < 8; j++ {
		sc, m := ScaleMinK4(j, b[4:16])
		out[j] = d * float32(sc)
		out[8+j] = dmin * float32(m)
	}
}

func dequantQ4K(src []byte, dst []float32) {
	var f [16]float32
	for i := 0; i < len(dst)/256; i++ {
		b := src[144*i : 144*i+144]
		y := dst[256*i : 256*i+256]
		Q4KFactors(b, &f)
		qs := b[16:144]
		for c := 0; c < 4; c++ {
			d1, dm1 := f[2*c], f[8+2*c]
			d2, dm2 := f[2*c+1], f[9+2*c]
			q := qs[32*c : 32*c+32]
			lo, hi := y[64*c:64*c+32], y[64*c+32:64*c+64]
			for l := range q {
				lo[l] = float32(d1*float32(q[l]&0xf)) - dm1
				hi[l] = float32(d2*float32(q[l]>>4)) - dm2
			}
		}
	}
}

func dequantQ5K(src []byte, dst []float32) {
	var f [16]float32
	for i := 0; i < len(dst)/256; i++ {
		b := src[176*i : 176*i+176]
		y := dst[256*i : 256*i+256]
		Q4KFactors(b, &f)
		qh, qs := b[16:48], b[48:176]
		for c := 0; c < 4; c++ {
			d1, dm1 := f[2*c], f[8+2*c]
			d2, dm2 := f[2*c+1], f[9+2*c]
			q := qs[32*c : 32*c+32]
			lo, hi := y[64*c:64*c+32], y[64*c+32:64*c+64]
			for l := range q {
				ql := q[l]&0xf | (qh[l]>>(2*c)&1)<<4
				qu := q[l]>>4 | (qh[l]>>(2*c+1)&1)<<4
				lo[l] = float32(d1*float32(ql)) - dm1
				hi[l] = float32(d2*float32(qu)) - dm2
			}
		}
	}
}

// Q6KFactors writes d*scale[k] of one Q6_K block (b starts at the block),
// the first factor of ggml's (d*sc)*q, for the portable and vector decoders.
func Q6KFactors(b []byte, out *[16]float32) {
	b = b[:210]
	d := half(b[208:])
	for k, s := range b[192:208] {
		out[k] = d * float32(int8(s))
	}
}

func dequantQ6K(src []byte, dst []float32) {
	var ds [16]float32
	for i := 0; i < len(dst)/256; i++ {
		b := src[210*i : 210*i+210]
		y := dst[256*i : 256*i+256]
		Q6KFactors(b, &ds)
		for h := 0; h < 2; h++ {
			ql := b[64*h : 64*h+64]
			qh := b[128+32*h : 128+32*h+32]
			out := y[128*h : 128*h+128]
			s := ds[8*h : 8*h+8]
			for l := 0; l < 32; l++ {
				is := l / 16
				lo, hi, h2 := ql[l], ql[l+32], qh[l]
				out[l] = s[is] * float32(int(lo&0xf|(h2&3)<<4)-32)
				out[l+32] = s[is+2] * float32(int(hi&0xf|(h2>>2&3)<<4)-32)
				out[l+64] = s[is+4] * float32(int(lo>>4|(h2>>4&3)<<4)-32)
				out[l+96] = s[is+6] * float32(int(hi>>4|(h2>>6)<<4)-32)
			}
		}
	}
}

// IQ4XSFactors writes dl = d * float32(ls - 32) of each 32-weight sub-block
// of one IQ4_XS block (b starts at the block), for the portable and vector
// decoders.
func IQ4XSFactors(b []byte, out *[8]float32) {
	b = b[:8]
	d := half(b)
	sh := le16(b[2:])
	for ib := 0; ib < 8; ib++ {
		ls := int(b[4+ib/2]>>(4*(ib%2))&0xf) | int(sh>>(2*ib)&3)<<4
		out[ib] = d * float32(ls-32)
	}
}

func dequantIQ4XS(src []byte, dst []float32) {
	var dl [8]float32
	for i := 0; i < len(dst)/256; i++ {
		b := src[136*i : 136*i+136]
		y := dst[256*i : 256*i+256]
		IQ4XSFactors(b, &dl)
		qs := b[8:136]
		for ib := 0; ib < 8; ib++ {
			nibbles32(y[32*ib:], qs[16*ib:], dl[ib], &KvaluesIQ4NL)
		}
	}
}

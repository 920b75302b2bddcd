package quant

// The grid-based i-quants (256-element super-blocks). Grids come from
// tables_gen.go; byte j of a grid entry is element j.

func init() {
	dequantizers[IQ3_S] = dequantIQ3S
	dequantizers[IQ3_XXS] = dequantIQ3XXS
	dequantizers[IQ2_XXS] = dequantIQ2XXS
	dequantizers[IQ2_XS] = dequantIQ2XS
	dequantizers[IQ2_S] = dequantIQ2S
	dequantizers[IQ1_S] = dequantIQ1S
	dequantizers[IQ1_M] = dequantIQ1M
}

// IQ3SGrid returns a copy of ggml's iq3s_grid (for vector kernels that need
// the table in their own memory).
func IQ3SGrid() [512]uint32 { return iq3sGrid }

// IQ3XXSGrid, IQ2XXSGrid, IQ2XSGrid, IQ2SGrid and KsignsIQ2XS return copies
// of ggml's iq3xxs_grid, iq2xxs_grid, iq2xs_grid, iq2s_grid and
// ksigns_iq2xs, for kernels that decode these types themselves.
func IQ3XXSGrid() [256]uint32 { return iq3xxsGrid }

func IQ2XXSGrid() [256]uint64 { return iq2xxsGrid }

func IQ2XSGrid() [512]uint64 { return iq2xsGrid }

func IQ2SGrid() [1024]uint64 { return iq2sGrid }

func KsignsIQ2XS() [128]uint8 { return ksignsIQ2XS }

// IQ1SGrid returns a copy of ggml's iq1s_grid (int8 bytes in {-1, 0, +1}),
// which IQ1_S and IQ1_M share.
func IQ1SGrid() [2048]uint64 { return iq1sGrid }

func dequantIQ3S(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[110*i : 110*i+110]
		y := dst[256*i : 256*i+256]
		d := half(b)
		qs, qh, signs, scales := b[2:66], b[66:74], b[74:106], b[106:110]
		for sb := 0; sb < 8; sb++ {
			db := d * float32(1+2*int(scales[sb/2]>>(4*(sb%2))&0xf))
			for k := 0; k < 8; k++ {
				g := iq3sGrid[int(qs[8*sb+k])|int(qh[sb]>>k&1)<<8]
				sbits := signs[4*sb+k/2] >> (4 * (k % 2))
				out := y[32*sb+4*k : 32*sb+4*k+4]
				for j := range out {
					out[j] = db * float32(byte(g>>(8*j))) * signOf[sbits>>j&1]
				}
			}
		}
	}
}

func dequantIQ3XXS(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[98*i : 98*i+98]
		y := dst[256*i : 256*i+256]
		d := half(b)
		qs := b[2:66]
		for ib := 0; ib < 8; ib++ {
			a := le32(b[66+4*ib:])
			db := d * (0.5 + float32(a>>28)) * 0.5
			for l := 0; l < 4; l++ {
				sgn := ksignsIQ2XS[a>>(7*l)&127]
				g1 := iq3xxsGrid[qs[8*ib+2*l]]
				g2 := iq3xxsGrid[qs[8*ib+2*l+1]]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := 0; j < 4; j++ {
					out[j] = db * float32(byte(g1>>(8*j))) * signOf[sgn>>j&1]
					out[j+4] = db * float32(byte(g2>>(8*j))) * signOf[sgn>>(j+4)&1]
				}
			}
		}
	}
}

// grid8 writes the 8 elements of a 2-bit i-quant group: db * grid * ±1.
func grid8(out []float32, db float32, g uint64, sgn byte) {
	out = out[:8]
	for j := range out {
		out[j] = db * float32(byte(g>>(8*j))) * signOf[sgn>>j&1]
	}
}

func dequantIQ2XXS(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[66*i : 66*i+66]
		y := dst[256*i : 256*i+256]
		d := half(b)
		for ib := 0; ib < 8; ib++ {
			grp := b[2+8*ib : 10+8*ib]
			w := le32(grp[4:])
			db := d * (0.5 + float32(w>>28)) * 0.25
			for l := 0; l < 4; l++ {
				grid8(y[32*ib+8*l:], db, iq2xxsGrid[grp[l]], ksignsIQ2XS[w>>(7*l)&127])
			}
		}
	}
}

func dequantIQ2XS(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[74*i : 74*i+74]
		y := dst[256*i : 256*i+256]
		d := half(b)
		scales := b[66:74]
		for ib := 0; ib < 8; ib++ {
			db0 := d * (0.5 + float32(scales[ib]&0xf)) * 0.25
			db1 := d * (0.5 + float32(scales[ib]>>4)) * 0.25
			for l := 0; l < 4; l++ {
				w := le16(b[2+2*(4*ib+l):])
				db := db0
				if l >= 2 {
					db = db1
				}
				grid8(y[32*ib+8*l:], db, iq2xsGrid[w&511], ksignsIQ2XS[w>>9])
			}
		}
	}
}

func dequantIQ2S(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[82*i : 82*i+82]
		y := dst[256*i : 256*i+256]
		d := half(b)
		qs, signs, qh, scales := b[2:34], b[34:66], b[66:74], b[74:82]
		for ib := 0; ib < 8; ib++ {
			db0 := d * (0.5 + float32(scales[ib]&0xf)) * 0.25
			db1 := d * (0.5 + float32(scales[ib]>>4)) * 0.25
			for l := 0; l < 4; l++ {
				db := db0
				if l >= 2 {
					db = db1
				}
				idx := int(qs[4*ib+l]) | int(qh[ib]>>(2*l)&3)<<8
				grid8(y[32*ib+8*l:], db, iq2sGrid[idx], signs[4*ib+l])
			}
		}
	}
}

// iq1Group writes dl * (grid + delta) for one 8-element IQ1 group; the grid
// bytes are int8 in {-1, 0, +1}.
func iq1Group(out []float32, dl, delta float32, g uint64) {
	out = out[:8]
	for j := range out {
		out[j] = dl * (float32(int8(g>>(8*j))) + delta)
	}
}

func dequantIQ1S(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[50*i : 50*i+50]
		y := dst[256*i : 256*i+256]
		d := half(b)
		qs := b[2:34]
		for ib := 0; ib < 8; ib++ {
			w := le16(b[34+2*ib:])
			dl := d * float32(2*(w>>12&7)+1)
			delta := float32(iq1sDelta)
			if w&0x8000 != 0 {
				delta = -iq1sDelta
			}
			for l := 0; l < 4; l++ {
				idx := int(qs[4*ib+l]) | int(w>>(3*l)&7)<<8
				iq1Group(y[32*ib+8*l:], dl, delta, iq1sGrid[idx])
			}
		}
	}
}

func dequantIQ1M(src []byte, dst []float32) {
	for i := 0; i < len(dst)/256; i++ {
		b := src[56*i : 56*i+56]
		y := dst[256*i : 256*i+256]
		qs, qh := b[0:32], b[32:48]
		sc := [4]uint16{le16(b[48:]), le16(b[50:]), le16(b[52:]), le16(b[54:])}
		d := FP16ToFloat32(sc[0]>>12 | sc[1]>>12<<4 | sc[2]>>12<<8 | sc[3]>>12<<12)
		for g := 0; g < 32; g++ {
			k, h := g/2, g%2
			s := sc[k/4] >> (3 * (k % 4)) & 7
			dl := d * float32(2*s+1)
			idx := int(qs[g]) | int(qh[k]>>(4*h)&7)<<8
			delta := float32(iq1sDelta)
			if qh[k]>>(4*h+3)&1 != 0 {
				delta = -iq1sDelta
			}
			iq1Group(y[8*g:], dl, delta, iq1sGrid[idx])
		}
	}
}

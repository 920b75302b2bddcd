package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stratactl/stratactl/quant"
)

// Every dot product here is defined as DotF32(decode(row), x): the weights
// decoded exactly to float32 (every ggml decode is exact in float32), then
// one fixed summation order. A fused kernel that decodes in registers
// therefore gives the same bits as decoding a row into a buffer first, which
// is what lets batched prefill (decode once, dot many) and single-token
// decode (fused) agree bit for bit, and the vector and portable paths too.
//
// The order: 4 accumulators of 8 lanes take elements in chunks of 32
// (accumulator j, lane l takes element 32c+8j+l), each step a rounded
// product then a rounded add (no FMA, so Go and assembly agree). The
// accumulators are combined as (a0+a1)+(a2+a3), the 8 lanes folded as
// ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)), and any tail past the last whole
// chunk is added one element at a time after that.

// lanes is the fixed accumulator shape: 4 x 8 float32.
type lanes [4][8]float32

func (a *lanes) reduce() float32 {
	var s [8]float32
	for l := 0; l < 8; l++ {
		s[l] = (a[0][l] + a[1][l]) + (a[2][l] + a[3][l])
	}
	var t [4]float32
	for l := 0; l < 4; l++ {
		t[l] = s[l] + s[l+4]
	}
	return (t[0] + t[2]) + (t[1] + t[3])
}

// dotF32Generic is the portable definition of the order above.
func dotF32Generic(w, x []float32) float32 {
	n := len(x)
	w = w[:n]
	var a lanes
	i := 0
	for ; i+32 <= n; i += 32 {
		for j := 0; j < 4; j++ {
			wj := w[i+8*j : i+8*j+8 : i+8*j+8]
			xj := x[i+8*j : i+8*j+8 : i+8*j+8]
			for l := 0; l < 8; l++ {
				a[j][l] += float32(wj[l] * xj[l])
			}
		}
	}
	r := a.reduce()
	for ; i < n; i++ {
		r += float32(w[i] * x[i])
	}
	return r
}

// DotF32 is the dot product of w and x (len(w) >= len(x)) in the order
// described above.
func DotF32(w, x []float32) float32 {
	if len(w) < len(x) {
		panic("kernels: DotF32 with a short row")
	}
	if useAVX2() && len(x) >= 32 {
		n := len(x) &^ 31
		r := dotF32AVX2(&w[0], &x[0], n)
		for i := n; i < len(x); i++ {
			r += float32(w[i] * x[i])
		}
		return r
	}
	return dotF32Generic(w, x)
}

// Axpy adds a*x[i] to y[i] (len(y) <= len(x)), the product rounded before
// the add on every path, so the bits never depend on the path.
func Axpy(y []float32, a float32, x []float32) {
	n := len(y)
	x = x[:n]
	i := 0
	if useAVX2() && n >= 8 {
		i = n &^ 7
		axpyAVX2(&y[0], a, &x[0], i)
	}
	for ; i < n; i++ {
		y[i] += float32(a * x[i])
	}
}

func useAVX2() bool { return Features.AVX2 && !Features.NoAsm && haveAsm }

// Half converts an IEEE binary16 value to float32 exactly (subnormals too).
func Half(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: value = man * 2^-24, exact in float32.
	f := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}

// halfTable is every binary16 value as float32, so block scales cost one
// load in the portable decoders.
var halfTable = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = Half(uint16(i))
	}
	return &t
}()

// DecodeRow writes the n = len(dst) weights of one row of type t, stored in
// src, to dst as float32, exactly as ggml's to_float: through the vector
// dequantizers where this CPU has one, else the portable decoders here or
// quant's.
func DecodeRow(t quant.Type, src []byte, dst []float32) error {
	n := len(dst)
	want, err := quant.RowBytes(t, int64(n))
	if err != nil {
		return err
	}
	if int64(len(src)) < want {
		return fmt.Errorf("row of %d %s weights needs %d bytes, have %d", n, t, want, len(src))
	}
	src = src[:want]
	if t != quant.F32 && HasVectorDequantize(t) {
		return Dequantize(t, src, dst)
	}
	switch t {
	case quant.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case quant.BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case quant.F16:
		for i := range dst {
			dst[i] = halfTable[binary.LittleEndian.Uint16(src[2*i:])]
		}
	case quant.Q8_0:
		for b := 0; b < n/32; b++ {
			blk := src[34*b : 34*b+34]
			d := halfTable[binary.LittleEndian.Uint16(blk)]
			out := dst[32*b : 32*b+32]
			for j := range out {
				out[j] = float32(int8(blk[2+j])) * d
			}
		}
	case quant.IQ4_NL:
		for b := 0; b < n/32; b++ {
			blk := src[18*b : 18*b+18]
			d := halfTable[binary.LittleEndian.Uint16(blk)]
			out := dst[32*b : 32*b+32]
			for j := 0; j < 16; j++ {
				q := blk[2+j]
				out[j] = d * float32(quant.KvaluesIQ4NL[q&15])
				out[j+16] = d * float32(quant.KvaluesIQ4NL[q>>4])
			}
		}
	case quant.Q2_0:
		for b := 0; b < n/64; b++ {
			blk := src[18*b : 18*b+18]
			d := halfTable[binary.LittleEndian.Uint16(blk)]
			out := dst[64*b : 64*b+64]
			for j := range out {
				code := (blk[2+j/4] >> (2 * (j % 4))) & 3
				out[j] = float32(int(code)-1) * d
			}
		}
	default:
		return Dequantize(t, src, dst)
	}
	return nil
}

// CanDecode reports whether DecodeRow (and so Dot) supports t.
func CanDecode(t quant.Type) bool {
	switch t {
	case quant.F32, quant.BF16, quant.F16, quant.Q8_0, quant.IQ4_NL, quant.Q2_0:
		return true
	}
	return quant.CanDequantize(t)
}

// Fused reports whether Dot on type t decodes in registers rather than
// through a row buffer.
func Fused(t quant.Type) bool {
	if !useAVX2() {
		return false
	}
	switch t {
	case quant.F32, quant.BF16:
		return true
	case quant.F16, quant.Q8_0, quant.IQ4_NL, quant.Q2_0:
		return f16c
	}
	return false
}

// Dot is DotF32(decode(row), x) for a row of len(x) weights of type t.
// scratch (at least len(x) long) holds the decoded row when t has no fused
// kernel. The caller has checked the row's size (see DecodeRow).
func Dot(t quant.Type, row []byte, x []float32, scratch []float32) float32 {
	n := len(x)
	if useAVX2() && n >= 32 && n%32 == 0 {
		switch t {
		case quant.F32:
			if len(row) >= 4*n {
				return dotF32AVX2Bytes(&row[0], &x[0], n)
			}
		case quant.BF16:
			if len(row) >= 2*n {
				return dotBF16AVX2(&row[0], &x[0], n)
			}
		case quant.F16:
			if len(row) >= 2*n && f16c {
				return dotF16AVX2(&row[0], &x[0], n)
			}
		case quant.Q8_0:
			if len(row) >= 34*(n/32) && f16c {
				return dotQ8AVX2(&row[0], &x[0], n/32)
			}
		case quant.IQ4_NL:
			if len(row) >= 18*(n/32) && f16c {
				return dotIQ4NLAVX2(&row[0], &x[0], n/32, &quant.KvaluesIQ4NL[0])
			}
		case quant.Q2_0:
			if n%64 == 0 && len(row) >= 18*(n/64) && f16c {
				return dotQ2AVX2(&row[0], &x[0], n/64)
			}
		}
	}
	buf := scratch[:n]
	if err := DecodeRow(t, row, buf); err != nil {
		panic("kernels: Dot on an unchecked row: " + err.Error())
	}
	return DotF32(buf, x)
}

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

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
	if n < 32 { // no whole chunk: the fold of zero lanes is +0, then the tail
		var r float32
		for i, v := range x {
			r += float32(w[i] * v)
		}
		return r
	}
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
func DotF32(w, x []float32) float32 { return host.dotF32Slices(w, x) }

func (k *kernelSet) dotF32Slices(w, x []float32) float32 {
	if len(w) < len(x) {
		panic("kernels: DotF32 with a short row")
	}
	if k.dotF32 == nil || len(x) < 32 {
		return dotF32Generic(w, x)
	}
	n := len(x) &^ 31
	r := k.dotF32(&w[0], &x[0], n)
	for i := n; i < len(x); i++ {
		r += float32(w[i] * x[i])
	}
	return r
}

// dotF32Rows2 sets *o0 and *o1 to dotRow(F32, r0, x) and dotRow(F32, r1,
// x): two float32 rows (little-endian bytes) against one x, with dotF32x2
// two at once, each in DotF32's order (the whole chunks in the kernel,
// then the tail one element at a time), so each is the bits of dotRow
// alone. buf (at least len(x)) is dotRow's scratch, for the path without
// the kernel. (The outputs are the caller's: a local would escape through
// the kernel's function value, an allocation per pair.)
func (k *kernelSet) dotF32Rows2(r0, r1 []byte, x, buf []float32, o0, o1 *float32) {
	n := len(x)
	if k.dotF32x2 == nil || n < 32 || len(r0) < 4*n || len(r1) < 4*n {
		*o0, *o1 = k.dotRow(quant.F32, r0, x, buf), k.dotRow(quant.F32, r1, x, buf)
		return
	}
	c := n &^ 31
	k.dotF32x2((*float32)(unsafe.Pointer(&r0[0])), (*float32)(unsafe.Pointer(&r1[0])), &x[0], c, o0, o1)
	for i := c; i < n; i++ {
		*o0 += float32(math.Float32frombits(binary.LittleEndian.Uint32(r0[4*i:])) * x[i])
		*o1 += float32(math.Float32frombits(binary.LittleEndian.Uint32(r1[4*i:])) * x[i])
	}
}

// Axpy adds a*x[i] to y[i] (len(y) <= len(x)), the product rounded before
// the add on every path, so the bits never depend on the path.
func Axpy(y []float32, a float32, x []float32) { host.axpySlices(y, a, x) }

func (k *kernelSet) axpySlices(y []float32, a float32, x []float32) {
	n := len(y)
	x = x[:n]
	i := 0
	if k.axpy != nil && n >= 8 {
		i = n &^ 7
		k.axpy(&y[0], a, &x[0], i)
	}
	for ; i < n; i++ {
		y[i] += float32(a * x[i])
	}
}

// DecodeRow writes the n = len(dst) weights of one row of type t, stored in
// src (at least the row's bytes), to dst as float32, exactly as ggml's
// to_float: Dequantize, so quant's decoders are the one portable definition.
func DecodeRow(t quant.Type, src []byte, dst []float32) error { return host.decodeRow(t, src, dst) }

func (k *kernelSet) decodeRow(t quant.Type, src []byte, dst []float32) error {
	n := len(dst)
	want, err := quant.RowBytes(t, int64(n))
	if err != nil {
		return err
	}
	if int64(len(src)) < want {
		return fmt.Errorf("row of %d %s weights needs %d bytes, have %d", n, t, want, len(src))
	}
	return k.dequantize(t, src[:want], dst)
}

// CanDecode reports whether DecodeRow (and so Dot) supports t.
func CanDecode(t quant.Type) bool { return quant.CanDequantize(t) }

// Fused reports whether Dot on type t decodes in registers rather than
// through a row buffer (for rows whose length suits the kernel).
func Fused(t quant.Type) bool { return int(t) < len(host.dot) && host.dot[t].f != nil }

// Dot is DotF32(decode(row), x) for a row of len(x) weights of type t.
// scratch (at least len(x) long) holds the decoded row when t has no fused
// kernel. The caller has checked the row's size (see DecodeRow).
func Dot(t quant.Type, row []byte, x []float32, scratch []float32) float32 {
	return host.dotRow(t, row, x, scratch)
}

// fuses reports whether dotRow runs a fused kernel for rows of n weights of t.
func (k *kernelSet) fuses(t quant.Type, n int) bool {
	return int(t) < len(k.dot) && k.dot[t].f != nil && n > 0 && n%k.dot[t].unit == 0
}

func (k *kernelSet) dotRow(t quant.Type, row []byte, x []float32, scratch []float32) float32 {
	n := len(x)
	if k.fuses(t, n) {
		if fd := &k.dot[t]; len(row) >= n/fd.blockElems*fd.blockBytes {
			return fd.f(row, x)
		}
	}
	buf := scratch[:n]
	if err := k.decodeRow(t, row, buf); err != nil {
		panic("kernels: Dot on an unchecked row: " + err.Error())
	}
	return k.dotF32Slices(buf, x)
}

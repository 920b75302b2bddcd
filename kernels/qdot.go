package kernels

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/stratactl/stratactl/quant"
)

// Quantized dot products: a weight row in its stored type against
// activations quantized once per row in the type ggml pairs it with (its
// vec_dot_type): Q8_0 for Q8_0, Q4_0, IQ4_NL, Q2_0 and MXFP4. IQ3_S, the
// K-quants Q2_K..Q6_K and IQ4_XS, IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S,
// IQ1_M, which ggml pairs with Q8_K (one float scale per 256
// activations), take the same Q8_0 activations here: a scale per 32
// activations has no larger error (the amax of 32 values is at most that of
// the 256 around them; TestDotQ8KFixtureError measures the K-quants' RMS
// error 14-24% lower), costs one vector multiply more per 256 weights, and
// one activation format serves every type. (BF16 pairs with bfloat16
// activations: qdot_bf16.go.) This is the fast mode; Dot (float32
// activations) stays the exact reference mode.
//
// The order, on every path: the row is cut into sub-blocks of 32 weights s =
// 0, 1, ... Each sub-block's integer dot product sumi_s (exact in int32)
// is turned into term_s = float32(sumi_s) * (dw_s * dx_s), each product
// rounded to float32 (no FMA), where dw_s is the weight scale of the block
// holding s and dx_s the activation block's scale. term_s is added to lane
// s%8 of 8 float32 lanes (zero at the start), and the lanes are folded as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). The integer part is exact, so a
// vector path only has to keep the float steps in this order.
//
// The K-quants (qdot_k.go) keep the sub-blocks, lanes and fold; only the
// term differs. Sub-block s is 32 weights d*sc_h*q_j - dmin*m_h of one
// 256-weight block, d and dmin its fp16 scales, q_j its integer codes, sc_h
// and m_h the integer scale and min of the 16-weight half h = j/16 (the
// same for both halves in Q4_K and Q5_K; Q3_K and Q6_K have signed scales
// and no min). With A_s = sum_j sc_h*q_j*x_j and B_s = sum_j m_h*x_j, both
// exact in int32,
//   term_s = float32(A_s)*(d*dx_s) - float32(B_s)*(dmin*dx_s)  (Q2_K, Q4_K, Q5_K)
//   term_s = float32(A_s)*(d*dx_s)                             (Q3_K, Q6_K)
// each product and the difference rounded to float32 (no FMA).
//
// IQ4_XS, IQ3_XXS and IQ2_XXS (256-weight blocks) and MXFP4 (32) have one
// factor per sub-block, quant's own: IQ4_XS's d*(ls-32) from its 6-bit
// scale, IQ3_XXS's d*(0.5+ls)*0.5, IQ2_XXS's d*(0.5+ls)*0.25, MXFP4's E8M0
// 2^(e-128) (a float32 subnormal for e < 2); dw_s is that factor and the
// integers are the codebook or signed grid values (qdot_iq.go). IQ2_XS and
// IQ2_S have a scale sc_h per 16-weight half h; their factor d*(0.5+sc_h)*0.25
// is exactly (d*0.125)*(2*sc_h+1), so with dw_s = d*0.125
//   term_s = float32((2*sc_0+1)*sumi_lo + (2*sc_1+1)*sumi_hi) * (dw_s*dx_s)
// sumi_lo and sumi_hi the integer dot products of the halves (exact in int32).
// IQ1_S and IQ1_M take grid + delta (delta = +-1/8) as the integer
// 8*grid +- 1 with 1/8 in the factor: IQ1_S one factor d*(2*sc+1)*0.125 per
// sub-block, IQ1_M the two-half term with its scales per 16 weights.

// Q8Row is a row of activations quantized to Q8_0 blocks by quant's Q8_0
// quantizer (ggml's reference: d = amax/127 stored as fp16, codes from the
// unrounded d), kept split for the kernels: the codes, 32 per block, and
// each block's scale as the float32 value of its fp16. The codes are never
// -128 (the quantizer's range is -127..127), which the vector kernels rely
// on; only QuantizeQ8Row fills a Q8Row.
type Q8Row struct {
	qs   []int8
	d    []float32
	sums []int32 // per block, the sum of its codes
	// q2 is qs in the plane order of the Q2_0 row kernel, per group of
	// 256 codes (zero-padded like qs): q2[64k+16b+i] = qs[64b+4i+k].
	q2 []int8
	// q2t is, where the row ends in a partial group (qs not a whole number
	// of 256), that group's first two blocks of q2 twice, plane by plane:
	// q2t[64k+32h+j] = q2[256g+64k+j] for h = 0, 1 and j < 32, g the
	// partial group (the four-row Q2_0 kernel runs two rows' last one or
	// two blocks in one register); empty otherwise.
	q2t []int8
}

// padded reports whether the row's buffers reach, with zeros, to the end
// of the group of 8 blocks that starts at block s0 (QuantizeQ8Row's rows
// do), so a vector kernel may run that whole group.
func (r *Q8Row) padded(s0 int) bool {
	return cap(r.qs) >= 32*(s0+8) && cap(r.d) >= s0+8 && cap(r.sums) >= s0+8
}

// Len is the number of activations in the row.
func (r *Q8Row) Len() int { return len(r.qs) }

// QuantizeQ8Row quantizes x (len(x) a multiple of 32) into r, reusing r's
// buffers.
func QuantizeQ8Row(x []float32, r *Q8Row) error { return host.quantizeQ8Row(x, r) }

func (k *kernelSet) quantizeQ8Row(x []float32, r *Q8Row) error {
	n := len(x)
	if n%32 != 0 {
		return fmt.Errorf("quantize activations to Q8_0: %d values, not a multiple of 32", n)
	}
	nb := n / 32
	// Capacity for whole groups of 8 blocks, the padding zero: the vector
	// kernels run a partial last group over it (see Q8Row.padded).
	pb := (nb + 7) / 8 * 8
	if cap(r.d) < pb {
		r.qs = make([]int8, 32*pb)
		r.d = make([]float32, pb)
		r.sums = make([]int32, pb)
		r.q2 = make([]int8, 32*pb)
	}
	r.qs, r.d, r.sums = r.qs[:n], r.d[:nb], r.sums[:nb]
	clear(r.qs[n : 32*pb])
	clear(r.d[nb:pb])
	clear(r.sums[nb:pb])
	if k.q8quant == nil || !k.q8quant(x, r) {
		for b := 0; b < nb; b++ {
			codes := (*[32]int8)(r.qs[32*b:])
			r.d[b] = quant.FP16ToFloat32(quant.Q8_0Block((*[32]float32)(x[32*b:]), codes))
			var sum int32
			for _, c := range codes {
				sum += int32(c)
			}
			r.sums[b] = sum
		}
		q2PlaneOrder(r.q2[:32*pb], r.qs[:32*pb])
	}
	r.q2 = r.q2[:n]
	r.q2t = q2TailPlanes(r.q2t, r.q2[:32*pb], nb)
	return nil
}

// q2PlaneOrder writes each group of 256 codes of qs in Q8Row.q2's order.
func q2PlaneOrder(dst, qs []int8) {
	for g := 0; g+256 <= len(qs); g += 256 {
		src, d := (*[256]int8)(qs[g:]), (*[256]int8)(dst[g:])
		for b := 0; b < 4; b++ {
			for i := 0; i < 16; i++ {
				c := src[64*b+4*i : 64*b+4*i+4]
				d[16*b+i], d[64+16*b+i], d[128+16*b+i], d[192+16*b+i] = c[0], c[1], c[2], c[3]
			}
		}
	}
}

// q2TailPlanes fills dst (reused, 256 bytes) as Q8Row.q2t from the
// plane-order codes q2 of a row of nb blocks of 32, or returns it empty
// where the row has no partial group.
func q2TailPlanes(dst, q2 []int8, nb int) []int8 {
	if nb%8 == 0 {
		return dst[:0]
	}
	if cap(dst) < 256 {
		dst = make([]int8, 256)
	}
	dst = dst[:256]
	g := q2[256*(nb/8):]
	for k := 0; k < 4; k++ {
		copy(dst[64*k:64*k+32], g[64*k:64*k+32])
		copy(dst[64*k+32:64*k+64], g[64*k:64*k+32])
	}
	return dst
}

// VecDotQ8 reports whether DotQ8 takes weights of type t.
func VecDotQ8(t quant.Type) bool {
	switch t {
	case quant.Q8_0, quant.Q4_0, quant.IQ4_NL, quant.Q2_0, quant.IQ3_S:
		return true
	case quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K:
		return true
	case quant.IQ4_XS, quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.MXFP4:
		return true
	case quant.IQ1_S, quant.IQ1_M:
		return true
	}
	return false
}

// DotQ8 is the dot product of a row of x.Len() weights of type t (VecDotQ8)
// with the quantized activations x, in the order above. The row must hold
// at least the row's bytes and x.Len() must be a whole number of t's blocks;
// DotQ8 panics otherwise (the caller checks shapes once per matrix).
func DotQ8(t quant.Type, row []byte, x *Q8Row) float32 { return host.dotQ8(t, row, x) }

func (k *kernelSet) dotQ8(t quant.Type, row []byte, x *Q8Row) float32 {
	checkDotQ8(t, len(row), x)
	return dotQ8With(k.q8dot[t], t, row, x)
}

// checkDotQ8 panics unless DotQ8 takes a row of t of rowBytes bytes
// against x.
func checkDotQ8(t quant.Type, rowBytes int, x *Q8Row) {
	n := x.Len()
	ti, ok := quant.Info(t)
	if !ok || !VecDotQ8(t) || n%ti.BlockElements != 0 || rowBytes < n/ti.BlockElements*ti.BlockBytes {
		panic(fmt.Sprintf("kernels: DotQ8 on %s: %d activations, %d row bytes", t, n, rowBytes))
	}
}

// dotQ8With is DotQ8 of a checked row through f, the kernelSet's q8dot
// entry for t (nil: the portable terms alone).
func dotQ8With(f func(row []byte, x *Q8Row) ([8]float32, int), t quant.Type, row []byte, x *Q8Row) float32 {
	var l [8]float32
	s0 := 0
	if f != nil {
		l, s0 = f(row, x)
	}
	if s0 < len(x.d) {
		q8DotTail(t, row, x, s0, &l)
	}
	return foldLanes(&l)
}

// foldLanes is the fixed 8-to-1 fold ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
func foldLanes(l *[8]float32) float32 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

// q8DotTail adds the terms of sub-blocks s0.. to the lanes, portably.
func q8DotTail(t quant.Type, row []byte, x *Q8Row, s0 int, l *[8]float32) {
	if isKQuant(t) {
		kDotTail(t, row, x, s0, l)
		return
	}
	if isIQHalves(t) {
		iqHalvesDotTail(t, row, x, s0, l)
		return
	}
	var w [32]int8
	for s := s0; s < len(x.d); s++ {
		m, dw := weightSub(t, row, s, &w)
		l[s%8] += q8Term(&w, m, dw, x, s)
	}
}

// q8Term is sub-block s's term: float32(m * sum w*x) * (dw * dx_s).
func q8Term(w *[32]int8, m int32, dw float32, x *Q8Row, s int) float32 {
	xs := x.qs[32*s : 32*s+32]
	var sumi int32
	for j := range w {
		sumi += int32(w[j]) * int32(xs[j])
	}
	scale := float32(dw * x.d[s])
	return float32(float32(m*sumi) * scale)
}

// q4_0Values maps a Q4_0 nibble to its integer value, nibble - 8.
var q4_0Values = [16]int8{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}

// q2Codes maps a byte of Q2_0 codes to its four weights, code - 1.
var q2Codes = func() (tab [256][4]int8) {
	for b := range tab {
		for j := range tab[b] {
			tab[b][j] = int8(b>>(2*j)&3) - 1
		}
	}
	return
}()

// iq3sGrid is quant's IQ3_S grid.
var iq3sGrid = quant.IQ3SGrid()

// weightSub writes the integer weights of sub-block s (32 weights) of a row
// of type t to w and returns their multiplier and scale, as quant's
// decoders define them: weight = scale * (multiplier * integer), exactly.
// The multiplier is IQ3_S's 1+2*scale (its grid values times signs are the
// integers); 1 for the others.
func weightSub(t quant.Type, row []byte, s int, w *[32]int8) (int32, float32) {
	switch t {
	case quant.Q8_0:
		blk := row[34*s : 34*s+34]
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 32), blk[2:])
		return 1, quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
	case quant.Q4_0, quant.IQ4_NL:
		table := &quant.KvaluesIQ4NL
		if t == quant.Q4_0 {
			table = &q4_0Values
		}
		blk := row[18*s : 18*s+18]
		for j, b := range (*[16]byte)(blk[2:]) {
			w[j], w[j+16] = table[b&15], table[b>>4]
		}
		return 1, quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
	case quant.Q2_0:
		// Weight e of the block is bits 2*(e%4) of byte e/4, minus 1.
		blk := row[18*(s/2) : 18*(s/2)+18]
		for j, b := range (*[8]byte)(blk[2+8*(s%2):]) {
			*(*[4]int8)(w[4*j:]) = q2Codes[b]
		}
		return 1, quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
	case quant.IQ3_S:
		// Block: fp16 d, qs[64], qh[8], signs[32], scales[4]; s%8 is the
		// sub-block within it.
		blk := row[110*(s/8) : 110*(s/8)+110]
		sb := s % 8
		qs, qh, signs := blk[2+8*sb:10+8*sb], blk[66+sb], blk[74+4*sb:78+4*sb]
		for k := 0; k < 8; k++ {
			g := iq3sGrid[int(qs[k])|int(qh>>k&1)<<8]
			for j := 0; j < 4; j++ {
				e := 4*k + j
				v := int8(byte(g >> (8 * j)))
				if signs[e/8]>>(e%8)&1 != 0 {
					v = -v
				}
				w[e] = v
			}
		}
		return int32(1 + 2*int(blk[106+sb/2]>>(4*(sb%2))&15)), quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
	}
	if dw, ok := iqWeightSub(t, row, s, w); ok {
		return 1, dw
	}
	panic("kernels: no integer weights for " + t.String())
}

// decodedGroups is how many groups of 8 sub-blocks DotQ8Rows decodes at a
// time (2048 weights: 2 KiB of codes, in L1 beside the activations).
const decodedGroups = 8

// q8Decoded is a row's weights decoded for DotQ8Rows: per group of 8
// sub-blocks, 256 integer weights, 8 multipliers and 8 scales (weightSub's).
type q8Decoded struct {
	w  [decodedGroups * 256]int8
	m  [decodedGroups * 8]int16
	dw [decodedGroups * 8]float32
	// mh are the multipliers of the types with a scale per 16-weight half
	// (isIQHalves: iqHalvesSub's m0, m1 per sub-block; m is then 0).
	mh [decodedGroups * 16]int16
}

// DotQ8Rows sets out[r] = DotQ8(t, row, xs[r]) for every r, bit for bit,
// decoding the row's weights once for all the activation rows (qmm.go's
// tiles) where t's DotQ8 is qdot.go's term per sub-block, else one DotQ8
// per row. Every xs[r] has the same length; out has at least len(xs)
// elements.
func DotQ8Rows(t quant.Type, row []byte, xs []*Q8Row, out []float32) {
	host.dotQ8Rows(t, row, xs, out)
}

func (k *kernelSet) dotQ8Rows(t quant.Type, row []byte, xs []*Q8Row, out []float32) {
	out = out[:len(xs)]
	if len(xs) == 0 {
		return
	}
	n := xs[0].Len()
	for _, x := range xs {
		if x.Len() != n {
			panic(fmt.Sprintf("kernels: DotQ8Rows with rows of %d and %d activations", n, x.Len()))
		}
	}
	if !tiledQ8(t) || len(xs) == 1 || len(xs) < k.tileMinInputs(t, n) || n == 0 || !tilePadded(xs, n/32) {
		checkDotQ8(t, len(row), xs[0]) // every x is n long
		f := k.q8dot[t]
		for r, x := range xs {
			out[r] = dotQ8With(f, t, row, x)
		}
		return
	}
	ti, _ := quant.Info(t)
	if n%ti.BlockElements != 0 || len(row) < n/ti.BlockElements*ti.BlockBytes {
		panic(fmt.Sprintf("kernels: DotQ8Rows on %s: %d activations, %d row bytes", t, n, len(row)))
	}
	rb := n / ti.BlockElements * ti.BlockBytes
	m := Matrix{Type: t, Data: row[:rb], Rows: 1, Cols: n, RowBytes: rb}
	sc := getQmmScratch()
	outs := make([][]float32, len(xs))
	for r := range outs {
		outs[r] = out[r : r+1]
	}
	k.matMulQ8Tiles(&m, xs, outs, 0, 1, sc)
	qmmScratchPool.Put(sc)
}

// decodeGroupsPortable is the decoder DotQ8Rows's vector kernels are
// tested against: groups g0..g0+ng-1 of the row, by weightSub.
func decodeGroupsPortable(t quant.Type, row []byte, g0, ng int, d *q8Decoded) {
	for g := 0; g < ng; g++ {
		for j := 0; j < 8; j++ {
			w := (*[32]int8)(d.w[256*g+32*j:])
			m, dw := weightSub(t, row, 8*(g0+g)+j, w)
			d.m[8*g+j], d.dw[8*g+j] = int16(m), dw
		}
	}
}

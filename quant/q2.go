package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Q2_0 block geometry: an fp16 scale then 64 two-bit codes.
const (
	Q2BlockElements = 64
	Q2BlockBytes    = 18
)

// DefaultQ2Candidates is the number of candidate scales per sign that
// Q2Search tries when QuantizeOptions.Q2Candidates is 0. Chosen from the
// relative-MSE curve on gaussian and real expert blocks (docs/QUALITY.md):
// more candidates buy under 0.5% error and cost time linearly.
const DefaultQ2Candidates = 8

// The candidate scales of one sign are spread evenly over
// [q2RatioLo, q2RatioHi] x max|x|. Below about amax/2 the largest weight
// clamps at 2d; near 1.0 the grid degenerates to ggml's ternary rule.
const (
	q2RatioLo = 0.30
	q2RatioHi = 0.90
)

// q2ScaleMax caps |d| at the largest finite fp16 so that a block with huge
// or infinite values still stores a finite scale.
const q2ScaleMax = 65504

// Q2SearchKernels are Q2Search's two hot loops. Package kernels supplies
// vector versions; every implementation must give the same bits as
// Q2SearchRef, which fixes the arithmetic: float32 products rounded before
// each addition (no FMA), lane j%8 accumulating elements j = lane, lane+8,
// ... in order from 0, and the eight lanes reduced as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
type Q2SearchKernels struct {
	// Score, for each inverse scale inv[k], takes the levels
	// l_j = RoundToEven(clamp(x_j*inv[k], -1, 2)) and writes
	// out[2k] = sum w_j*x_j*l_j and out[2k+1] = sum w_j*l_j*l_j, computed as
	// (w_j*x_j)*l_j and (w_j*l_j)*l_j; w == nil means every w_j = 1 (the
	// products x_j*l_j and l_j*l_j).
	Score func(x, w *[64]float32, inv []float32, out []float32)
	// Pack writes the 16 code bytes of levels computed as in Score:
	// code_j = l_j + 1, element j at bits 2*(j%4) of byte j/4.
	Pack func(x *[64]float32, inv float32, qs []byte)
}

// Q2SearchRef is the portable reference of Q2Search's hot loops.
var Q2SearchRef = Q2SearchKernels{Score: q2ScoreRef, Pack: q2PackRef}

func init() {
	quantizers[Q2_0] = func(src []float32, dst []byte, opt *QuantizeOptions) {
		quantizeQ2_0(src, dst, opt, &Q2SearchRef)
	}
}

// QuantizeQ2_0With is Quantize(Q2_0, ...) with k running Q2Search's hot
// loops (the other modes do not use k). For the same input it writes the
// same bytes whatever k is, as long as k honours Q2SearchKernels' contract.
// src may be any whole number of blocks; with importance weights it must
// start at a row boundary (column c of the weights applies to element i
// with i % RowLen == c).
func QuantizeQ2_0With(src []float32, dst []byte, opt *QuantizeOptions, k *Q2SearchKernels) error {
	want, err := RowBytes(Q2_0, int64(len(src)))
	if err != nil {
		return err
	}
	if int64(len(dst)) != want {
		return fmt.Errorf("quantize %s: %d bytes for %d weights, want %d", Q2_0, len(dst), len(src), want)
	}
	if opt != nil && opt.Importance != nil {
		if opt.RowLen <= 0 || len(opt.Importance) != opt.RowLen || len(src)%opt.RowLen != 0 {
			return fmt.Errorf("quantize %s: importance of %d values does not fit rows of %d", Q2_0, len(opt.Importance), opt.RowLen)
		}
	}
	quantizeQ2_0(src, dst, opt, k)
	return nil
}

func quantizeQ2_0(src []float32, dst []byte, opt *QuantizeOptions, k *Q2SearchKernels) {
	mode := Q2Search
	if opt != nil {
		mode = opt.Q2Mode
	}
	switch mode {
	case Q2GGML:
		for b := 0; b < len(src)/Q2BlockElements; b++ {
			q2BlockGGML(src[b*Q2BlockElements:][:Q2BlockElements], dst[b*Q2BlockBytes:][:Q2BlockBytes])
		}
	case Q2Field:
		for b := 0; b < len(src)/Q2BlockElements; b++ {
			q2BlockField(src[b*Q2BlockElements:][:Q2BlockElements], dst[b*Q2BlockBytes:][:Q2BlockBytes])
		}
	default:
		s := newQ2Searcher(opt, k)
		for b := 0; b < len(src)/Q2BlockElements; b++ {
			s.block(src[b*Q2BlockElements:][:Q2BlockElements], dst[b*Q2BlockBytes:][:Q2BlockBytes], b*Q2BlockElements)
		}
	}
}

// q2BlockGGML is ggml's quantize_row_q2_0_ref: d = max|x| (codes from the
// unrounded d, C roundf, clamped to 0..3). NaN elements get code 1 (zero);
// ggml's result there is undefined C.
func q2BlockGGML(x []float32, out []byte) {
	var amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax = a
		}
	}
	d := amax
	var id float32
	if d > 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(out, Float32ToFP16(d))
	qs := out[2:18]
	clear(qs)
	for j, v := range x {
		t := v * id
		c := 1
		if t == t {
			c = int(math.Round(float64(t))) + 1
			c = min(max(c, 0), 3)
		}
		qs[j/4] |= byte(c) << (2 * (j % 4))
	}
}

// q2BlockField is the rule in common use, kept for comparison: nine
// positive scales d = {0.5, 0.5625, ..., 1.0} x max|x|, codes by C roundf,
// each scored by squared error with the unrounded d; the best d is then
// stored as fp16. Importance is ignored. NaN elements get code 1.
func q2BlockField(x []float32, out []byte) {
	var amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax = a
		}
	}
	bestD, bestErr := float32(0), float32(math.Inf(1))
	if amax > 0 && amax <= math.MaxFloat32 {
		for i := 0; i <= 8; i++ {
			d := amax * (0.5 + float32(i)/16)
			id := 1 / d
			var e float32
			for _, v := range x {
				if v != v {
					continue
				}
				c := min(max(float32(math.Round(float64(v*id))), -1), 2)
				r := v - float32(c*d)
				e += float32(r * r)
			}
			if e < bestErr {
				bestErr, bestD = e, d
			}
		}
	}
	binary.LittleEndian.PutUint16(out, Float32ToFP16(bestD))
	qs := out[2:18]
	clear(qs)
	var id float32
	if bestD > 0 {
		id = 1 / bestD
	}
	for j, v := range x {
		c := 1
		if t := v * id; t == t {
			c = int(min(max(math.Round(float64(t)), -1), 2)) + 1
		}
		qs[j/4] |= byte(c) << (2 * (j % 4))
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// q2Searcher holds the per-call state of Q2Search: the candidate ratios,
// the weights and scratch space, so that blocks allocate nothing.
type q2Searcher struct {
	k      *Q2SearchKernels
	ratios []float32
	imp    []float32 // per column, or nil
	rowLen int
	w      [64]float32
	x      [64]float32
	inv    []float32
	scales []float32
	out    []float32
	one    [1]float32
	oneOut [2]float32
}

// Q2Blocks quantizes Q2_0 blocks one at a time with one set of options,
// as QuantizeQ2_0With would (the same bytes), reusing its state: for a
// caller that quantizes many single blocks. Importance weights, if any, are
// read at each Block call (the caller may change their values in place).
type Q2Blocks struct{ s *q2Searcher }

// NewQ2Blocks returns a Q2Blocks for opt (mode Q2Search; RowLen is not
// used: each block is a row of 64) with k's hot loops.
func NewQ2Blocks(opt *QuantizeOptions, k *Q2SearchKernels) (*Q2Blocks, error) {
	if opt != nil && opt.Q2Mode != Q2Search {
		return nil, fmt.Errorf("quantize %s: single blocks take the search mode only, not mode %d", Q2_0, opt.Q2Mode)
	}
	if opt != nil && opt.Importance != nil && len(opt.Importance) != Q2BlockElements {
		return nil, fmt.Errorf("quantize %s: importance of %d values for blocks of %d", Q2_0, len(opt.Importance), Q2BlockElements)
	}
	o := QuantizeOptions{}
	if opt != nil {
		o = *opt
	}
	o.RowLen = Q2BlockElements
	return &Q2Blocks{s: newQ2Searcher(&o, k)}, nil
}

// Block writes the Q2_0 block of the 64 weights src to dst (18 bytes).
func (b *Q2Blocks) Block(src *[Q2BlockElements]float32, dst *[Q2BlockBytes]byte) {
	b.s.block(src[:], dst[:], 0)
}

func newQ2Searcher(opt *QuantizeOptions, k *Q2SearchKernels) *q2Searcher {
	n := DefaultQ2Candidates
	s := &q2Searcher{k: k}
	if opt != nil {
		if opt.Q2Candidates > 0 {
			n = opt.Q2Candidates
		}
		if opt.Importance != nil {
			s.imp, s.rowLen = opt.Importance, opt.RowLen
		}
	}
	s.ratios = q2SearchRatios(n)
	s.inv = make([]float32, 0, 2*n)
	s.scales = make([]float32, 0, 2*n)
	s.out = make([]float32, 4*n)
	return s
}

// Q2BlockWeights sets w to the importance imp of one block as the search
// weighs it: a weight is kept when its bits are those of a positive finite
// float32, 1..0x7f7fffff (what v > 0 && v <= MaxFloat32 is), else 0. It
// reports whether any was kept (none: the search runs unweighted).
func Q2BlockWeights(w, imp *[64]float32) bool {
	var any uint32
	for j, v := range imp {
		b := math.Float32bits(v)
		if b-1 >= 0x7f7fffff {
			b = 0
		}
		any |= b
		w[j] = math.Float32frombits(b)
	}
	return any != 0
}

// Q2SearchRatios are the candidate ratios d/max|x| of one sign that the
// search takes with QuantizeOptions.Q2Candidates q (0: the default), in
// the order it scores them (each sign's scale then the negated ones).
func Q2SearchRatios(q int) []float32 {
	if q <= 0 {
		q = DefaultQ2Candidates
	}
	return q2SearchRatios(q)
}

// q2SearchRatios are the n candidate ratios d/max|x| of one sign.
func q2SearchRatios(n int) []float32 {
	r := make([]float32, n)
	for i := range r {
		if n == 1 {
			r[i] = (q2RatioLo + q2RatioHi) / 2
			continue
		}
		r[i] = float32(q2RatioLo + (q2RatioHi-q2RatioLo)*float64(i)/float64(n-1))
	}
	return r
}

// q2Score is sum w x^2 minus the weighted squared error of scale d given
// the sums of Score: 2 d sxl - d^2 sll. Larger is better.
func q2Score(d, sxl, sll float32) float32 {
	return d * (float32(2*sxl) - float32(d*sll))
}

// block quantizes one 64-element block starting at element base of src.
//
// Non-finite input: NaN counts as 0 and +-Inf as +-65504 (the largest
// fp16), and |d| never exceeds 65504, so the stored block is always finite.
// A block whose candidate scales all round to fp16 zero (max|x| below about
// 1e-7) is stored as zeros.
func (s *q2Searcher) block(src []float32, out []byte, base int) {
	x := (*[64]float32)(src)
	var amaxBits uint32
	for _, v := range x {
		amaxBits = max(amaxBits, math.Float32bits(v)&^(1<<31))
	}
	if amaxBits >= 0x7f800000 {
		for j, v := range x {
			switch {
			case v != v:
				s.x[j] = 0
			case v > q2ScaleMax:
				s.x[j] = min(v, q2ScaleMax*2)
			case v < -q2ScaleMax:
				s.x[j] = max(v, -q2ScaleMax*2)
			default:
				s.x[j] = v
			}
		}
		x = &s.x
		amaxBits = 0
		for _, v := range x {
			amaxBits = max(amaxBits, math.Float32bits(v)&^(1<<31))
		}
	}
	amax := math.Float32frombits(amaxBits)
	var w *[64]float32
	if s.imp != nil {
		w = s.weights(base)
	}

	// Candidates: both signs, each d rounded to the fp16 the file will hold;
	// scales that round to zero cannot be stored and are skipped.
	// fp16 rounding is symmetric, so the negative candidates are the
	// positive ones negated.
	s.inv, s.scales = s.inv[:0], s.scales[:0]
	for _, r := range s.ratios {
		if d := roundFP16(min(amax*r, q2ScaleMax)); d != 0 {
			s.scales = append(s.scales, d)
			s.inv = append(s.inv, 1/d)
		}
	}
	for i, n := 0, len(s.scales); i < n; i++ {
		s.scales = append(s.scales, -s.scales[i])
		s.inv = append(s.inv, -s.inv[i])
	}
	qs := out[2:Q2BlockBytes]
	if len(s.inv) == 0 {
		binary.LittleEndian.PutUint16(out, 0)
		for i := range qs {
			qs[i] = 0x55 // code 1 everywhere: zeros
		}
		return
	}
	s.k.Score(x, w, s.inv, s.out)
	best := 0
	bestScore := q2Score(s.scales[0], s.out[0], s.out[1])
	for c := 1; c < len(s.inv); c++ {
		if sc := q2Score(s.scales[c], s.out[2*c], s.out[2*c+1]); sc > bestScore {
			best, bestScore = c, sc
		}
	}
	bestD, bestInv := s.scales[best], s.inv[best]
	sxl, sll := s.out[2*best], s.out[2*best+1]

	// Least-squares refinement: with the codes fixed the best scale is
	// sxl/sll; round it to fp16, re-assign the codes and keep it if better.
	for range q2Refinements {
		if sll == 0 {
			break
		}
		d := sxl / sll
		if abs32(d) > q2ScaleMax {
			d = float32(math.Copysign(q2ScaleMax, float64(d)))
		}
		d = roundFP16(d)
		if d == 0 || d == bestD {
			break
		}
		s.one[0] = 1 / d
		s.k.Score(x, w, s.one[:], s.oneOut[:])
		sc := q2Score(d, s.oneOut[0], s.oneOut[1])
		if !(sc > bestScore) {
			break
		}
		bestD, bestInv, bestScore = d, s.one[0], sc
		sxl, sll = s.oneOut[0], s.oneOut[1]
	}
	binary.LittleEndian.PutUint16(out, Float32ToFP16(bestD))
	s.k.Pack(x, bestInv, qs)
}

// q2Refinements bounds the least-squares iterations; the second one
// rarely changes the scale and a third almost never does.
const q2Refinements = 2

// weights gathers the importance of the 64 columns of the block starting
// at element base. Negative or non-finite importance counts as 0; a block
// whose weights are all 0 falls back to uniform weights so that it still
// gets a sensible scale.
func (s *q2Searcher) weights(base int) *[64]float32 {
	c := base % s.rowLen
	if c+len(s.w) <= s.rowLen {
		if !Q2BlockWeights(&s.w, (*[64]float32)(s.imp[c:c+len(s.w)])) {
			return nil
		}
		return &s.w
	}
	var any bool
	for j := range s.w {
		v := s.imp[c]
		if !(v > 0) || v > math.MaxFloat32 {
			v = 0
		}
		any = any || v > 0
		s.w[j] = v
		if c++; c == s.rowLen {
			c = 0
		}
	}
	if !any {
		return nil
	}
	return &s.w
}

// q2Level is the level of x at inverse scale inv: round-to-even of x*inv
// clamped to [-1, 2].
func q2Level(x, inv float32) float32 {
	t := x * inv
	t = min(max(t, -1), 2)
	return float32(math.RoundToEven(float64(t)))
}

func q2Reduce8(a *[8]float32) float32 {
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

func q2ScoreRef(x, w *[64]float32, inv []float32, out []float32) {
	for k, iv := range inv {
		var axl, all [8]float32
		for j, v := range x {
			l := q2Level(v, iv)
			if w == nil {
				axl[j%8] += float32(v * l)
				all[j%8] += float32(l * l)
			} else {
				axl[j%8] += float32(float32(w[j]*v) * l)
				all[j%8] += float32(float32(w[j]*l) * l)
			}
		}
		out[2*k] = q2Reduce8(&axl)
		out[2*k+1] = q2Reduce8(&all)
	}
}

func q2PackRef(x *[64]float32, inv float32, qs []byte) {
	for i := range 16 {
		var b byte
		for k := range 4 {
			b |= byte(q2Level(x[4*i+k], inv)+1) << (2 * k)
		}
		qs[i] = b
	}
}

// roundFP16 is f as the fp16 field of a block will hold it. In fp16's
// normal range that is f with its significand rounded to 11 bits (ties to
// even), done here on the float32 bits; elsewhere the full conversion.
func roundFP16(f float32) float32 {
	b := math.Float32bits(f)
	if e := b >> 23 & 0xff; e >= 127-14 && e < 127+15 {
		b += 0xfff + (b>>13)&1
		b &^= 0x1fff
		if b&0x7fffffff < 0x477ff000 { // 65520 and above round to inf in fp16
			return math.Float32frombits(b)
		}
	}
	return FP16ToFloat32(Float32ToFP16(f))
}

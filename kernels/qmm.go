package kernels

import (
	"fmt"
	"sync"

	"github.com/stratactl/stratactl/quant"
)

// Tiled quantized matrix products, the fast mode's batched prefill
// (MatMulQ8, DotQ8Rows). A tile is qmmRows weight rows against every
// activation row of the call, taken in chunks of decodedGroups groups of 8
// sub-blocks (2048 weights): each weight row's chunk is decoded once into
// integer weights, multipliers and scales (q8Decoded), then multiplied
// with the activation rows two at a time, so the decoded chunks of the
// tile's rows and the two activation rows' chunk stay in L1 while every
// weight byte is read once per call, not once per token. Each output
// element's lanes get their terms in qdot.go's order, so every result is
// DotQ8's bits whatever the tiling, the thread count or the batch.
//
// A last partial group (a row of 640 weights has 20 sub-blocks: two whole
// groups and 4 more) is decoded with zero weights and scales after the
// row's end, against the zero padding QuantizeQ8Row leaves, so its padded
// terms are +0 and leave the lanes as they are (a lane starts at +0 and is
// never -0).

// qmmRows is how many weight rows one tile decodes at a time.
const qmmRows = 16

// tiledQ8 reports whether the tiled path takes weights of type t: the types
// whose DotQ8 is qdot.go's term per 32-weight sub-block of weightSub's
// integers, multiplier and scale (others run one DotQ8 per element).
func tiledQ8(t quant.Type) bool {
	switch t {
	case quant.Q8_0, quant.Q4_0, quant.IQ4_NL, quant.Q2_0, quant.IQ3_S:
		return true
	}
	return false
}

// qmmScratch is one worker's tile: the decoded chunks of its rows and the
// lanes of every (row, activation row) output of the tile.
type qmmScratch struct {
	d     [qmmRows]q8Decoded
	lanes [][8]float32
}

// qmmScratchPool keeps the workers' tiles between calls.
var qmmScratchPool sync.Pool

func getQmmScratch() *qmmScratch {
	if sc, ok := qmmScratchPool.Get().(*qmmScratch); ok {
		return sc
	}
	return new(qmmScratch)
}

// tilePadded reports whether every activation row is zero-padded to whole
// groups (QuantizeQ8Row's rows are), as the tiled path needs.
func tilePadded(xs []*Q8Row, nsub int) bool {
	last := (nsub - 1) / 8 * 8
	for _, x := range xs {
		if !x.padded(last) {
			return false
		}
	}
	return true
}

// matMulQ8Tiles computes out[t*ld+r] = DotQ8(t, row r of m, xs[t]) for the
// rows r0 <= r < r1 (m.Cols a positive multiple of 32; xs padded), with
// k's kernels.
func (k *kernelSet) matMulQ8Tiles(m *Matrix, xs []*Q8Row, out []float32, ld, r0, r1 int, sc *qmmScratch) {
	ntok := len(xs)
	nsub := m.Cols / 32
	groups := (nsub + 7) / 8
	if cap(sc.lanes) < qmmRows*ntok {
		sc.lanes = make([][8]float32, qmmRows*ntok)
	}
	lanes := sc.lanes[:qmmRows*ntok]
	for rt := r0; rt < r1; rt += qmmRows {
		nr := min(qmmRows, r1-rt)
		clear(lanes)
		for g0 := 0; g0 < groups; g0 += decodedGroups {
			ng := min(decodedGroups, groups-g0)
			for i := 0; i < nr; i++ {
				k.decodeChunk(m.Type, m.Row(rt+i), nsub, g0, ng, &sc.d[i])
			}
			t := 0
			for ; t+1 < ntok; t += 2 {
				for i := 0; i < nr; i++ {
					k.tileDot2(&sc.d[i], ng, xs[t], xs[t+1], g0, &lanes[i*ntok+t], &lanes[i*ntok+t+1])
				}
			}
			if t < ntok {
				for i := 0; i < nr; i++ {
					k.tileDot1(&sc.d[i], ng, xs[t], g0, &lanes[i*ntok+t])
				}
			}
		}
		for i := 0; i < nr; i++ {
			for t := 0; t < ntok; t++ {
				out[t*ld+rt+i] = foldLanes(&lanes[i*ntok+t])
			}
		}
	}
}

// decodeChunk decodes groups g0..g0+ng-1 of a row of nsub sub-blocks into
// d, the sub-blocks past nsub as zero weights with multiplier and scale 0.
func (k *kernelSet) decodeChunk(t quant.Type, row []byte, nsub, g0, ng int, d *q8Decoded) {
	whole := min(ng, nsub/8-g0)
	s := 8 * g0
	if whole > 0 {
		if dec := k.q8decode[t]; dec != nil {
			dec(row, g0, whole, d)
			s += 8 * whole
		}
	}
	for ; s < 8*(g0+ng); s++ {
		i := s - 8*g0
		w := (*[32]int8)(d.w[32*i:])
		if s >= nsub {
			*w = [32]int8{}
			d.m[i], d.dw[i] = 0, 0
			continue
		}
		m, dw := weightSub(t, row, s, w)
		d.m[i], d.dw[i] = int16(m), dw
	}
}

// tileDot2 adds the terms of d's ng groups against x0 and x1 (their groups
// g0..) to l0 and l1.
func (k *kernelSet) tileDot2(d *q8Decoded, ng int, x0, x1 *Q8Row, g0 int, l0, l1 *[8]float32) {
	if k.q8dotDecoded2 != nil {
		k.q8dotDecoded2(d, ng, x0, x1, g0, l0, l1)
		return
	}
	k.tileDot1(d, ng, x0, g0, l0)
	k.tileDot1(d, ng, x1, g0, l1)
}

// tileDot1 adds the terms of d's ng groups against x (its groups g0..) to l.
func (k *kernelSet) tileDot1(d *q8Decoded, ng int, x *Q8Row, g0 int, l *[8]float32) {
	if k.q8dotDecoded != nil {
		k.q8dotDecoded(d, ng, x, g0, l)
		return
	}
	xq, xd := x.qs[:cap(x.qs)], x.d[:cap(x.d)]
	for g := 0; g < ng; g++ {
		for j := 0; j < 8; j++ {
			s := 8*(g0+g) + j
			w := d.w[256*g+32*j : 256*g+32*j+32]
			xs := xq[32*s : 32*s+32]
			var sumi int32
			for e, v := range w {
				sumi += int32(v) * int32(xs[e])
			}
			scale := float32(d.dw[8*g+j] * xd[s])
			l[j] += float32(float32(int32(d.m[8*g+j])*sumi) * scale)
		}
	}
}

// checkMatMulQ8 panics on shapes no caller may pass (the engine checks its
// matrices once, at load).
func checkMatMulQ8(m *Matrix, xs []*Q8Row, out []float32) {
	for _, x := range xs {
		m.checkQ8("MatMulQ8", x)
	}
	if len(out) < len(xs)*m.Rows {
		panic(fmt.Sprintf("kernels: MatMulQ8 of %d rows and %d inputs into %d outputs", m.Rows, len(xs), len(out)))
	}
}

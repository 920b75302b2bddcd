package kernels

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/stratactl/stratactl/quant"
)

// The tiled prefill (qmm.go) for the K-quants with a min, Q2_K, Q4_K and
// Q5_K, whose DotQ8 term (qdot.go, qdot_k.go) is
//   term_s = float32(A_s)*(d*dx_s) - float32(B_s)*(dmin*dx_s)
// with A_s = sc_0*sumi_lo + sc_1*sumi_hi (the halves' code sums against the
// activations times their scales) and B_s = m_0*sx_lo + m_1*sx_hi (the
// halves' mins times the sums of the activation codes over each 16). A
// tile's rows are decoded a chunk at a time into kDecoded (kSub's codes,
// scales and mins per half, d and dmin per sub-block); each input's
// activation half sums and scales are gathered once per call into kxGroup
// records, so B_s is one multiply-add of 16 pairs per group and input.
// Every result is DotQ8's bits: the integers are exact and the float steps
// are kTerm's, lane s%8 and the fold as qdot.go has them. A K-quant row is
// whole 256-weight blocks, one group of 8 sub-blocks each, so a chunk has no
// partial group.
//
// Q6_K, which has no min, takes these tiles too where k binds their kernel
// for it (kernelSet.kTiled; else qmm.go's halves tiles, as Q3_K): its codes
// decoded biased to unsigned (q+kCodeBias) and the halves' mins set to the
// bias times their scales, so A - B is the signed codes' A exactly, and the
// term float32(A-B)*(d*dx), kTerm's without a min.

// kMinTiled reports whether t takes the tiles of this file on every kernel
// set.
func kMinTiled(t quant.Type) bool { return kHasMin(t) }

// kTiled reports whether t takes the tiles of this file with k's kernels:
// the types with a min, and those without one that k binds a kernel for.
func (k *kernelSet) kTiled(t quant.Type) bool { return kMinTiled(t) || k.kminTile2[t] != nil }

// kCodeBias is what the tiles of this file add to type t's codes: 0 for
// the types with a min, Q6_K's 32 and Q3_K's 4 (codes from -32 and -4).
func kCodeBias(t quant.Type) int32 {
	switch t {
	case quant.Q6_K:
		return 32
	case quant.Q3_K:
		return 4
	}
	return 0
}

// kminGroups is how many groups of 8 sub-blocks a chunk of the min tiles
// holds (qmm_k_amd64.s's KG): 4, 1024 weights, so a tile's 16 decoded rows
// are 24 KB (half the 8 groups' 48 KB). bench prefill --expert-type q4_k at
// the Qwen3-30B-A3B shape, one thread, ran 232-249 tokens per CPU-second
// with 8, 276-310 with 4, 186-218 with 2 (docs/BENCHMARKS.md).
const kminGroups = 4

// kDecoded is a chunk of kminGroups groups of a K-quant row with a min:
// per sub-block i (of the chunk) its 32 codes at w[32i:], the scales and
// mins of its halves at sc[2i], sc[2i+1] and mn[2i], mn[2i+1] (Q4_K and
// Q5_K: the same for both), its block's d and dmin at d[i] and dmin[i].
// For a type without a min the codes are biased (kCodeBias), the mins the
// bias times the scales and dmin 0.
type kDecoded struct {
	w    [kminGroups * 256]int8
	sc   [kminGroups * 16]int16
	mn   [kminGroups * 16]int16
	d    [kminGroups * 8]float32
	dmin [kminGroups * 8]float32
}

// kxGroup is one input's group of 8 activation sub-blocks as the min tiles
// read it: the blocks' scales and the sums of the codes of each 16, hs[2j]
// and hs[2j+1] for sub-block j's halves (at most 16*128 in magnitude); for
// the types whose halves share their min (Q4_K, Q5_K) hs[2j] is the sum of
// all 32 (the row's block sum, at most 32*127) and hs[2j+1] zero, which
// gives B_s the same integer.
type kxGroup struct {
	dx [8]float32
	hs [16]int16
}

// kxFill writes x's groups as type t's kxGroup records into dst (len(dst)
// groups, x at least 256*len(dst) long).
func kxFill(t quant.Type, x *Q8Row, dst []kxGroup) {
	for g := range dst {
		kx := &dst[g]
		copy(kx.dx[:], x.d[8*g:8*g+8])
		if t == quant.Q4_K || t == quant.Q5_K {
			for j, s := range x.sums[8*g : 8*g+8] {
				kx.hs[2*j], kx.hs[2*j+1] = int16(s), 0
			}
			continue
		}
		// The sums of 16 codes eight bytes at a time: each byte biased by
		// 128 to unsigned, adjacent bytes added into 16-bit fields (at most
		// 4*255 after both words), the fields added by the multiply's top
		// field.
		b := unsafe.Slice((*byte)(unsafe.Pointer(&x.qs[256*g])), 256)
		const bias, even = 0x8080808080808080, 0x00ff00ff00ff00ff
		for h := range kx.hs {
			lo := binary.LittleEndian.Uint64(b[16*h:]) ^ bias
			hi := binary.LittleEndian.Uint64(b[16*h+8:]) ^ bias
			f := lo&even + lo>>8&even + hi&even + hi>>8&even
			kx.hs[h] = int16(int32(f*0x0001000100010001>>48) - 16*128)
		}
	}
}

// decodeKMinPortable decodes groups g0..g0+ng-1 of a row of K-quant type
// t into d by kSub (a type without a min biased by kCodeBias): the
// definition the vector decoders match.
func decodeKMinPortable(t quant.Type, row []byte, g0, ng int, d *kDecoded) {
	var k kSubBlock
	bias := kCodeBias(t)
	for i := 0; i < 8*ng; i++ {
		kSub(t, row, 8*g0+i, &k)
		for j, q := range k.q {
			d.w[32*i+j] = int8(int32(q) + bias)
		}
		for h := 0; h < 2; h++ {
			d.sc[2*i+h], d.mn[2*i+h] = int16(k.sc[h]), int16(k.mn[h]+bias*k.sc[h])
		}
		d.d[i], d.dmin[i] = k.d, k.dmin
	}
}

// decodeKMin is decodeKMinPortable with k's vector decoder where it has one.
func (k *kernelSet) decodeKMin(t quant.Type, row []byte, g0, ng int, d *kDecoded) {
	if dec := k.kminDecode[t]; dec != nil {
		dec(row, g0, ng, d)
		return
	}
	decodeKMinPortable(t, row, g0, ng, d)
}

// decodeKMinTile is decodeKMin into the layout k's min tiles read: with
// kminPlanes, the codes in plane order (tilePlanes' with bias 0; Q6_K's
// codes carry kCodeBias).
func (k *kernelSet) decodeKMinTile(t quant.Type, row []byte, g0, ng int, d *kDecoded) {
	if !k.kminPlanes() {
		k.decodeKMin(t, row, g0, ng, d)
		return
	}
	if dec := k.kminDecodePlanes[t]; dec != nil {
		dec(row, g0, ng, d)
		return
	}
	k.decodeKMin(t, row, g0, ng, d)
	w := d.w[:256*ng]
	k.tilePlanes(w, w, 0)
}

// kminDot1 adds the terms of d's ng groups (type t's) against input x (xq
// its codes from group g0 on, kx its records from g0 on) to l, kTerm's
// steps.
func kminDot1(t quant.Type, d *kDecoded, ng int, xq []int8, kx []kxGroup, l *[8]float32) {
	for i := 0; i < 8*ng; i++ {
		w, xs := d.w[32*i:32*i+32], xq[32*i:32*i+32]
		var lo, hi int32
		for j := 0; j < 16; j++ {
			lo += int32(w[j]) * int32(xs[j])
			hi += int32(w[16+j]) * int32(xs[16+j])
		}
		g := &kx[i/8]
		a := int32(d.sc[2*i])*lo + int32(d.sc[2*i+1])*hi
		b := int32(d.mn[2*i])*int32(g.hs[2*(i%8)]) + int32(d.mn[2*i+1])*int32(g.hs[2*(i%8)+1])
		dx := g.dx[i%8]
		if !kHasMin(t) {
			l[i%8] += float32(float32(a-b) * float32(d.d[i]*dx))
			continue
		}
		ta := float32(float32(a) * float32(d.d[i]*dx))
		tb := float32(float32(b) * float32(d.dmin[i]*dx))
		l[i%8] += float32(ta - tb)
	}
}

// kminScratch is one worker's min tile: its rows' decoded chunks, the
// inputs' records and the lanes of every (row, input) of the tile.
type kminScratch struct {
	d     [qmmRows]kDecoded
	kx    []kxGroup
	lanes [][8]float32
	// xp: the inputs' codes in plane order, groups groups each, where the
	// kernel takes them so (kernelSet.kminPlanes).
	xp []int8
}

var kminScratchPool sync.Pool

// matMulKMinBlock is matMulQ8Block for the types of kTiled: outs[t][r]
// = DotQ8(t, row r of m, xs[t]) for r0 <= r < r1, the lanes token-major
// (lanes[t*qmmRows+i] for row rt+i of the tile), every token by k's tile
// kernel where it has one, else portably, folded into outs on a row's last
// chunk.
func (k *kernelSet) matMulKMinBlock(m *Matrix, xs []*Q8Row, outs [][]float32, r0, r1 int) {
	sc, _ := kminScratchPool.Get().(*kminScratch)
	if sc == nil {
		sc = new(kminScratch)
	}
	defer kminScratchPool.Put(sc)
	ntok, groups := len(xs), m.Cols/256
	if cap(sc.kx) < ntok*groups {
		sc.kx = make([]kxGroup, ntok*groups)
	}
	if cap(sc.lanes) < qmmRows*ntok {
		sc.lanes = make([][8]float32, qmmRows*ntok)
	}
	kx, lanes := sc.kx[:ntok*groups], sc.lanes[:qmmRows*ntok]
	for t, x := range xs {
		kxFill(m.Type, x, kx[t*groups:(t+1)*groups])
	}
	xq := func(t, g0 int) []int8 { return xs[t].qs[256*g0:] }
	if k.kminPlanes() {
		if cap(sc.xp) < 256*groups*ntok {
			sc.xp = make([]int8, 256*groups*ntok)
		}
		for t, x := range xs {
			k.tilePlanes(sc.xp[256*groups*t:256*groups*(t+1)], x.qs[:256*groups], 0)
		}
		xq = func(t, g0 int) []int8 { return sc.xp[256*(groups*t+g0) : 256*groups*(t+1)] }
	}
	if tile1 := k.kminTile1G[m.Type]; tile1 != nil && groups == 1 {
		// Rows of one group: no lanes kept between chunks.
		for rt := r0; rt < r1; rt += qmmRows {
			nr := min(qmmRows, r1-rt)
			if dec := k.kminDecodeRows[m.Type]; dec != nil {
				dec(m.Data[rt*m.RowBytes:(rt+nr)*m.RowBytes], nr, &sc.d)
			} else {
				for i := 0; i < nr; i++ {
					k.decodeKMinTile(m.Type, m.Row(rt+i), 0, 1, &sc.d[i])
				}
			}
			for t := 0; t < ntok; t += 2 {
				u := min(t+1, ntok-1)
				tile1(&sc.d, nr, xq(t, 0), kx[t:t+1], xq(u, 0), kx[u:u+1], outs[t][rt:rt+nr], outs[u][rt:rt+nr])
			}
		}
		return
	}
	for rt := r0; rt < r1; rt += qmmRows {
		nr := min(qmmRows, r1-rt)
		clear(lanes)
		for g0 := 0; g0 < groups; g0 += kminGroups {
			ng := min(kminGroups, groups-g0)
			for i := 0; i < nr; i++ {
				k.decodeKMinTile(m.Type, m.Row(rt+i), g0, ng, &sc.d[i])
			}
			last := g0+ng == groups
			kxAt := func(t int) []kxGroup { return kx[t*groups+g0 : t*groups+g0+ng] }
			t := 0
			if tile := k.kminTile2[m.Type]; tile != nil {
				// Token pairs; an odd last token paired with itself, its
				// lanes and outputs given twice (both halves compute the
				// same bits, so the second stores equal the first).
				for ; t < ntok; t += 2 {
					u := min(t+1, ntok-1)
					var o0, o1 []float32
					if last {
						o0, o1 = outs[t][rt:rt+nr], outs[u][rt:rt+nr]
					}
					tile(&sc.d, nr, ng, xq(t, g0), kxAt(t), xq(u, g0), kxAt(u),
						lanes[t*qmmRows:(t+1)*qmmRows], lanes[u*qmmRows:(u+1)*qmmRows], o0, o1)
				}
			}
			for ; t < ntok; t++ {
				l := lanes[t*qmmRows : t*qmmRows+nr]
				for i := range l {
					kminDot1(m.Type, &sc.d[i], ng, xs[t].qs[256*g0:], kxAt(t), &l[i])
				}
				if last {
					o := outs[t][rt : rt+nr]
					for i := range o {
						o[i] = foldLanes(&l[i])
					}
				}
			}
		}
	}
}

// kminTileMinInputs is how many inputs a call on Q2_K, Q4_K or Q5_K needs
// for the min tiles with their vector decoders: on AVX2 at 4 the tiles beat
// one DotQ8 per element on every type and shape of BenchmarkMatMulQ8K (Q4_K
// 28.9 against 26.5 and 29.1 against 19.7 GMAC/s; Q2_K and Q5_K by more),
// at 2 not always (Q4_K 22.6 against 26.7); the AVX-512 VNNI kernels
// (kminPlanes) beat it at 3 on every one (Q4_K 30.5-30.7 against 26.7-27.1
// at 640 x 2560, 30.6-32.2 against 20.0-20.3 at 2560 x 768), and at 2 too,
// but at 2 a 64-token prefill of 8 x 64 experts of 1024 x 768 Q4_K_M lost
// (211-216 against 216-224 tokens per CPU-s: its weights stream from memory
// and the single-row kernels prefetch them).
func (k *kernelSet) kminTileMinInputs() int {
	if k.kminPlanes() {
		return 3
	}
	return 4
}

// kminPlanes reports whether k's min tiles read plane order: the sets with
// the plane transposer bind the plane kernels (kminTile2).
func (k *kernelSet) kminPlanes() bool { return k.tilePlanes != nil }

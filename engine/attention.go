package engine

import (
	"math"

	"github.com/stratactl/stratactl/kernels"
)

// attention runs the attention block on the normed inputs xa of T tokens,
// the spans' tokens one after the other, each at its session's positions:
// it appends their keys and values to their sessions' caches and returns
// the concatenated head outputs [T][Heads*ValueDim] (times sigmoid of the
// output gate when the layer has one), before the output projection, in
// a wrapper with a batch's rows quantized for that projection. The
// projections take the whole batch; each token attends to its own
// sequence's cache.
func (s *Session) attention(l int, L *Layer, xa *acts, T int, spans []seqSpan) *acts {
	m := s.m
	c := &m.Config
	hd, vd := c.HeadDim, c.ValueDim
	qdim, kdim, vdim := c.Heads*hd, c.HeadsKV*hd, c.HeadsKV*vd
	// With an output gate, head h's rows of Q are its query then its gate.
	qstride, hstride := qdim, hd
	if L.QGate {
		qstride, hstride = 2*qdim, 2*hd
	}
	sc := &s.sc
	q := sc.floats(T * qstride)
	k := sc.floats(T * kdim)
	v := sc.floats(T * vdim)
	xa.prepare(m.Pool, &L.Q)
	s.lap(PhaseQuant)
	matVecsOrMul(m.Pool, []*kernels.Matrix{&L.Q, &L.K, &L.V}, xa, [][]float32{q, k, v}, &sc.vecs)
	s.lapProducts(PhaseQKV, &L.Q, &L.K, &L.V)
	r := m.ropeTable()
	if T == 1 {
		// Every layer of a decode step rotates at the same position: the
		// angles once a step.
		pos := spans[0].s.Pos
		if !sc.ropeSet || sc.ropePos != pos {
			sc.ropeCos, sc.ropeSin = grow(&sc.ropeCos, len(r.inv)), grow(&sc.ropeSin, len(r.inv))
			r.angles(textPos(pos), sc.ropeCos, sc.ropeSin)
			sc.ropePos, sc.ropeSet = pos, true
		}
		// The keys here (the cache takes them next); each query head in
		// attention's pass, before its scores, on the pool's threads.
		s.normRotateKeys(L, k[:kdim], sc.ropeCos, sc.ropeSin)
	} else {
		m.Pool.Parallel(T, (c.Heads+c.HeadsKV)*hd*8, func(lo, hi int) {
			cos, sin := make([]float32, len(r.inv)), make([]float32, len(r.inv))
			for t := lo; t < hi; t++ {
				_, pos := spanOf(spans, t)
				r.angles(textPos(pos), cos, sin)
				s.normRotate(L, q[t*qstride:(t+1)*qstride], k[t*kdim:(t+1)*kdim], hstride, cos, sin)
			}
		})
	}
	s.lap(PhaseRoPE)
	maxN, lo := 0, 0
	for _, sp := range spans {
		ss := sp.s
		for t := lo; t < lo+sp.n; t++ {
			for h := range ss.kcache[l] {
				ss.kcache[l][h] = append(ss.kcache[l][h], k[t*kdim+h*hd:t*kdim+(h+1)*hd]...)
				ss.vcache[l][h] = append(ss.vcache[l][h], v[t*vdim+h*vd:t*vdim+(h+1)*vd]...)
			}
		}
		maxN = max(maxN, ss.Pos+sp.n)
		lo += sp.n
	}
	out := sc.floats(T * c.Heads * vd) // each head's part cleared in the pass
	a := &sc.attn
	if a.fn == nil {
		a.fn, a.tokFn = a.run, a.runTokens
	}
	*a = attnPass{c: c, L: L, l: l, spans: spans, q: q, out: out, maxN: maxN, qstride: qstride, hstride: hstride,
		scale: float32(1 / math.Sqrt(float64(hd))), fast: m.Mode == Fast, fn: a.fn, tokFn: a.tokFn}
	// One decode token's queries are normed and rotated in the pass, and
	// its heads score into rows of one reused buffer; a batch's ranges
	// each make their own.
	if T == 1 {
		a.cos, a.sin = sc.ropeCos, sc.ropeSin
		// Room for every position the cache has room for, so that the
		// buffer grows with the cache, not with each step.
		a.perHead = grow(&sc.scores, c.Heads*max(maxN, cap(spans[0].s.kcache[l][0])/hd))[:c.Heads*maxN]
	}
	oa := sc.newActs(out, c.Heads*vd, m.Mode)
	if T == 1 {
		m.Pool.Parallel(T*c.Heads, maxN*(hd+vd), a.fn)
	} else {
		// A batch's tokens, each with all its heads, so that each range
		// ends with its tokens' output rows whole and quantizes them for
		// the output projection in the pass (acts.rowsFor).
		a.oa = oa
		a.oq, a.ob = oa.rowsFor(&L.O)
		m.Pool.Parallel(T, c.Heads*maxN*(hd+vd), a.tokFn)
		oa.setRows(a.oq, a.ob)
	}
	*a = attnPass{fn: a.fn, tokFn: a.tokFn}
	s.lap(PhaseAttn)
	return oa
}

// attnPass is attention's pass over (token, head) pairs, its function
// bound once (a closure handed to the pool would be a new heap object per
// call): pair i is token i/Heads, head i%Heads, its output the softmax of
// its scores over its sequence's cache times the values.
type attnPass struct {
	c                      *Config
	L                      *Layer
	l                      int
	spans                  []seqSpan
	q, out                 []float32
	perHead                []float32 // a decode token's scores, per head; nil: each range makes its own
	maxN, qstride, hstride int
	scale                  float32
	// fast takes the softmax's exponentials in float32 (kernels.ExpF32,
	// vector code), where exact mode rounds float64 ones.
	fast bool
	// cos and sin, when set (a decode token), are its angles: each query
	// head is normed and rotated here (normRotateHead) before its scores,
	// once, as normRotate would have before the pass.
	cos, sin []float32
	// oa wraps out; a batch's pass (runTokens) quantizes its rows into
	// oq or ob (rowsFor) for the output projection.
	oa    *acts
	oq    []*kernels.Q8Row
	ob    []*kernels.BF16Row
	fn    func(lo, hi int)
	tokFn func(lo, hi int)
}

// runTokens runs the pairs of tokens [lo, hi), every head of each, then
// quantizes the tokens' output rows (when oq or ob is set).
func (a *attnPass) runTokens(lo, hi int) {
	H := a.c.Heads
	a.run(lo*H, hi*H)
	a.oa.quantizeRows(a.oq, a.ob, lo, hi)
}

func (a *attnPass) run(lo, hi int) {
	c, L, q, out := a.c, a.L, a.q, a.out
	hd, vd := c.HeadDim, c.ValueDim
	group := c.Heads / c.HeadsKV
	qstride, hstride, maxN := a.qstride, a.hstride, a.maxN
	var scores []float32
	if a.perHead == nil {
		scores = make([]float32, maxN)
	}
	if a.cos != nil {
		// A decode token's query heads (i = h), two at a time.
		head := func(h int) []float32 { return q[h*hstride : h*hstride+hd] }
		for h := lo; h < hi; h += 2 {
			if h+1 < hi {
				normRotatePair(head(h), head(h+1), L.QNorm, c.Eps, a.cos, a.sin)
			} else {
				normRotateHead(head(h), L.QNorm, c.Eps, a.cos, a.sin)
			}
		}
	}
	for i := lo; i < hi; i++ {
		if a.perHead != nil {
			scores = a.perHead[i*maxN : (i+1)*maxN]
		}
		t, h := i/c.Heads, i%c.Heads
		j, pos := spanOf(a.spans, t)
		kvh := h / group
		kc, vc := a.spans[j].s.kcache[a.l][kvh], a.spans[j].s.vcache[a.l][kvh]
		n := pos + 1
		qh := q[t*qstride+h*hstride : t*qstride+h*hstride+hd]
		// score_j = DotF32(key j, q) * scale; o = sum_j p_j * value j
		// in position order (kernels.AttnScores, AttnSum).
		sc := scores[:n]
		kernels.AttnScores(sc, qh, kc, hd, a.scale)
		mx := float32(math.Inf(-1))
		for _, v := range sc {
			mx = max(mx, v)
		}
		var sum float64
		if a.fast {
			for j, v := range sc {
				sc[j] = v - mx
			}
			kernels.ExpF32(sc, sc)
			for _, e := range sc {
				sum += float64(e)
			}
		} else {
			for j, v := range sc {
				e := math.Exp(float64(v - mx))
				sc[j] = float32(e)
				sum += e
			}
		}
		inv := float32(1 / sum)
		for j := range sc {
			sc[j] *= inv
		}
		o := out[t*c.Heads*vd+h*vd : t*c.Heads*vd+(h+1)*vd]
		clear(o)
		kernels.AttnSum(o, sc, vc, vd)
		if L.QGate {
			g := q[t*qstride+h*hstride+hd : t*qstride+(h+1)*hstride]
			for i := range o {
				o[i] *= sigmoid(g[i])
			}
		}
	}
}

// normRotate RMS-normalizes and rotates one token's query heads q (head h
// at h*hstride) and key heads k by the angles of its position (rope.angles'
// cos and sin).
func (s *Session) normRotate(L *Layer, q, k []float32, hstride int, cos, sin []float32) {
	c := &s.m.Config
	hd := c.HeadDim
	for h := 0; h < c.Heads; h++ {
		normRotateHead(q[h*hstride:h*hstride+hd], L.QNorm, c.Eps, cos, sin)
	}
	s.normRotateKeys(L, k, cos, sin)
}

// normRotateKeys is normRotate's key heads alone.
func (s *Session) normRotateKeys(L *Layer, k []float32, cos, sin []float32) {
	c := &s.m.Config
	hd := c.HeadDim
	h := 0
	for ; h+1 < c.HeadsKV; h += 2 {
		normRotatePair(k[h*hd:(h+1)*hd], k[(h+1)*hd:(h+2)*hd], L.KNorm, c.Eps, cos, sin)
	}
	if h < c.HeadsKV {
		normRotateHead(k[h*hd:(h+1)*hd], L.KNorm, c.Eps, cos, sin)
	}
}

// normRotateHead RMS-normalizes one head x in place by the weights w, then
// rotates it by the angles cos and sin.
func normRotateHead(x, w []float32, eps float32, cos, sin []float32) {
	rmsNorm(x, x, w, eps)
	rotate(x, cos, sin)
}

// normRotatePair is normRotateHead of two heads of one length, their sums
// of squares side by side (rmsNorm2): the serial float64 sum is most of a
// head's norm, and two run in the time of one.
func normRotatePair(x0, x1, w []float32, eps float32, cos, sin []float32) {
	rmsNorm2(x0, x1, w, eps)
	rotate(x0, cos, sin)
	rotate(x1, cos, sin)
}

// rope is the rotary embedding of a model: theta_i = base^(-2i/RopeDims)
// for the NEOX pairs (i, i+RopeDims/2) of the first RopeDims dims, and for
// multi-section RoPE the position component each pair reads.
type rope struct {
	inv  []float64
	sect []uint8 // nil: every pair reads component 0
}

// textPos is the position of a text token for every RoPE variant: M-RoPE's
// time, height and width components are the token index, the extra one 0
// (llama.cpp's layout for text).
func textPos(p int) [4]int { return [4]int{p, p, p, 0} }

func (m *Model) ropeTable() *rope {
	m.ropeOnce.Do(func() {
		c := &m.Config
		n := c.RopeDims
		r := &rope{inv: make([]float64, n/2)}
		for i := range r.inv {
			r.inv[i] = math.Pow(c.RopeBase, -2*float64(i)/float64(n))
		}
		if c.RopeSections != nil {
			r.sect = imropeSections(c.RopeSections, n/2)
		}
		m.rope = r
	})
	return m.rope
}

// imropeSections assigns each of n pairs its position component the way
// interleaved M-RoPE (ggml's IMROPE) does: pair i is in sector i mod
// sum(sections); sectors cycle time, height, width while each component
// has sections left (3*sections[k] sectors), the rest read the extra one.
func imropeSections(sections []int, n int) []uint8 {
	total := 0
	for _, v := range sections {
		total += v
	}
	out := make([]uint8, n)
	for i := range out {
		sector := i % total
		switch {
		case sector%3 == 0 && sector < 3*sections[0]:
			out[i] = 0
		case sector%3 == 1 && sector < 3*sections[1]:
			out[i] = 1
		case sector%3 == 2 && sector < 3*sections[2]:
			out[i] = 2
		default:
			out[i] = 3
		}
	}
	return out
}

// angles sets cos[i], sin[i] (len(inv) each) to the rotation of pair i at
// pos: pos*theta_i, the position component the pair reads.
func (r *rope) angles(pos [4]int, cos, sin []float32) {
	for i, inv := range r.inv {
		p := pos[0]
		if r.sect != nil {
			p = pos[r.sect[i]]
		}
		s, c := math.Sincos(float64(p) * inv)
		cos[i], sin[i] = float32(c), float32(s)
	}
}

// rotate rotates the first 2*len(cos) dims of x, pairs (i, i+len(cos)), by
// the angles (rotate-half style); the rest of x passes through.
func rotate(x, cos, sin []float32) {
	half := len(cos)
	for i, c := range cos {
		s := sin[i]
		x0, x1 := x[i], x[i+half]
		x[i] = float32(x0*c) - float32(x1*s)
		x[i+half] = float32(x0*s) + float32(x1*c)
	}
}

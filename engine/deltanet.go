package engine

import (
	"math"

	"github.com/stratactl/stratactl/kernels"
)

// deltaState is one gated-delta-net layer's recurrent state: the last
// ConvKernel-1 inputs of the causal conv, [ConvKernel-1][Channels], and per
// value head the matrix S [KeyDim][ValueDim]. A batch reads the committed
// pair and writes the other one; commit swaps them once the whole batch
// has run, so a failed batch leaves the session at its last good position.
type deltaState struct {
	conv, ssm   []float32 // committed
	conv2, ssm2 []float32 // written by the batch in flight
}

func newDeltaState(sc *SSMConfig) *deltaState {
	nc := (sc.ConvKernel - 1) * sc.Channels()
	ns := sc.ValueHeads * sc.KeyDim * sc.ValueDim
	return &deltaState{conv: make([]float32, nc), conv2: make([]float32, nc), ssm: make([]float32, ns), ssm2: make([]float32, ns)}
}

func (st *deltaState) commit() {
	st.conv, st.conv2 = st.conv2, st.conv
	st.ssm, st.ssm2 = st.ssm2, st.ssm
}

func (st *deltaState) reset() {
	clear(st.conv)
	clear(st.ssm)
}

// deltaNet runs the gated delta net of layer l on the normed inputs xa of
// T tokens and returns its output [T][Embd]. The recurrence runs token by
// token (a batch is the same arithmetic as T single-token steps, so prefill
// and decode agree bit for bit); the projections are batched.
func (s *Session) deltaNet(l int, L *Layer, xa *acts, T int) []float32 {
	m := s.m
	c := &m.Config
	sc := &c.SSM
	d := L.Delta
	st := s.delta[l]
	C, K := sc.Channels(), sc.ConvKernel
	NK, DK, NV, DV := sc.KeyHeads, sc.KeyDim, sc.ValueHeads, sc.ValueDim
	buf := &s.sc

	// Projections: conv input, output gate, beta and alpha logits.
	ext := buf.floats((K - 1 + T) * C) // conv history then this batch's inputs
	qkv := ext[(K-1)*C:]
	z := buf.floats(T * NV * DV)
	beta := buf.floats(T * NV)
	alpha := buf.floats(T * NV)
	r := NV / NK
	if d.In != nil {
		// ssm_in: per key head g, [q | k | v of heads g*r.. | z of them].
		w := 2*DK + 2*r*DV
		in := buf.floats(T * NK * w)
		ba := buf.floats(T * 2 * NV)
		matVecsOrMul(m.Pool, []*kernels.Matrix{d.In, d.BA}, xa, [][]float32{in, ba}, &buf.vecs)
		s.lapProducts(PhaseQKV, d.In, d.BA)
		for t := 0; t < T; t++ {
			q := qkv[t*C:]
			for g := 0; g < NK; g++ {
				src := in[(t*NK+g)*w : (t*NK+g+1)*w]
				copy(q[g*DK:(g+1)*DK], src[:DK])
				copy(q[(NK+g)*DK:(NK+g+1)*DK], src[DK:2*DK])
				copy(q[2*NK*DK+g*r*DV:2*NK*DK+(g+1)*r*DV], src[2*DK:2*DK+r*DV])
				copy(z[t*NV*DV+g*r*DV:t*NV*DV+(g+1)*r*DV], src[2*DK+r*DV:])
			}
		}
		unpackBA(ba, beta, alpha, T, NK, r)
	} else if d.BA != nil {
		ba := buf.floats(T * 2 * NV)
		matVecsOrMul(m.Pool, []*kernels.Matrix{&d.QKV, &d.Z, d.BA}, xa, [][]float32{qkv, z, ba}, &buf.vecs)
		s.lapProducts(PhaseQKV, &d.QKV, &d.Z, d.BA)
		unpackBA(ba, beta, alpha, T, NK, r)
	} else {
		matVecsOrMul(m.Pool, []*kernels.Matrix{&d.QKV, &d.Z, &d.Beta, &d.Alpha}, xa, [][]float32{qkv, z, beta, alpha}, &buf.vecs)
		s.lapProducts(PhaseQKV, &d.QKV, &d.Z, &d.Beta, &d.Alpha)
	}

	// Causal depthwise conv over time, then SiLU; q and k normalised;
	// beta and the decay: token by token, a batch's tokens in parallel
	// (convPass.run).
	copy(ext, st.conv)
	conv := buf.floats(T * C)
	cp := &buf.conv
	if cp.fn == nil {
		cp.fn = cp.run
	}
	*cp = convPass{sc: sc, d: d, ext: ext, conv: conv, alpha: alpha, beta: beta, fn: cp.fn}
	if T == 1 {
		cp.run(0, 1)
	} else {
		m.Pool.Parallel(T, C*(K+8), cp.fn)
	}
	*cp = convPass{fn: cp.fn}
	copy(st.conv2, ext[T*C:])

	// The delta rule, per value head: S <- exp(g) S; S <- S + k (beta (v -
	// S^T k))^T; o = S^T q.
	o := buf.zeros(T * NV * DV)
	dp := &buf.delta
	if dp.fn == nil {
		dp.fn = dp.run
	}
	*dp = deltaPass{c: c, d: d, st: st, T: T, conv: conv, alpha: alpha, beta: beta, z: z, o: o,
		us: buf.floats(NV * DV), fn: dp.fn}
	m.Pool.Parallel(NV, T*DK*DV*4, dp.fn)
	*dp = deltaPass{fn: dp.fn}
	out := buf.floats(T * c.Embd)
	oa := buf.newActs(o, len(o)/T, m.Mode)
	oa.prepare(m.Pool, &d.Out)
	s.lap(PhaseAttn)
	matMul(m.Pool, &d.Out, oa, out)
	s.lapProducts(PhaseO, &d.Out)
	return out
}

// unpackBA splits ssm_ba's outputs: per key head g, the beta logits of
// value heads g*r.. then their alpha logits.
func unpackBA(ba, beta, alpha []float32, T, NK, r int) {
	NV := NK * r
	for t := 0; t < T; t++ {
		for g := 0; g < NK; g++ {
			for i := 0; i < r; i++ {
				beta[t*NV+g*r+i] = ba[t*2*NV+g*2*r+i]
				alpha[t*NV+g*r+i] = ba[t*2*NV+g*2*r+r+i]
			}
		}
	}
}

// l2Normalize scales x to x / sqrt(sum x^2 + 1e-6) (transformers' form;
// llama.cpp's x / max(|x|, eps) agrees unless |x| is tiny).
func l2Normalize(x []float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(ss+1e-6))
	for i := range x {
		x[i] *= inv
	}
}

func sigmoid(v float32) float32 { return float32(1 / (1 + math.Exp(-float64(v)))) }

// softplus is log(1 + e^x), x itself above 20 (torch's threshold).
func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// convPass is the gated delta net's token-wise pass, its function bound
// once (as deltaPass's): for tokens [lo, hi), the causal depthwise conv
// over time then SiLU, out[t, c] = silu(sum_j w[c, j] * in[t-K+1+j, c])
// (the inputs before the batch from the state, ext's first K-1 rows); q
// and k L2-normalised per key head, q scaled by 1/sqrt(KeyDim); beta =
// sigmoid; decay g = softplus(alpha + dt_bias) * A (A < 0). Each token's
// values are its own, so the bits do not depend on the split.
type convPass struct {
	sc                     *SSMConfig
	d                      *DeltaNet
	ext, conv, alpha, beta []float32
	fn                     func(lo, hi int)
}

func (p *convPass) run(lo, hi int) {
	sc, d, ext, conv := p.sc, p.d, p.ext, p.conv
	C, K := sc.Channels(), sc.ConvKernel
	NK, DK, NV := sc.KeyHeads, sc.KeyDim, sc.ValueHeads
	qscale := float32(1 / math.Sqrt(float64(DK)))
	for t := lo; t < hi; t++ {
		o := conv[t*C : (t+1)*C]
		for ch := range o {
			w := d.Conv[ch*K : (ch+1)*K]
			var acc float32
			for j, wj := range w {
				acc += wj * ext[(t+j)*C+ch]
			}
			o[ch] = silu(acc)
		}
		for h := 0; h < 2*NK; h++ {
			x := conv[t*C+h*DK : t*C+(h+1)*DK]
			l2Normalize(x)
			if h < NK {
				for i := range x {
					x[i] *= qscale
				}
			}
		}
		for h := 0; h < NV; h++ {
			i := t*NV + h
			p.beta[i] = sigmoid(p.beta[i])
			p.alpha[i] = float32(softplus(float64(p.alpha[i]+d.DtBias[h])) * float64(d.A[h]))
		}
	}
}

// deltaPass is the delta rule's pass over value heads, its function bound
// once (a closure handed to the pool would be a new heap object per
// call): per value head, S <- exp(g) S; S <- S + k (beta (v - S^T k))^T;
// o = S^T q, then the gated RMSNorm of o.
type deltaPass struct {
	c                       *Config
	d                       *DeltaNet
	st                      *deltaState
	T                       int
	conv, alpha, beta, z, o []float32
	us                      []float32 // per value head, its u
	fn                      func(lo, hi int)
}

func (p *deltaPass) run(lo, hi int) {
	c, d, st, T := p.c, p.d, p.st, p.T
	sc := &c.SSM
	C := sc.Channels()
	NK, DK, NV, DV := sc.KeyHeads, sc.KeyDim, sc.ValueHeads, sc.ValueDim
	conv, alpha, beta, z, o := p.conv, p.alpha, p.beta, p.z, p.o
	for h := lo; h < hi; h++ {
		u := p.us[h*DV : (h+1)*DV]
		kh := sc.keyHead(h)
		src := st.ssm[h*DK*DV : (h+1)*DK*DV]
		S := st.ssm2[h*DK*DV : (h+1)*DK*DV]
		for t := 0; t < T; t++ {
			q := conv[t*C+kh*DK : t*C+(kh+1)*DK]
			k := conv[t*C+(NK+kh)*DK : t*C+(NK+kh+1)*DK]
			v := conv[t*C+2*NK*DK+h*DV : t*C+2*NK*DK+(h+1)*DV]
			decay := float32(math.Exp(float64(alpha[t*NV+h])))
			if t == 0 {
				for i, x := range src {
					S[i] = x * decay
				}
			} else {
				for i := range S {
					S[i] *= decay
				}
			}
			clear(u)
			for i, ki := range k {
				kernels.Axpy(u, ki, S[i*DV:(i+1)*DV])
			}
			b := beta[t*NV+h]
			for j := range u {
				u[j] = b * (v[j] - u[j])
			}
			for i, ki := range k {
				kernels.Axpy(S[i*DV:(i+1)*DV], ki, u)
			}
			oh := o[t*NV*DV+h*DV : t*NV*DV+(h+1)*DV]
			for i, qi := range q {
				kernels.Axpy(oh, qi, S[i*DV:(i+1)*DV])
			}
			// Gated RMSNorm: rmsnorm(o) * ssm_norm * silu(z).
			rmsNorm(oh, oh, d.Norm, c.Eps)
			zh := z[t*NV*DV+h*DV : t*NV*DV+(h+1)*DV]
			for j := range oh {
				oh[j] *= silu(zh[j])
			}
		}
	}
}

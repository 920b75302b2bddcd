package engine

import (
	"math"

	"github.com/stratactl/stratactl/kernels"
)

// attention runs the attention block on the normed inputs xn of T tokens at
// positions s.Pos.., appends their keys and values to the cache and returns
// the concatenated head outputs [T][Heads*ValueDim].
func (s *Session) attention(l int, L *Layer, xn []float32, T int) []float32 {
	m := s.m
	c := &m.Config
	hd, vd := c.HeadDim, c.ValueDim
	qdim, kdim, vdim := c.Heads*hd, c.HeadsKV*hd, c.HeadsKV*vd
	q := make([]float32, T*qdim)
	k := make([]float32, T*kdim)
	v := make([]float32, T*vdim)
	if T == 1 {
		m.Pool.MatVecs([]*kernels.Matrix{&L.Q, &L.K, &L.V}, [][]float32{xn, xn, xn}, [][]float32{q, k, v})
	} else {
		m.Pool.MatMul(&L.Q, xn, T, q)
		m.Pool.MatMul(&L.K, xn, T, k)
		m.Pool.MatMul(&L.V, xn, T, v)
	}
	inv := m.ropeInv()
	for t := 0; t < T; t++ {
		pos := s.Pos + t
		for h := 0; h < c.Heads; h++ {
			qh := q[t*qdim+h*hd : t*qdim+(h+1)*hd]
			rmsNorm(qh, qh, L.QNorm, c.Eps)
			ropeNeox(qh, pos, inv)
		}
		for h := 0; h < c.HeadsKV; h++ {
			kh := k[t*kdim+h*hd : t*kdim+(h+1)*hd]
			rmsNorm(kh, kh, L.KNorm, c.Eps)
			ropeNeox(kh, pos, inv)
		}
	}
	s.kcache[l] = append(s.kcache[l], k...)
	s.vcache[l] = append(s.vcache[l], v...)
	kc, vc := s.kcache[l], s.vcache[l]
	group := c.Heads / c.HeadsKV
	scale := float32(1 / math.Sqrt(float64(hd)))
	out := make([]float32, T*c.Heads*vd)
	m.Pool.Parallel(T*c.Heads, (s.Pos+T)*(hd+vd), func(lo, hi int) {
		scores := make([]float32, s.Pos+T)
		for i := lo; i < hi; i++ {
			t, h := i/c.Heads, i%c.Heads
			kvh := h / group
			n := s.Pos + t + 1
			qh := q[t*qdim+h*hd : t*qdim+(h+1)*hd]
			mx := float32(math.Inf(-1))
			for j := 0; j < n; j++ {
				sc := kernels.DotF32(kc[j*kdim+kvh*hd:j*kdim+(kvh+1)*hd], qh) * scale
				scores[j] = sc
				mx = max(mx, sc)
			}
			var sum float64
			for j := 0; j < n; j++ {
				e := math.Exp(float64(scores[j] - mx))
				scores[j] = float32(e)
				sum += e
			}
			inv := float32(1 / sum)
			o := out[t*c.Heads*vd+h*vd : t*c.Heads*vd+(h+1)*vd]
			for j := 0; j < n; j++ {
				p := scores[j] * inv
				kernels.Axpy(o, p, vc[j*vdim+kvh*vd:j*vdim+(kvh+1)*vd])
			}
		}
	})
	return out
}

// ropeInv is theta_i = base^(-2i/head_dim) for the NEOX pairs.
func (m *Model) ropeInv() []float64 {
	m.ropeOnce.Do(func() {
		hd := m.Config.HeadDim
		m.rope = make([]float64, hd/2)
		for i := range m.rope {
			m.rope[i] = math.Pow(m.Config.RopeBase, -2*float64(i)/float64(hd))
		}
	})
	return m.rope
}

// ropeNeox rotates pairs (i, i+d/2) by pos*theta_i (rotate-half style).
func ropeNeox(x []float32, pos int, inv []float64) {
	half := len(x) / 2
	for i := 0; i < half; i++ {
		sin, cos := math.Sincos(float64(pos) * inv[i])
		c, s := float32(cos), float32(sin)
		x0, x1 := x[i], x[i+half]
		x[i] = float32(x0*c) - float32(x1*s)
		x[i+half] = float32(x0*s) + float32(x1*c)
	}
}

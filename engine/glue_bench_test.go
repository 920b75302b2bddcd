package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// flushCaches streams a buffer larger than the caches (as a step's weight
// products do between two layers' attention).
var flushBuf []float32

func flushCaches() float32 {
	if flushBuf == nil {
		flushBuf = make([]float32, 64<<20/4*2)
	}
	var s float32
	for i := 0; i < len(flushBuf); i += 16 {
		s += flushBuf[i]
	}
	return s
}

// BenchmarkAttnPass is one layer's attention pass of a decode token at 32
// positions (32 query heads, 4 KV heads of 128), on the caller's thread,
// with the caches warm or flushed before each pass.
func BenchmarkAttnPass(b *testing.B) {
	dir := b.TempDir()
	sp := SynthSpec{Layers: 1, Embd: 2560, Heads: 32, HeadsKV: 4, HeadDim: 128, Experts: 8, ExpertsUsed: 2,
		ExpertFF: 640, Vocab: 512, DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 1}
	if err := WriteSyntheticPack(dir, sp); err != nil {
		b.Fatal(err)
	}
	m, err := Open(dir, Options{Mode: Fast, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	ids := make([]int32, 32)
	for i := range ids {
		ids[i] = int32(i + 5)
	}
	if _, err := s.Forward(ids, false); err != nil {
		b.Fatal(err)
	}
	c := &m.Config
	rng := rand.New(rand.NewPCG(1, 2))
	q := make([]float32, c.Heads*c.HeadDim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, c.Heads*c.ValueDim)
	cos, sin := make([]float32, c.RopeDims/2), make([]float32, c.RopeDims/2)
	m.ropeTable().angles(textPos(32), cos, sin)
	s.self[0] = seqSpan{s: s, n: 1}
	s.Pos = 31
	scores := make([]float32, c.Heads*32)
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			var sink float32
			for i := 0; i < b.N; i++ {
				if cold {
					b.StopTimer()
					sink += flushCaches()
					b.StartTimer()
				}
				a := attnPass{c: c, L: &m.Layers[0], l: 0, spans: s.self[:], q: q, out: out, maxN: 32, qstride: len(q), hstride: c.HeadDim,
					scale: float32(1 / math.Sqrt(float64(c.HeadDim))), fast: true, cos: cos, sin: sin, perHead: scores}
				a.run(0, c.Heads)
			}
			_ = sink
		})
	}
}

// BenchmarkRMSNorm2560, BenchmarkAddTo2560 and BenchmarkArgmax32k time a
// decode step's glue alone, in cache.
func BenchmarkRMSNorm2560(b *testing.B) {
	x, w, y := make([]float32, 2560), make([]float32, 2560), make([]float32, 2560)
	for i := range x {
		x[i], w[i] = float32(i%17)*0.1-0.8, 1+float32(i%5)*0.01
	}
	for i := 0; i < b.N; i++ {
		rmsNorm(y, x, w, 1e-6)
	}
}

func BenchmarkAddTo2560(b *testing.B) {
	x, o := make([]float32, 2560), make([]float32, 2560)
	for i := 0; i < b.N; i++ {
		addTo(x, o)
	}
}

func BenchmarkArgmax32k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 32768)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 2)
	}
	for i := 0; i < b.N; i++ {
		Argmax(logits)
	}
}

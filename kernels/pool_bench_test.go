package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// BenchmarkExpertPasses is the routed experts' passes of decode steps as
// the engine runs them at the field shape (bench decode's synthetic pack:
// Q2_0 experts of n_embd 2560 and ff 640, 8 used): per layer, 8 experts
// drawn at random from an arena on huge pages (STRATACTL_EXPERTS_MB MiB,
// default 256, far larger than the caches), their gates and ups in one
// MatVecsQ8GLU pass with SwiGLU, then their downs in one MatVecsQ8 pass,
// 8 layers an iteration. Each sub-benchmark (j1, j2, ...: the pool's
// threads) runs the variants in turn within every iteration, so that the
// machine's drift falls on all of them alike, and reports each one's rate
// over the experts' weight bytes (variant-GB/s): "lanes" (the pool's row
// walk: each share's rows in the row kernel's lanes, a goroutine's claims
// continuing its streams), "plain" (a claim's range cut into the kernel's
// streams anew each claim: the walk before lanes) and "xor" (the plain
// streaming read, XORRead, of the same matrices' bytes on the same pool,
// the bound); plain/lanes-% is plain's time over lanes', and -gu- and
// -down- the rates of the gate/up and the down passes alone.
//
//	go test ./kernels -run XXX -bench ExpertPasses -benchtime 20x
func BenchmarkExpertPasses(b *testing.B) {
	mb := 256
	if s := os.Getenv("STRATACTL_EXPERTS_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 8 {
			b.Fatalf("STRATACTL_EXPERTS_MB=%q: want at least 8 MiB", s)
		}
		mb = v
	}
	const D, F, used, layers = 2560, 640, 8, 8
	ti, _ := quant.Info(quant.Q2_0)
	gateBytes, downBytes := F*D/ti.BlockElements*ti.BlockBytes, D*F/ti.BlockElements*ti.BlockBytes
	slot := 2*gateBytes + downBytes
	experts := max(used, (mb<<20)/slot)
	data, unmap, err := osutil.MapAnon(experts*slot, 2<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer unmap()
	pattern, err := SampleBlocks(quant.Q2_0, 64, 1)
	if err != nil {
		b.Fatal(err)
	}
	for o := 0; o < len(data); o += len(pattern) {
		copy(data[o:], pattern)
	}
	type expert struct{ gate, up, down Matrix }
	ex := make([]expert, experts)
	for e := range ex {
		d := data[e*slot : (e+1)*slot]
		var errs [3]error
		ex[e].gate, errs[0] = NewMatrix(quant.Q2_0, d[:gateBytes], D, F)
		ex[e].up, errs[1] = NewMatrix(quant.Q2_0, d[gateBytes:2*gateBytes], D, F)
		ex[e].down, errs[2] = NewMatrix(quant.Q2_0, d[2*gateBytes:], F, D)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var x Q8Row
	if err := QuantizeQ8Row(gaussians(rng, D, 1), &x); err != nil {
		b.Fatal(err)
	}
	hx := make([]*Q8Row, used)
	for k := range hx {
		hx[k] = &Q8Row{}
		if err := QuantizeQ8Row(gaussians(rng, F, 1), hx[k]); err != nil {
			b.Fatal(err)
		}
	}
	xs := make([]*Q8Row, used)
	for k := range xs {
		xs[k] = &x
	}
	h, u, y := make([]float32, used*F), make([]float32, used*F), make([]float32, used*D)
	gs, us, ys := make([][]float32, used), make([][]float32, used), make([][]float32, used)
	for k := range gs {
		gs[k], us[k], ys[k] = h[k*F:(k+1)*F], u[k*F:(k+1)*F], y[k*D:(k+1)*D]
	}
	glu := func(k, lo, hi int) { SwiGLU(h[k*F+lo:k*F+hi], u[k*F+lo:k*F+hi]) }
	for _, threads := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("j%d", threads), func(b *testing.B) {
			lanes, plain := NewPool(threads), NewPool(threads)
			plain.plainRows = true
			defer lanes.Close()
			defer plain.Close()
			gates, ups, downs := make([]*Matrix, used), make([]*Matrix, used), make([]*Matrix, used)
			// pick draws layer l's experts for iteration i (the same for
			// every variant).
			pick := func(i, l int) {
				r := rand.New(rand.NewPCG(uint64(i), uint64(l)))
				for k, e := range r.Perm(experts)[:used] {
					gates[k], ups[k], downs[k] = &ex[e].gate, &ex[e].up, &ex[e].down
				}
			}
			// passes runs iteration i's passes on p, adding the time of
			// the downs' to *down.
			passes := func(p *Pool, i int, down *time.Duration) {
				for l := 0; l < layers; l++ {
					pick(i, l)
					p.MatVecsQ8GLU(gates, ups, xs, gs, us, glu)
					t0 := time.Now()
					p.MatVecsQ8(downs, hx, ys)
					*down += time.Since(t0)
				}
			}
			var downLanes, downPlain time.Duration
			var sink [64]uint64
			xor := func(p *Pool, i int) {
				for l := 0; l < layers; l++ {
					pick(i, l)
					mats := [3 * used]*Matrix{}
					for k := 0; k < used; k++ {
						mats[3*k], mats[3*k+1], mats[3*k+2] = gates[k], ups[k], downs[k]
					}
					p.Parallel(len(mats), gateBytes, func(lo, hi int) {
						for j := lo; j < hi; j++ {
							sink[j%len(sink)] ^= XORRead(mats[j].Data)
						}
					})
				}
			}
			variants := []struct {
				name string
				run  func(i int)
				t    time.Duration
			}{
				{"lanes", func(i int) { passes(lanes, i, &downLanes) }, 0},
				{"plain", func(i int) { passes(plain, i, &downPlain) }, 0},
				{"xor", func(i int) { xor(lanes, i) }, 0},
			}
			for i := range variants {
				variants[i].run(-1) // warm: the pools' workers started
			}
			downLanes, downPlain = 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for v := range variants {
					t0 := time.Now()
					variants[(v+i)%len(variants)].run(i)
					variants[(v+i)%len(variants)].t += time.Since(t0)
				}
			}
			bytes := float64(b.N) * layers * used * float64(slot)
			for _, v := range variants {
				b.ReportMetric(bytes/v.t.Seconds()/1e9, v.name+"-GB/s")
			}
			gu, dn := float64(b.N)*layers*used*float64(2*gateBytes), float64(b.N)*layers*used*float64(downBytes)
			b.ReportMetric(gu/(variants[0].t-downLanes).Seconds()/1e9, "lanes-gu-GB/s")
			b.ReportMetric(dn/downLanes.Seconds()/1e9, "lanes-down-GB/s")
			b.ReportMetric(gu/(variants[1].t-downPlain).Seconds()/1e9, "plain-gu-GB/s")
			b.ReportMetric(dn/downPlain.Seconds()/1e9, "plain-down-GB/s")
			b.ReportMetric(100*variants[1].t.Seconds()/variants[0].t.Seconds(), "plain/lanes-%")
			b.ReportMetric(100*variants[2].t.Seconds()/variants[0].t.Seconds(), "lanes-%xor")
		})
	}
}

package engine

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stratactl/stratactl/quant"
)

// stepPacks are synthetic packs of both architectures for the decode-step
// tests: qwen3moe (attention) and qwen35moe (delta nets, gated attention,
// a shared expert).
func stepPacks(t *testing.T) map[string]string {
	t.Helper()
	specs := map[string]SynthSpec{
		"qwen3moe": {Layers: 2, Embd: 256, Heads: 4, HeadsKV: 2, HeadDim: 64, Experts: 8, ExpertsUsed: 3,
			ExpertFF: 128, Vocab: 4096, DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 5},
		"qwen35moe": {Arch: "qwen35moe", Layers: 4, Embd: 256, Experts: 8, ExpertsUsed: 2, ExpertFF: 64, Vocab: 4096,
			DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 6},
	}
	dirs := map[string]string{}
	for name, sp := range specs {
		dir := t.TempDir()
		if err := WriteSyntheticPack(dir, sp); err != nil {
			t.Fatal(err)
		}
		dirs[name] = dir
	}
	return dirs
}

// TestStepReusesBuffers: a decode step (Session.Step, the session's own
// buffers reused from step to step) gives the bits of Forward on a fresh
// slice, step after step, in both modes and both architectures at 1 and 2
// threads; and once warm a step and its draw (the sampler's pass on the
// pool, as Generate draws) allocate nothing: every buffer, argument list
// and pass the pool runs is the session's, the sampler's or the pool's
// own, reused.
func TestStepReusesBuffers(t *testing.T) {
	for arch, dir := range stepPacks(t) {
		for _, mode := range []Mode{Exact, Fast} {
			for _, threads := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/%s/j%d", arch, mode, threads), func(t *testing.T) {
					m, err := Open(dir, Options{Mode: mode, Threads: threads})
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					ref, s := m.NewSession(), m.NewSession()
					prompt := []int32{3, 1000, 77}
					if _, err := ref.Forward(prompt, false); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Forward(prompt, false); err != nil {
						t.Fatal(err)
					}
					s.Reserve(40) // the key and value caches grow no more
					id := int32(9)
					for step := 0; step < 12; step++ {
						want, err := ref.Forward([]int32{id}, false)
						if err != nil {
							t.Fatal(err)
						}
						got, err := s.Step(id)
						if err != nil {
							t.Fatal(err)
						}
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("step %d logit %d: Step %g, Forward %g", step, i, got[i], want[i])
							}
						}
						id = Argmax(got)
					}
					if raceBuild {
						return // allocation counts do not hold under the race detector
					}
					smp := NewSampler(1, 1, 3)
					smp.sample(s.logits, m.Pool)
					var ms0, ms1 runtime.MemStats
					runtime.ReadMemStats(&ms0)
					const runs = 20
					allocs := testing.AllocsPerRun(runs, func() {
						logits, err := s.Step(id)
						if err != nil {
							t.Fatal(err)
						}
						id = smp.sample(logits, m.Pool)
					})
					runtime.ReadMemStats(&ms1)
					bytes := float64(ms1.TotalAlloc-ms0.TotalAlloc) / (runs + 1)
					t.Logf("%.0f allocations, %.0f bytes per step", allocs, bytes)
					if allocs != 0 {
						t.Errorf("%.0f allocations (%.0f bytes) per step, want none", allocs, bytes)
					}
				})
			}
		}
	}
}

// TestCloseEndsPoolWorkers: Model.Close ends the workers its pool started,
// while the model is still referenced (so not by the pool's cleanup, which
// runs only once the pool is garbage).
func TestCloseEndsPoolWorkers(t *testing.T) {
	dir := stepPacks(t)["qwen3moe"]
	before := runtime.NumGoroutine()
	m, err := Open(dir, Options{Mode: Fast, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NewSession().Forward([]int32{3, 1000, 77}, false); err != nil {
		t.Fatal(err)
	}
	if n := runtime.NumGoroutine(); n < before+3 {
		t.Fatalf("%d goroutines before Open, %d after a forward pass at 4 threads: the pool started no workers", before, n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
	runtime.KeepAlive(m)
}

// waitGoroutines waits (at most 10 s, a liveness bound, not a timing
// assertion) for the goroutine count to fall to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, want at most %d", runtime.NumGoroutine(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package engine

import (
	"fmt"
	"testing"
	"time"
)

// TestStepTimes: a timed session counts its steps, its product phases the
// weight bytes a step reads (the dense matrices but the embedding row, and
// the routed experts' gate, up and down: Model.DenseBytesPerToken and the
// experts' payload), its phases add up to no more than the steps' wall
// time (they partition each step), and the timing changes no logit.
func TestStepTimes(t *testing.T) {
	for arch, dir := range stepPacks(t) {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/j%d", arch, threads), func(t *testing.T) {
				m, err := Open(dir, Options{Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				ref, s := m.NewSession(), m.NewSession()
				st := new(StepTimes)
				s.Timing = st
				prompt := []int32{3, 1000, 77}
				for _, x := range []*Session{ref, s} {
					if _, err := x.Forward(prompt, false); err != nil {
						t.Fatal(err)
					}
				}
				if st.Steps != 0 {
					t.Fatalf("a prompt counted %d steps", st.Steps)
				}
				const steps = 5
				var wall time.Duration
				id := int32(9)
				for i := 0; i < steps; i++ {
					want, err := ref.Step(id)
					if err != nil {
						t.Fatal(err)
					}
					want = append([]float32(nil), want...)
					t0 := time.Now()
					got, err := s.Step(id)
					wall += time.Since(t0)
					if err != nil {
						t.Fatal(err)
					}
					for j := range want {
						if got[j] != want[j] {
							t.Fatalf("step %d logit %d: %g timed, %g not", i, j, got[j], want[j])
						}
					}
					id = Argmax(got)
				}
				if st.Steps != steps {
					t.Fatalf("%d steps counted, ran %d", st.Steps, steps)
				}
				c := &m.Config
				var prod, total int64
				for p := Phase(0); p < NumPhases; p++ {
					if st.Bytes[p] != 0 && !p.Products() {
						t.Errorf("phase %s read %d weight bytes but is not a product phase", p, st.Bytes[p])
					}
					prod += st.Bytes[p]
					total += st.Nanos[p]
				}
				ex, err := m.Experts.Get(0, 0)
				if err != nil {
					t.Fatal(err)
				}
				perExpert := int64(len(ex.Gate.Data) + len(ex.Up.Data) + len(ex.Down.Data))
				m.Experts.Release(0, 0)
				want := m.DenseBytesPerToken() - int64(m.Embd.RowBytes) + int64(c.Layers*c.ExpertsUsed)*perExpert
				if prod != steps*want {
					t.Errorf("product phases read %d bytes in %d steps, want %d a step", prod, steps, want)
				}
				if total <= 0 || time.Duration(total) > wall {
					t.Errorf("phases add up to %v, the steps took %v", time.Duration(total), wall)
				}
			})
		}
	}
}

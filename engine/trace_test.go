package engine

import (
	"math"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/kernels"
)

// actRecorder checks every trace's MoEInput and ExpertAct against the
// expert matrices applied to them directly.
type actRecorder struct {
	t      *testing.T
	m      *Model
	traces int
	worst  float64
}

func (r *actRecorder) Layer(tr *LayerTrace) {
	c := &r.m.Config
	K, D, F := c.ExpertsUsed, c.Embd, c.ExpertFF
	if len(tr.MoEInput) != tr.Tokens*D || len(tr.ExpertAct) != tr.Tokens*K*F {
		r.t.Fatalf("layer %d: MoEInput %d, ExpertAct %d values for %d tokens", tr.Layer, len(tr.MoEInput), len(tr.ExpertAct), tr.Tokens)
	}
	r.traces++
	scratch := make([]float32, max(D, F))
	for t := 0; t < tr.Tokens; t++ {
		x := tr.MoEInput[t*D : (t+1)*D]
		for k := 0; k < K; k++ {
			slot := t*K + k
			ex, err := r.m.Experts.Get(tr.Layer, int(tr.IDs[slot]))
			if err != nil {
				r.t.Fatal(err)
			}
			act := tr.ExpertAct[slot*F : (slot+1)*F]
			for i := 0; i < F; i++ {
				g := kernels.Dot(ex.Gate.Type, ex.Gate.Row(i), x, scratch)
				u := kernels.Dot(ex.Up.Type, ex.Up.Row(i), x, scratch)
				r.note(float64(silu(g)*u), float64(act[i]))
			}
			out := tr.ExpertOut[slot*D : (slot+1)*D]
			for i := 0; i < D; i++ {
				r.note(float64(kernels.Dot(ex.Down.Type, ex.Down.Row(i), act, scratch)), float64(out[i]))
			}
			r.m.Experts.Release(tr.Layer, int(tr.IDs[slot]))
		}
	}
}

func (r *actRecorder) note(want, got float64) {
	d := math.Abs(want-got) / (1e-3 + math.Abs(want))
	r.worst = max(r.worst, d)
}

// TestTraceExpertInputs: the traced MoE input and SwiGLU products are the
// inputs the experts really used, in the batched path and one token at a
// time, and ExpertAct stays nil unless asked for.
func TestTraceExpertInputs(t *testing.T) {
	m := openModel(t, "model-bf16.gguf")
	ids := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:24]
	rec := &actRecorder{t: t, m: m}
	s := m.NewSession()
	s.Observer, s.TraceExpertAct = rec, true
	if _, err := s.Forward(ids[:16], false); err != nil { // batched
		t.Fatal(err)
	}
	for _, id := range ids[16:] { // one token at a time
		if _, err := s.Forward([]int32{id}, false); err != nil {
			t.Fatal(err)
		}
	}
	if want := m.Config.Layers * 9; rec.traces != want {
		t.Fatalf("%d traces, want %d", rec.traces, want)
	}
	if rec.worst > 1e-4 {
		t.Fatalf("traced expert inputs differ from recomputed ones by %.3g (relative)", rec.worst)
	}
	s2 := m.NewSession()
	var sawNil bool
	s2.Observer = observerFunc(func(tr *LayerTrace) { sawNil = tr.ExpertAct == nil && len(tr.MoEInput) == tr.Tokens*m.Config.Embd })
	if _, err := s2.Forward(ids[:4], false); err != nil {
		t.Fatal(err)
	}
	if !sawNil {
		t.Fatal("without TraceExpertAct the trace should carry MoEInput and no ExpertAct")
	}
}

type observerFunc func(tr *LayerTrace)

func (f observerFunc) Layer(tr *LayerTrace) { f(tr) }

package engine

import (
	"math"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

// traceRecord keeps copies of every trace an Observer sees.
type traceRecord struct{ got []LayerTrace }

func (r *traceRecord) Layer(tr *LayerTrace) {
	cp := func(v []float32) []float32 { return append([]float32(nil), v...) }
	r.got = append(r.got, LayerTrace{Layer: tr.Layer, Seq: tr.Seq, Pos0: tr.Pos0, Tokens: tr.Tokens, Probs: cp(tr.Probs),
		IDs: append([]int32(nil), tr.IDs...), Weights: cp(tr.Weights), ExpertOut: cp(tr.ExpertOut), MoEInput: cp(tr.MoEInput),
		ExpertAct: cp(tr.ExpertAct), Hidden: cp(tr.Hidden), MixerOut: cp(tr.MixerOut), SharedGate: cp(tr.SharedGate), SharedOut: cp(tr.SharedOut)})
}

// TestGroupMatchesSessions: a Group's traces of several sequences of
// different lengths are, bit for bit and field by field, those of each
// sequence run alone in a Session in batches of 5 tokens, on the tiny
// qwen3moe (BF16 in the exact mode, IQ4_NL and IQ3_S in the fast mode) and
// the tiny qwen35moe (gated delta nets and attention, IQ4_NL, fast), at 1
// and 2 threads; and a second Forward starts every sequence afresh.
func TestGroupMatchesSessions(t *testing.T) {
	cases := []struct {
		model, file string
		mode        Mode
	}{
		{"tiny-qwen3moe", "model-bf16.gguf", Exact},
		{"tiny-qwen3moe", "model-iq4nl.gguf", Fast},
		{"tiny-qwen3moe", "model-iq3s.gguf", Fast},
		{"tiny-qwen35moe", "model-iq4nl.gguf", Fast},
	}
	for _, tc := range cases {
		for _, threads := range []int{1, 2} {
			m, err := Open(testutil.Path(t, "models", tc.model, tc.file), Options{Mode: tc.mode, Threads: threads})
			if err != nil {
				t.Fatal(err)
			}
			seqs := make([][]int32, 3)
			for i := range seqs {
				for j := 0; j < 9+7*i; j++ {
					seqs[i] = append(seqs[i], int32((i*977+j*131+7)%m.Config.Vocab))
				}
			}
			want := &traceRecord{}
			s := m.NewSession()
			s.Observer, s.TraceExpertAct, s.MaxBatch = want, true, 5
			var ref [][]LayerTrace // per sequence, per layer: the batches' traces joined
			for _, w := range seqs {
				want.got = nil
				s.Reset()
				if _, err := s.Forward(w, false); err != nil {
					t.Fatal(err)
				}
				ref = append(ref, joinBatches(want.got, len(m.Layers)))
			}
			g := m.NewGroup()
			rec := &traceRecord{}
			g.Observer, g.TraceExpertAct = rec, true
			for run := 0; run < 2; run++ {
				rec.got = nil
				if err := g.Forward(seqs); err != nil {
					t.Fatal(err)
				}
				if len(rec.got) != len(seqs)*len(m.Layers) {
					t.Fatalf("%s %s: %d traces, want %d", tc.model, tc.file, len(rec.got), len(seqs)*len(m.Layers))
				}
				for i, tr := range rec.got {
					l, seq := i/len(seqs), i%len(seqs)
					if tr.Layer != l || tr.Seq != seq || tr.Pos0 != 0 || tr.Tokens != len(seqs[seq]) {
						t.Fatalf("%s %s: trace %d is layer %d seq %d pos %d of %d tokens, want layer %d seq %d pos 0 of %d", tc.model, tc.file, i, tr.Layer, tr.Seq, tr.Pos0, tr.Tokens, l, seq, len(seqs[seq]))
					}
					sameTrace(t, tc.file, &tr, &ref[seq][l])
				}
			}
			m.Close()
		}
	}
}

// joinBatches joins a session's per-batch traces into one per layer.
func joinBatches(trs []LayerTrace, layers int) []LayerTrace {
	out := make([]LayerTrace, layers)
	for _, tr := range trs {
		o := &out[tr.Layer]
		o.Layer, o.Tokens = tr.Layer, o.Tokens+tr.Tokens
		o.Probs, o.IDs, o.Weights = append(o.Probs, tr.Probs...), append(o.IDs, tr.IDs...), append(o.Weights, tr.Weights...)
		o.ExpertOut, o.MoEInput, o.ExpertAct = append(o.ExpertOut, tr.ExpertOut...), append(o.MoEInput, tr.MoEInput...), append(o.ExpertAct, tr.ExpertAct...)
		o.Hidden, o.MixerOut = append(o.Hidden, tr.Hidden...), append(o.MixerOut, tr.MixerOut...)
		o.SharedGate, o.SharedOut = append(o.SharedGate, tr.SharedGate...), append(o.SharedOut, tr.SharedOut...)
	}
	return out
}

func sameTrace(t *testing.T, name string, got, want *LayerTrace) {
	t.Helper()
	fields := []struct {
		name string
		g, w []float32
	}{{"Probs", got.Probs, want.Probs}, {"Weights", got.Weights, want.Weights}, {"ExpertOut", got.ExpertOut, want.ExpertOut},
		{"MoEInput", got.MoEInput, want.MoEInput}, {"ExpertAct", got.ExpertAct, want.ExpertAct}, {"Hidden", got.Hidden, want.Hidden},
		{"MixerOut", got.MixerOut, want.MixerOut}, {"SharedGate", got.SharedGate, want.SharedGate}, {"SharedOut", got.SharedOut, want.SharedOut}}
	for _, f := range fields {
		if len(f.g) != len(f.w) {
			t.Fatalf("%s layer %d seq %d: %s has %d values, want %d", name, got.Layer, got.Seq, f.name, len(f.g), len(f.w))
		}
		for i := range f.w {
			if math.Float32bits(f.g[i]) != math.Float32bits(f.w[i]) {
				t.Fatalf("%s layer %d seq %d: %s[%d] = %g, alone %g", name, got.Layer, got.Seq, f.name, i, f.g[i], f.w[i])
			}
		}
	}
	if len(got.IDs) != len(want.IDs) {
		t.Fatalf("%s layer %d seq %d: %d ids, want %d", name, got.Layer, got.Seq, len(got.IDs), len(want.IDs))
	}
	for i := range want.IDs {
		if got.IDs[i] != want.IDs[i] {
			t.Fatalf("%s layer %d seq %d: id %d is %d, alone %d", name, got.Layer, got.Seq, i, got.IDs[i], want.IDs[i])
		}
	}
}

package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

func readI32(t testing.TB, path string) []int32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

type greedyRef struct {
	PromptIDs    []int32   `json:"prompt_ids"`
	GeneratedIDs []int32   `json:"generated_ids"`
	Margins      []float64 `json:"top1_minus_top2_logit"`
}

func readGreedy(t testing.TB, path string) greedyRef {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g greedyRef
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.PromptIDs) == 0 || len(g.GeneratedIDs) == 0 {
		t.Fatalf("%s: no ids", path)
	}
	return g
}

func openModel(t testing.TB, name string) *Model {
	t.Helper()
	m, err := Open(testutil.TinyModel(t, name), Options{Mode: Exact})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// compareLogits applies the acceptance rule: max |diff| <= 1e-3 x the
// largest reference logit magnitude, and the same argmax, row by row.
func compareLogits(t testing.TB, what string, got, want []float32, vocab int) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	var maxRef, maxDiff float64
	for i := range want {
		maxRef = math.Max(maxRef, math.Abs(float64(want[i])))
		maxDiff = math.Max(maxDiff, math.Abs(float64(got[i]-want[i])))
	}
	if !(maxDiff <= 1e-3*maxRef) {
		t.Errorf("%s: max |diff| %.3g > 1e-3 x %.3g", what, maxDiff, maxRef)
	}
	for r := 0; r < len(want)/vocab; r++ {
		g, w := Argmax(got[r*vocab:(r+1)*vocab]), Argmax(want[r*vocab:(r+1)*vocab])
		if g != w {
			t.Errorf("%s row %d: argmax %d, want %d", what, r, g, w)
		}
	}
	return maxDiff
}

// recorder keeps every layer trace of a run.
type recorder struct {
	probs, weights, hidden [][]float32 // per layer, appended over batches
	mixer, shared          [][]float32
	ids                    [][]int32
}

func (r *recorder) Layer(tr *LayerTrace) {
	for len(r.probs) <= tr.Layer {
		r.probs = append(r.probs, nil)
		r.weights = append(r.weights, nil)
		r.hidden = append(r.hidden, nil)
		r.ids = append(r.ids, nil)
		r.mixer = append(r.mixer, nil)
		r.shared = append(r.shared, nil)
	}
	l := tr.Layer
	r.mixer[l] = append(r.mixer[l], tr.MixerOut...)
	r.shared[l] = append(r.shared[l], tr.SharedGate...)
	r.probs[l] = append(r.probs[l], tr.Probs...)
	r.weights[l] = append(r.weights[l], tr.Weights...)
	r.hidden[l] = append(r.hidden[l], tr.Hidden...)
	r.ids[l] = append(r.ids[l], tr.IDs...)
}

func TestEvalRefsBF16(t *testing.T) {
	m := openModel(t, "model-bf16.gguf")
	c := m.Config
	if c.Layers != 4 || c.Embd != 256 || c.Heads != 4 || c.HeadsKV != 2 || c.HeadDim != 64 || c.Experts != 32 || c.ExpertsUsed != 4 || c.ExpertFF != 256 || c.Vocab != 4096 || !c.NormTopK {
		t.Fatalf("config %+v", c)
	}
	tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))
	refLogits := testutil.ReadF32(t, testutil.TinyModel(t, "refs", "eval_logits.f32.bin"))
	refHidden := testutil.ReadF32(t, testutil.TinyModel(t, "refs", "eval_hidden.f32.bin"))
	refIDs := readI32(t, testutil.TinyModel(t, "refs", "eval_router_ids.i32.bin"))
	refW := testutil.ReadF32(t, testutil.TinyModel(t, "refs", "eval_router_weights.f32.bin"))
	const S, P, V, D, L, K, E = 4, 64, 4096, 256, 4, 4, 32
	if len(tokens) != S*P || len(refLogits) != S*P*V || len(refHidden) != S*L*P*D || len(refIDs) != L*S*P*K {
		t.Fatal("reference sizes")
	}
	for seq := 0; seq < S; seq++ {
		ids := tokens[seq*P : (seq+1)*P]
		rec := &recorder{}
		s := m.NewSession()
		s.Observer = rec
		s.MaxBatch = 24 // several batches: the KV cache joins them
		logits, err := s.Forward(ids, true)
		if err != nil {
			t.Fatal(err)
		}
		diff := compareLogits(t, "eval logits", logits, refLogits[seq*P*V:(seq+1)*P*V], V)
		t.Logf("seq %d: max |logit diff| %.3g", seq, diff)
		for l := 0; l < L; l++ {
			for p := 0; p < P; p++ {
				got := rec.hidden[l][p*D : (p+1)*D]
				want := refHidden[((seq*L+l)*P+p)*D : ((seq*L+l)*P+p+1)*D]
				var num, den float64
				for i := range want {
					d := float64(got[i] - want[i])
					num += d * d
					den += float64(want[i]) * float64(want[i])
				}
				if rel := math.Sqrt(num / den); !(rel <= 1e-4) {
					t.Errorf("seq %d layer %d pos %d: hidden rel L2 error %.3g", seq, l, p, rel)
				}
				base := ((l*S+seq)*P + p) * K
				checkRouting(t, fmt.Sprintf("seq %d layer %d pos %d", seq, l, p), rec.ids[l][p*K:(p+1)*K], refIDs[base:base+K],
					rec.probs[l][p*E:(p+1)*E], rec.weights[l][p*K:(p+1)*K], refW[base:base+K])
			}
		}
	}
}

// checkRouting compares one token's picks with the reference: the same set
// of experts (a different one only where the k-th probability ties within
// 1e-6), and the weights of the experts at the same rank within 1e-5.
func checkRouting(t *testing.T, where string, gotIDs, wantIDs []int32, probs, gotW, wantW []float32) {
	t.Helper()
	K := len(wantIDs)
	if !sameSet(gotIDs, wantIDs) {
		kth := probs[wantIDs[K-1]]
		for _, e := range gotIDs {
			if !contains(wantIDs, e) && math.Abs(float64(probs[e]-kth)) > 1e-6 {
				t.Errorf("%s: experts %v, want %v", where, gotIDs, wantIDs)
			}
		}
		return
	}
	for k := 0; k < K; k++ {
		if gotIDs[k] == wantIDs[k] {
			if d := math.Abs(float64(gotW[k] - wantW[k])); d > 1e-5 {
				t.Errorf("%s: weight %d differs by %.3g", where, k, d)
			}
		}
	}
}

func sameSet(a, b []int32) bool {
	a = append([]int32(nil), a...)
	b = append([]int32(nil), b...)
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestPrefillEqualsDecode: batched prefill and token-by-token decode with
// the KV cache give the same bits.
func TestPrefillEqualsDecode(t *testing.T) {
	prefillEqualsDecode(t, openModel(t, "model-bf16.gguf"), readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:40])
}

// prefillEqualsDecode requires m's batched prefill of tokens and its
// token-by-token decode to give the same logit bits.
func prefillEqualsDecode(t *testing.T, m *Model, tokens []int32) {
	t.Helper()
	V := m.Config.Vocab
	s := m.NewSession()
	all, err := s.Forward(tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	d := m.NewSession()
	for i, id := range tokens {
		got, err := d.Forward([]int32{id}, false)
		if err != nil {
			t.Fatal(err)
		}
		want := all[i*V : (i+1)*V]
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("position %d logit %d: decode %g, prefill %g", i, j, got[j], want[j])
			}
		}
	}
}

// greedy decodes n tokens after prompt with the KV cache and returns the ids
// and the logits of each step.
func greedy(t testing.TB, m *Model, prompt []int32, n int) ([]int32, []float32) {
	t.Helper()
	s := m.NewSession()
	logits, err := s.Forward(prompt, false)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	var steps []float32
	for i := 0; i < n; i++ {
		steps = append(steps, logits...)
		id := Argmax(logits)
		ids = append(ids, id)
		if i+1 < n {
			if logits, err = s.Forward([]int32{id}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids, steps
}

func TestGreedyBF16(t *testing.T) {
	m := openModel(t, "model-bf16.gguf")
	ref := readGreedy(t, testutil.TinyModel(t, "refs", "greedy.json"))
	ids, logits := greedy(t, m, ref.PromptIDs, len(ref.GeneratedIDs))
	for i := range ids {
		if ids[i] != ref.GeneratedIDs[i] {
			t.Fatalf("step %d: token %d, want %d (got %v)", i, ids[i], ref.GeneratedIDs[i], ids)
		}
	}
	compareLogits(t, "greedy logits", logits, testutil.ReadF32(t, testutil.TinyModel(t, "refs", "greedy_logits.f32.bin")), m.Config.Vocab)
}

func TestQuantizedVariants(t *testing.T) {
	tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))
	for _, v := range []struct{ file, refs string }{
		{"model-iq4nl.gguf", "refs-iq4nl"},
		{"model-iq3s.gguf", "refs-iq3s"},
		{"model-mixed.gguf", "refs-mixed"},
	} {
		t.Run(v.refs, func(t *testing.T) {
			m := openModel(t, v.file)
			V := m.Config.Vocab
			want := testutil.ReadF32(t, testutil.TinyModel(t, v.refs, "eval_last_logits.f32.bin"))
			var got []float32
			for seq := 0; seq < 4; seq++ {
				l, err := m.NewSession().Forward(tokens[seq*64:(seq+1)*64], false)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, l...)
			}
			diff := compareLogits(t, "last logits", got, want, V)
			t.Logf("max |logit diff| %.3g", diff)
			ref := readGreedy(t, testutil.TinyModel(t, v.refs, "greedy.json"))
			ids, _ := greedy(t, m, ref.PromptIDs, len(ref.GeneratedIDs))
			for i := range ids {
				if ids[i] != ref.GeneratedIDs[i] {
					t.Fatalf("step %d: token %d, want %d", i, ids[i], ref.GeneratedIDs[i])
				}
			}
		})
	}
}

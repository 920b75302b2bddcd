package prune

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
)

// layer0 records the first layer's routing and expert outputs.
type layer0 struct {
	probs, weights, outs []float32
	ids                  []int32
}

func (o *layer0) Layer(tr *engine.LayerTrace) {
	if tr.Layer == 0 {
		o.probs = append(o.probs, tr.Probs...)
		o.ids = append(o.ids, tr.IDs...)
		o.weights = append(o.weights, tr.Weights...)
		o.outs = append(o.outs, tr.ExpertOut...)
	}
}

func trace(t *testing.T, path string, ids []int32) *layer0 {
	t.Helper()
	m, err := engine.Open(path, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	o := &layer0{}
	s.Observer = o
	if _, err := s.Forward(ids, false); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestPrunedModelRoutes runs the engine on the original and on a pruned
// model. Layer 0 sees the same input in both, so the pruned model must pick,
// among its kept experts, the 4 with the highest original router
// probability, and each picked expert must produce the same output vector as
// the source expert it was cut from: router rows and expert slices line up.
func TestPrunedModelRoutes(t *testing.T) {
	src := testutil.TinyModel(t, "model-bf16.gguf")
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	plan := tinyPlan(t, f, func(l int) []int {
		ids := []int{}
		for e := 31 - l; len(ids) < 12; e -= 2 + l%2 {
			ids = append(ids, (e+32)%32)
		}
		return sortedUnique(t, ids)
	})
	out := filepath.Join(t.TempDir(), "pruned.gguf")
	if _, err := Write(context.Background(), f, plan, out, Options{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tokens := []int32{726, 2611, 10, 3, 99, 1000, 17, 2048, 5, 6, 7, 8, 300, 301, 302, 4000}
	a, b := trace(t, src, tokens), trace(t, out, tokens)
	const E, K, D = 32, 4, 256
	var kept []int
	for _, e := range plan.Keep[0] {
		kept = append(kept, int(e))
	}
	compared := 0
	for tk := range tokens {
		p := a.probs[tk*E : (tk+1)*E]
		cand := slices.Clone(kept)
		sort.SliceStable(cand, func(i, j int) bool { return p[cand[i]] > p[cand[j]] })
		var got []int
		for _, i := range b.ids[tk*K : (tk+1)*K] {
			got = append(got, kept[i])
		}
		if !slices.Equal(got, cand[:K]) {
			t.Fatalf("token %d: pruned model picks source experts %v, the original router's best kept are %v", tk, got, cand[:K])
		}
		// Where the original picked the same expert, the outputs agree.
		for j, e := range a.ids[tk*K : (tk+1)*K] {
			for jj, g := range got {
				if int(e) != g {
					continue
				}
				x := a.outs[(tk*K+j)*D : (tk*K+j+1)*D]
				y := b.outs[(tk*K+jj)*D : (tk*K+jj+1)*D]
				if !slices.Equal(x, y) {
					t.Fatalf("token %d: expert %d's output differs after pruning", tk, e)
				}
				compared++
			}
		}
	}
	if compared == 0 {
		t.Fatal("no expert was picked by both models: the output check compared nothing")
	}
	t.Logf("%d expert outputs compared", compared)
}

package calib

import (
	"bytes"
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/optq"
	"github.com/stratactl/stratactl/strata"
)

func openTiny(t *testing.T, threads int) *engine.Model {
	t.Helper()
	m, err := engine.Open(testutil.TinyModel(t, "model-bf16.gguf"), engine.Options{Threads: threads, Mode: engine.Exact})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func tinyWindows(t *testing.T, n, ctx int) [][]int32 {
	t.Helper()
	ids, err := evalq.ReadIDs(testutil.TinyModel(t, "calib_tokens.i32.bin"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := evalq.Windows(ids, ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

type traceCopy struct {
	layer int
	x     [][]float32 // per token
	ids   [][]int32
}

func (c *traceCopy) Layer(tr *engine.LayerTrace) {
	if tr.Layer != c.layer {
		return
	}
	D, K := len(tr.MoEInput)/tr.Tokens, len(tr.IDs)/tr.Tokens
	for t := 0; t < tr.Tokens; t++ {
		c.x = append(c.x, append([]float32(nil), tr.MoEInput[t*D:(t+1)*D]...))
		c.ids = append(c.ids, append([]int32(nil), tr.IDs[t*K:(t+1)*K]...))
	}
}

// TestCollectRoutedInputs: each expert's inputs are the MoE inputs of
// exactly the tokens routed to it, the held-back window's apart, whether
// the windows run all together, one per batch, or each in batches shorter
// than a window.
func TestCollectRoutedInputs(t *testing.T) {
	for _, batch := range []int{0, 40, 20} {
		testCollectRoutedInputs(t, batch)
	}
}

func testCollectRoutedInputs(t *testing.T, batch int) {
	m := openTiny(t, 0)
	windows := tinyWindows(t, 3, 32)
	set, err := Collect(context.Background(), m, []int{0, 2}, windows, Options{HoldEvery: 3, Dir: t.TempDir(), BatchTokens: batch})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Tokens != 96 || set.HeldTokens != 32 || set.HeldWindows != 1 {
		t.Fatalf("tokens %d, held %d in %d windows; want 96, 32, 1", set.Tokens, set.HeldTokens, set.HeldWindows)
	}
	ref := &traceCopy{layer: 2}
	s := m.NewSession()
	s.Observer = ref
	for _, w := range windows {
		s.Reset()
		if _, err := s.Forward(w, false); err != nil {
			t.Fatal(err)
		}
	}
	L, err := set.Layer(2)
	if err != nil {
		t.Fatal(err)
	}
	D := m.Config.Embd
	for e := 0; e < m.Config.Experts; e++ {
		var train, held [][]float32
		for tok, ids := range ref.ids {
			for _, id := range ids {
				if int(id) == e {
					if tok >= 64 {
						held = append(held, ref.x[tok])
					} else {
						train = append(train, ref.x[tok])
					}
				}
			}
		}
		in, err := L.Inputs(e)
		if err != nil {
			t.Fatal(err)
		}
		if in.N != len(train) || in.NH != len(held) || L.Tokens(e) != in.N {
			t.Fatalf("expert %d: %d + %d inputs, want %d + %d", e, in.N, in.NH, len(train), len(held))
		}
		for j, x := range train {
			if !slices.Equal(in.X[j*D:(j+1)*D], x) {
				t.Fatalf("batches of %d: expert %d input %d differs from the traced MoE input", batch, e, j)
			}
		}
		for j, x := range held {
			if !slices.Equal(in.Held[j*D:(j+1)*D], x) {
				t.Fatalf("batches of %d: expert %d held input %d differs from the traced MoE input", batch, e, j)
			}
		}
	}
	if _, err := set.Layer(1); err == nil {
		t.Fatal("layer 1 was not collected but Layer gave it")
	}
}

// TestQuantizerDeterministic: the same bytes with 1 or 2 matmul threads in
// the calibration run and 1 or 2 goroutines asking in different orders, the
// results held in memory or (no budget) every one in the spill file, and
// with a later layer (3) collected beside layer 1.
func TestQuantizerDeterministic(t *testing.T) {
	const experts = 3
	run := func(threads, workers int, budget int64, more bool) [][]byte {
		m := openTiny(t, threads)
		blocks := []int{1}
		if more {
			blocks = []int{1, 3}
		}
		set, err := Collect(context.Background(), m, blocks, tinyWindows(t, 2, 64), Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer set.Close()
		q, err := NewQuantizer(m.File, set, optq.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		q.budget = budget
		moe, _ := m.File.MoE()
		L := moe.Layers[1]
		tensors := []*gguf.TensorInfo{L.Gate, L.Up, L.Down}
		out := make([][]byte, experts*3)
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < len(out); k++ {
					i := k
					if w == 1 {
						i = len(out) - 1 - k
					}
					if i%workers != w {
						continue
					}
					t := tensors[i%3]
					b, err := q.Rows(context.Background(), t, i/3, 0, t.Ne(1))
					if err != nil {
						errs[w] = err
						return
					}
					out[i] = append([]byte(nil), b...)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if want := map[bool]int64{true: experts, false: 0}[budget == 0]; q.Spilled() != want {
			t.Fatalf("budget %d: %d experts spilled, want %d", budget, q.Spilled(), want)
		}
		// These few windows give every expert fewer tokens than n_embd: each
		// one that got any skips the expert-output refinement, and the
		// record says how many.
		in, err := set.Layer(1)
		if err != nil {
			t.Fatal(err)
		}
		var few int
		for e := 0; e < experts; e++ {
			if n := in.Tokens(e); n > 0 && float64(n) < optq.DefaultExpertTokens*float64(L.Embd) {
				few++
			}
		}
		var rec strata.Calibration
		RecordResults(&rec, q)
		if few == 0 || rec.ExpertSkipped != few {
			t.Fatalf("%d experts recorded as skipping the expert-output refinement, want %d (> 0)", rec.ExpertSkipped, few)
		}
		return out
	}
	a, b, c := run(1, 1, ResultBudget, false), run(2, 2, 0, false), run(2, 2, ResultBudget, true)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("expert %d matrix %d differs between -j 1 and -j 2", i/3, i%3)
		}
		if !bytes.Equal(a[i], c[i]) {
			t.Fatalf("expert %d matrix %d differs with layer 3 collected too", i/3, i%3)
		}
	}
}

// TestClose: a closed Set has removed its files; its layers then give an
// error, not routing without inputs.
func TestClose(t *testing.T) {
	m := openTiny(t, 0)
	dir := t.TempDir()
	set, err := Collect(context.Background(), m, []int{0, 3}, tinyWindows(t, 4, 64), Options{Dir: dir, BatchTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Layer(3); err == nil {
		t.Fatal("a closed set gave layer 3")
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files left in the spill folder", len(left))
	}
	set, err = Collect(context.Background(), m, []int{0}, tinyWindows(t, 1, 16), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Tokens != 16 {
		t.Fatalf("%d tokens, want 16", set.Tokens)
	}
}

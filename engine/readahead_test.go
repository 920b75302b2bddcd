package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

// guessLog is an expert store that logs each Guess with the forward pass
// it belongs to (the count of Needs of its layer so far).
type guessLog struct {
	ExpertStore
	needs   []int
	guesses []loggedGuess
}

type loggedGuess struct {
	pass, layer int
	ids         []int
}

func (g *guessLog) Need(layer int, ids []int) {
	g.needs[layer]++
	g.ExpertStore.Need(layer, ids)
}

func (g *guessLog) Guess(layer int, ids []int) {
	g.guesses = append(g.guesses, loggedGuess{g.needs[layer], layer, slices.Clone(ids)})
	g.ExpertStore.Guess(layer, ids)
}

// hiddenLog keeps each forward pass's last hidden row after each layer,
// and its token mixer's output row.
type hiddenLog struct{ last, mixer [][][]float32 } // [pass][layer][Embd]

func (h *hiddenLog) Layer(tr *LayerTrace) {
	if tr.Layer == 0 {
		h.last, h.mixer = append(h.last, nil), append(h.mixer, nil)
	}
	D := len(tr.Hidden) / tr.Tokens
	p := len(h.last) - 1
	h.last[p] = append(h.last[p], slices.Clone(tr.Hidden[(tr.Tokens-1)*D:]))
	h.mixer[p] = append(h.mixer[p], slices.Clone(tr.MixerOut[(tr.Tokens-1)*D:]))
}

// TestReadAheadAddsLastDelta: from the second forward pass on, read-ahead
// guesses layer l from the residual before it, or, where that guess has
// scored better, from the residual plus the last token's change over
// layer l in the pass before, or plus its token mixer's output at layer l
// (the change and the output taken from the Observer's trace,
// independently of read-ahead's own record); the scores seeded for one
// kind to win, every guess logged is of that kind.
func TestReadAheadAddsLastDelta(t *testing.T) {
	for win := range raKinds {
		m, _ := openSmallArena(t, m0Used(t)+2)
		g := &guessLog{ExpertStore: m.Experts, needs: make([]int, m.Config.Layers)}
		m.Experts = g
		h := &hiddenLog{}
		s := m.NewSession()
		s.Observer = h
		depth := m.Experts.ReadAhead()
		s.ra, s.raDepth = make([]raLayer, m.Config.Layers*depth), depth
		for i := range s.ra {
			for k, sc := range []*raScore{&s.ra[i].raScore, &s.ra[i].withDelta, &s.ra[i].withMixer} {
				*sc = raScore{reads: raWindow}
				if k == win {
					sc.used = raWindow
				}
			}
		}
		tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:6]
		if _, err := s.Generate(t.Context(), tokens, GenerateOptions{MaxTokens: 8}); err != nil {
			t.Fatal(err)
		}
		c := &m.Config
		D, E, K := c.Embd, c.Experts, c.ExpertsUsed
		guess := func(l int, x []float32) []int {
			L := &m.Layers[l]
			xn := make([]float32, D)
			rmsNormRows(xn, x, L.FFNNorm, D, c.Eps)
			scores := make([]float32, E)
			matMul(m.Pool, L.RouterQ8, newActs(xn, D, Fast), scores)
			return topGuesses(scores, E, K)
		}
		checked, differ := 0, 0
		for _, lg := range g.guesses {
			p, l := lg.pass, lg.layer
			if p < 1 || l < 1 || p >= len(h.last) {
				continue
			}
			x := h.last[p][l-1]
			var kinds [raKinds][]int
			for k := range raKinds {
				est := slices.Clone(x)
				for i := range est {
					switch k {
					case 1:
						est[i] += h.last[p-1][l][i] - h.last[p-1][l-1][i]
					case 2:
						est[i] += h.mixer[p-1][l][i]
					}
				}
				kinds[k] = guess(l, est)
			}
			if !slices.Equal(lg.ids, kinds[win]) {
				t.Fatalf("kind %d, pass %d layer %d: guessed %v, want %v (the kinds' guesses %v)", win, p, l, lg.ids, kinds[win], kinds)
			}
			checked++
			for k := range raKinds {
				if !slices.Equal(kinds[k], kinds[win]) {
					differ++
					break
				}
			}
		}
		if checked < 2*(c.Layers-1) || differ == 0 {
			t.Fatalf("kind %d: %d guesses checked of %d logged, %d where the kinds differ", win, checked, len(g.guesses), differ)
		}
	}
}

// TestReadAheadBeats: one kind of guess beats another when its would-be
// reads were picked more often, counted as (used+1)/(reads+2); a tie is
// no win.
func TestReadAheadBeats(t *testing.T) {
	for _, tc := range []struct {
		a, b raScore
		want bool
	}{
		{raScore{reads: 10, used: 2}, raScore{reads: 10, used: 1}, true},
		{raScore{reads: 10, used: 1}, raScore{reads: 10, used: 1}, false},
		{raScore{}, raScore{}, false},
		{raScore{reads: 1, used: 1}, raScore{}, true},  // 2/3 against 1/2
		{raScore{reads: 2, used: 1}, raScore{}, false}, // 2/4 against 1/2
		{raScore{reads: 39, used: 23}, raScore{reads: 152, used: 36}, true},
		{raScore{reads: 152, used: 36}, raScore{reads: 39, used: 23}, false},
		{raScore{reads: 70, used: 8}, raScore{reads: 198, used: 49}, false},
	} {
		if got := tc.a.beats(&tc.b); got != tc.want {
			t.Errorf("%+v beats %+v: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestRMSNormKinds: read-ahead's norms of one to three kinds side by side
// give rmsNormRows' bits for each kind, over rows of every length 1..70
// and values of widely different magnitudes.
func TestRMSNormKinds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	val := func() float32 { return float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))) }
	for n := 1; n <= 70; n++ {
		const T = 3
		w := make([]float32, n)
		for i := range w {
			w[i] = val()
		}
		for _, kinds := range [][raKinds]bool{{true}, {true, true}, {true, false, true}, {true, true, true}} {
			var xs, ys [raKinds][]float32
			for k, on := range kinds {
				if on {
					xs[k], ys[k] = make([]float32, T*n), make([]float32, T*n)
					for i := range xs[k] {
						xs[k][i] = val()
					}
				}
			}
			rmsNormKinds(ys, xs, w, n, 1e-6)
			for k, x := range xs {
				if x == nil {
					continue
				}
				want := make([]float32, T*n)
				rmsNormRows(want, x, w, n, 1e-6)
				for i := range want {
					if math.Float32bits(ys[k][i]) != math.Float32bits(want[i]) {
						t.Fatalf("n %d kinds %v: kind %d element %d: %v, rmsNormRows %v", n, kinds, k, i, ys[k][i], want[i])
					}
				}
			}
		}
	}
}

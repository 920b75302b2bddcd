package optq

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// scoreCase is a group's weights (a different row for each block of
// lanes), 1/U_kk, in-group factor (by row: band[j] holds U_jk for k > j,
// as factors.band) and candidate scales, some of them 0, one tiny and one
// large (levels clamped at both ends).
func scoreCase(rng *rand.Rand) (w *blockRows, invDiag *[group]float32, band []float32, s *groupScore) {
	w, invDiag = new(blockRows), new([group]float32)
	band = make([]float32, group*group)
	for k := range invDiag {
		for b := range w {
			w[b][k] = float32(rng.NormFloat64())
		}
		invDiag[k] = float32(0.5 + rng.Float64())
	}
	for j := 0; j < group; j++ {
		for k := j + 1; k < group; k++ {
			band[j*group+k] = float32(0.3 * rng.NormFloat64())
		}
	}
	s = new(groupScore)
	for c := range s.d {
		var d float32
		switch {
		case c == 5 || c > 28:
		case c == 6:
			d = 1e-3
		case c == 7:
			d = -40
		default:
			d = roundFP16(float32(rng.NormFloat64()))
		}
		s.d[c] = d
		if d != 0 {
			s.inv[c] = 1 / d
		}
	}
	return w, invDiag, band, s
}

// columnPass is one candidate's in-group OPTQ pass as a plain column loop
// (each error carried to the later columns by kernels.Axpy, skipped when
// 0): its levels, errors and loss.
func columnPass(w, invDiag *[group]float32, band []float32, d float32) (lv [group]float32, e [group]float32, loss float32) {
	t := *w
	var inv float32
	if d != 0 {
		inv = 1 / d
	}
	for j := 0; j < group; j++ {
		lv[j] = level(t[j], inv)
		e[j] = (t[j] - d*lv[j]) * invDiag[j]
		loss += e[j] * e[j]
		if e[j] != 0 && j+1 < group {
			kernels.Axpy(t[j+1:], -e[j], band[j*group+j+1:(j+1)*group])
		}
	}
	return lv, e, loss
}

// TestScoreGroupIsColumnPass: every lane of scoreGroup (the path this CPU
// runs) gives the bits of its candidate's column-by-column pass over its
// block's row.
func TestScoreGroupIsColumnPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 20; trial++ {
		w, id, band, s := scoreCase(rng)
		bt := (&factors{cols: group, band: band}).bandByColumn()
		scoreGroup(w, id, (*[group * group]float32)(bt), s)
		for c := range scoreLanes {
			lv, e, loss := columnPass(&w[c/laneBlock], id, band, s.d[c])
			if math.Float32bits(loss) != math.Float32bits(s.loss[c]) {
				t.Fatalf("trial %d lane %d (d %v): loss %v, column pass %v", trial, c, s.d[c], s.loss[c], loss)
			}
			for k := range group {
				if l := s.l[k][c]; l != lv[k] || -s.ne[k][c] != e[k] {
					t.Fatalf("trial %d lane %d column %d: level %v error %v, column pass %v %v", trial, c, k, l, -s.ne[k][c], lv[k], e[k])
				}
			}
		}
	}
}

// TestScoreGroupPathsIdentical: each vector path this CPU has gives the
// portable path's bits, and writes nothing outside the pass.
func TestScoreGroupPathsIdentical(t *testing.T) {
	for _, p := range scoreGroupPaths {
		t.Run(p.name, func(t *testing.T) { scorePathIdentical(t, p.f) })
	}
}

func scorePathIdentical(t *testing.T, vector func(w *blockRows, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore)) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 50; trial++ {
		w, id, band, s := scoreCase(rng)
		bt := (&factors{cols: group, band: band}).bandByColumn()
		g := guardedScores(rng, s)
		w0, id0, bt0 := *w, *id, append([]float32(nil), bt...)
		scoreGroupGo(w, id, (*[group * group]float32)(bt), &g[0].s)
		vector(w, id, (*[group * group]float32)(bt), &g[1].s)
		if *w != w0 || *id != id0 {
			t.Fatal("scoreGroup wrote to its inputs")
		}
		for i, v := range bt {
			if v != bt0[i] {
				t.Fatal("scoreGroup wrote to the factor")
			}
		}
		sameScores(t, trial, g)
	}
}

// guardedScore is a pass's groupScore between two guard bands.
type guardedScore struct {
	pre  [64]float32
	s    groupScore
	post [64]float32
}

// guardedScores are two copies of s (portable, vector) in guard bands,
// with random stale errors and levels that must not leak in.
func guardedScores(rng *rand.Rand, s *groupScore) *[2]guardedScore {
	guard := math.Float32frombits(0x7fc0dead)
	var g [2]guardedScore
	for i := range g {
		for k := range g[i].pre {
			g[i].pre[k], g[i].post[k] = guard, guard
		}
		g[i].s = *s
		for k := range g[i].s.ne {
			for c := range g[i].s.ne[k] {
				g[i].s.ne[k][c] = float32(rng.NormFloat64())
				g[i].s.l[k][c] = float32(rng.NormFloat64())
			}
		}
	}
	return &g
}

// sameScores fails unless g[1] (vector) has g[0]'s (portable) bits and its
// guards are intact.
func sameScores(t *testing.T, trial int, g *[2]guardedScore) {
	t.Helper()
	for k := range g[1].pre {
		if math.Float32bits(g[1].pre[k]) != 0x7fc0dead || math.Float32bits(g[1].post[k]) != 0x7fc0dead {
			t.Fatalf("trial %d: guard %d overwritten", trial, k)
		}
	}
	a, b := &g[0].s, &g[1].s
	for c := range scoreLanes {
		if math.Float32bits(a.loss[c]) != math.Float32bits(b.loss[c]) {
			t.Fatalf("trial %d lane %d: loss %v portable, %v vector", trial, c, a.loss[c], b.loss[c])
		}
		for k := range group {
			if math.Float32bits(a.ne[k][c]) != math.Float32bits(b.ne[k][c]) || math.Float32bits(a.l[k][c]) != math.Float32bits(b.l[k][c]) {
				t.Fatalf("trial %d lane %d column %d: (%v, %v) portable, (%v, %v) vector", trial, c, k, a.ne[k][c], a.l[k][c], b.ne[k][c], b.l[k][c])
			}
		}
	}
}

// TestFP16RoundIsRoundFP16: the batch rounding (this CPU's path) is
// roundFP16 on finite values within the fp16 range: ties, subnormals, the
// top of the range, signed zeros, and lengths with a tail.
func TestFP16RoundIsRoundFP16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var v []float32
	for _, h := range []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x3555} {
		f := quant.FP16ToFloat32(h)
		next := quant.FP16ToFloat32(h + 1)
		v = append(v, f, (f+next)/2, math.Nextafter32((f+next)/2, 0), math.Nextafter32((f+next)/2, 1))
	}
	v = append(v, 65504, -65504, 1e-9, -1e-9, 3e-8, -2.9802322e-08)
	for i := 0; i < 5000; i++ {
		x := float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-8)))
		v = append(v, min(max(x, -65504), 65504))
	}
	for i, x := range v {
		v[i] = min(max(x, -65504), 65504)
	}
	for _, n := range []int{len(v), 7, 8, 9, 25} {
		got := append([]float32(nil), v[:n]...)
		fp16Round(got)
		for i, x := range v[:n] {
			if want := roundFP16(x); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("%v (0x%08x): %v, roundFP16 %v", x, math.Float32bits(x), got[i], want)
			}
		}
	}
}

// TestAbsMax: absMax (with its vector path on a group of 64, where the CPU
// has one) is the float loop's max|v| on random bits, signed zeros,
// infinities and NaN (then NaN), over lengths with and without them.
func TestAbsMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.SmallestNonzeroFloat32}
	for trial := 0; trial < 2000; trial++ {
		n := rng.IntN(70)
		if trial%2 == 0 {
			n = group // a group: the vector path where there is one
		}
		v := make([]float32, n)
		for i := range v {
			if rng.IntN(8) == 0 {
				v[i] = special[rng.IntN(len(special))]
			} else {
				v[i] = math.Float32frombits(rng.Uint32()&^0x7f800000 | 0x3f000000*uint32(rng.IntN(2)))
			}
		}
		var want float32
		for _, x := range v {
			want = max(want, float32(math.Abs(float64(x))))
		}
		if got := absMax(v); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("trial %d: absMax %v, the float loop %v", trial, got, want)
		}
	}
}

// TestScoreLaneRows: with every lane on its own row, each lane of the
// portable pass gives the bits of its candidate's column pass over that
// row, and the vector path (where the CPU has one) the portable bits,
// writing nothing outside the pass.
func TestScoreLaneRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for trial := 0; trial < 30; trial++ {
		_, id, band, s := scoreCase(rng)
		bt := (*[group * group]float32)((&factors{cols: group, band: band}).bandByColumn())
		var w laneWeights
		rows := make([][group]float32, scoreLanes)
		for c := range rows {
			for k := range rows[c] {
				rows[c][k] = float32(rng.NormFloat64())
				w[k][c] = rows[c][k]
			}
		}
		g := guardedScores(rng, s)
		w0 := w
		scoreLaneRowsGo(&w, id, bt, &g[0].s)
		for c := range scoreLanes {
			lv, e, loss := columnPass(&rows[c], id, band, s.d[c])
			if math.Float32bits(loss) != math.Float32bits(g[0].s.loss[c]) {
				t.Fatalf("trial %d lane %d: loss %v, column pass %v", trial, c, g[0].s.loss[c], loss)
			}
			for k := range group {
				if g[0].s.l[k][c] != lv[k] || -g[0].s.ne[k][c] != e[k] {
					t.Fatalf("trial %d lane %d column %d: level %v error %v, column pass %v %v", trial, c, k, g[0].s.l[k][c], -g[0].s.ne[k][c], lv[k], e[k])
				}
			}
		}
		if scoreLaneRows == nil {
			continue
		}
		scoreLaneRows(&w, id, bt, &g[1].s)
		if w != w0 {
			t.Fatal("scoreLaneRows wrote to its weights")
		}
		sameScores(t, trial, g)
	}
}

// TestLaneRowScoringIsBlocks: where the grid is off (fewer tokens than
// columns), scoring a row per lane gives the bytes of a row per block of
// lanes, on the low-rank and the dense path.
func TestLaneRowScoringIsBlocks(t *testing.T) {
	if scoreLaneRows == nil {
		t.Skip("no lane-row scoring path on this CPU")
	}
	for _, c := range []struct{ D, F, n int }{{256, 128, 40}, {192, 64, 100}} {
		ex, in := expertFixture(rand.New(rand.NewPCG(29, uint64(c.n))), c.D, c.F, c.n, 0)
		opt := Defaults()
		opt.GridTokens = 1e6 // the plain pick alone, also on the dense path
		lanes, err := QuantizeExpert(ex, in, opt)
		if err != nil {
			t.Fatal(err)
		}
		saved := scoreLaneRows
		scoreLaneRows = nil
		blocks, err := QuantizeExpert(ex, in, opt)
		scoreLaneRows = saved
		if err != nil {
			t.Fatal(err)
		}
		if lanes.Fallback != "" || !bytes.Equal(lanes.Gate, blocks.Gate) || !bytes.Equal(lanes.Up, blocks.Up) || !bytes.Equal(lanes.Down, blocks.Down) {
			t.Fatalf("%+v: a row per lane differs from a row per block (fallback %q)", c, lanes.Fallback)
		}
	}
}

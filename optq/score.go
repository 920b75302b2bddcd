package optq

import (
	"math"

	"github.com/stratactl/stratactl/quant"
)

// scoreLanes is the number of candidate scales one scoring pass takes: the
// in-group OPTQ pass of searcher.choose runs for all of them at once, one
// candidate per lane.
const scoreLanes = 32

// groupScore is one scoring pass: for each lane c (a candidate scale d[c],
// inv[c] = 1/d[c] or 0 when d[c] is 0, for the group's weights of row
// c/laneBlock of the pass), the group's 64 columns quantized in order, each
// column's compensated weight
//
//	t_k = w_k + Σ_{j<k} (−e_j)·U_jk   (the products and sums rounded in
//	                                   float32 in order j = 0, 1, ...)
//
// at level l_k = level(t_k, inv), error e_k = (t_k − d·l_k)/U_kk and loss
// Σ_k e_k² (summed in order); l holds the levels (as float32), ne the −e_k. This is exactly the arithmetic of one
// column-by-column pass with kernels.Axpy's compensation (a rounded product,
// then a rounded add), so every lane gives the bits that pass gives.
type groupScore struct {
	d, inv [scoreLanes]float32
	ne     [group][scoreLanes]float32 // −e_k
	l      [group][scoreLanes]float32 // l_k
	loss   [scoreLanes]float32
}

// laneBlock is the lanes that share one row of weights in a scoring
// pass: one vector register's. A pass thus scores up to scoreLanes /
// laneBlock rows of one group at once.
const laneBlock = 8

// blockRows is a scoring pass's weights: row b (64 current weights of one
// group) for lanes laneBlock·b to laneBlock·(b+1) − 1.
type blockRows = [scoreLanes / laneBlock][group]float32

// scoreGroup runs s's candidates over the group's weights w (lane c starts
// from row w[c/laneBlock]) with invDiag the group's 1/U_kk and bandT its
// in-group factor by column: bandT[k*group+j] = U_jk for j < k.
var scoreGroup = scoreGroupGo

// scorePath is one of scoreGroup's vector paths this CPU can run;
// scoreGroupPaths lists them (the tests run each against scoreGroupGo).
type scorePath struct {
	name string
	f    func(w *blockRows, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore)
}

var scoreGroupPaths []scorePath

// scoreGroupGo is the portable definition of scoreGroup: scoreLaneRowsGo
// with lane c's weights those of row c/laneBlock.
func scoreGroupGo(w *blockRows, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore) {
	var lw laneWeights
	for k := range lw {
		for c := range lw[k] {
			lw[k][c] = w[c/laneBlock][k]
		}
	}
	scoreLaneRowsGo(&lw, invDiag, bandT, s)
}

// laneWeights is a scoring pass's weights with a row per lane: w[k][c] is
// lane c's weight at column k.
type laneWeights = [group][scoreLanes]float32

// scoreLaneRows is scoreGroup with every lane on its own row (w[k][c]), so
// that a pass takes scoreLanes rows of one candidate each (where the grid
// is off: the plain search's pick alone); nil where the CPU has no vector
// path for it (then such a row takes laneBlock lanes, as with the grid).
var scoreLaneRows func(w *laneWeights, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore)

// scoreLaneRowsGo is the portable definition of scoreLaneRows and
// scoreGroup's arithmetic.
func scoreLaneRowsGo(w *laneWeights, invDiag *[group]float32, bandT *[group * group]float32, s *groupScore) {
	var sum [scoreLanes]float32
	for k := 0; k < group; k++ {
		t := w[k]
		bk := bandT[k*group : k*group+k]
		for j, b := range bk {
			ne := &s.ne[j]
			for c := range t {
				t[c] += float32(ne[c] * b)
			}
		}
		id := invDiag[k]
		for c := range t {
			l := level(t[c], s.inv[c])
			e := float32(float32(t[c]-float32(s.d[c]*l)) * id)
			sum[c] += float32(e * e)
			s.ne[k][c] = -e
			s.l[k][c] = l
		}
	}
	s.loss = sum
}

// plainLanes, where the CPU has a vector path for it (nil elsewhere), sets
// out[c] to the plain search's scale of lane c's 64 weights w[k][c]: the
// scale quant.Q2Blocks.Block stores for them with the importance imp
// (imp as quant takes it: a weight that is not positive and finite
// counts 0, and all 0 are all 1, plainWeights), over the candidate
// ratios of quant.Q2SearchRatios, the same sums in the same order. The
// lanes set in the bits it returns are left to Block: max|w| not finite,
// or a candidate scale that rounds to fp16 0 (fewer candidates).
var plainLanes func(w *laneWeights, imp *[group]float32, ratios []float32, out *[scoreLanes]float32) uint32

// plainWeights is quant's reading of the importance imp of one block
// (q2Searcher.weights): the weights that are not positive and finite
// count 0, and when all are 0 every weight is 1 (the search unweighted:
// its sums x·l and l·l are (1·x)·l and (1·l)·l bit for bit).
func plainWeights(imp *[group]float32) [group]float32 {
	var w [group]float32
	if !quant.Q2BlockWeights(&w, imp) {
		for j := range w {
			w[j] = 1
		}
	}
	return w
}

// fp16Round sets each v[i], finite and within ±65504, to roundFP16(v[i]).
var fp16Round = fp16RoundGo

func fp16RoundGo(v []float32) {
	for i, d := range v {
		v[i] = quant.FP16ToFloat32(quant.Float32ToFP16(d))
	}
}

// absMaxBits64 is absMax's bits loop over one group where the CPU has a
// vector path for it (nil elsewhere).
var absMaxBits64 func(v *[group]float32) uint32

// absMax is the largest float32(math.Abs(float64(v))) of v, taken with
// Go's max (NaN if any is NaN): for values that are not NaN the largest
// |v| is the largest of their bits with the sign cleared, so it is taken
// on the bits, and a NaN (bits above +Inf's) goes to the float loop.
func absMax(v []float32) float32 {
	var m uint32
	if len(v) == group && absMaxBits64 != nil {
		m = absMaxBits64((*[group]float32)(v))
	} else {
		for _, x := range v {
			m = max(m, math.Float32bits(x)&^(1<<31))
		}
	}
	if m <= 0x7f800000 {
		return math.Float32frombits(m)
	}
	var amax float32
	for _, x := range v {
		amax = max(amax, float32(math.Abs(float64(x))))
	}
	return amax
}

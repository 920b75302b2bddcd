// Package optq quantizes weight matrices to Q2_0 against the activations
// they really see: OPTQ (GPTQ) column-by-column error compensation with a
// per-expert Hessian H = XᵀX of the calibration inputs, each 64-column
// group's scale chosen by the Hessian-weighted error it leaves, both signs
// of the {-1, 0, 1, 2}·d grid, and a final coordinate refinement of codes
// and scales against the full H. QuantizeExpert refines gate and up
// further against the error of the SwiGLU product they make, and gives
// the down projection a target corrected for its expert's own gate/up
// quantization error.
//
// Everything is deterministic: the same inputs give the same bytes, and
// nothing depends on the number of goroutines a caller runs experts on.
package optq

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

const group = quant.Q2BlockElements

// Options tune the quantizer. The zero value is not the default: use
// Defaults and change fields.
type Options struct {
	// Damp is added to H's diagonal as a fraction of its mean diagonal
	// (a ridge towards the weights' own values). 0 means none: then a
	// singular H makes the matrix fall back to the plain search.
	Damp float64
	// Refine is the number of coordinate passes over codes and scales
	// against the full H after the OPTQ pass (0: none).
	Refine int
	// Candidates is the number of grid scales per sign each group's
	// Hessian-weighted choice tries, besides the plain search's own pick.
	Candidates int
	// Q2Candidates is the plain search's candidate count (its own pick and
	// the fallback); 0: quant.DefaultQ2Candidates.
	Q2Candidates int
	// RefineDamp is the damping of the H the refinement works against, as
	// a fraction of its mean diagonal (the OPTQ pass uses Damp).
	RefineDamp float64
	// SwiGLU is the number of coordinate passes that refine gate and up
	// (in QuantizeExpert) against the error of the SwiGLU product they
	// make, after the refinement against H (0: none).
	SwiGLU int
	// SwiGLUDamp is those passes' ridge towards the source weights, as a
	// fraction of each row's mean diagonal.
	SwiGLUDamp float64
	// Expert is the number of rounds (in QuantizeExpert) that refine gate
	// and up against the error of the expert's whole output with its
	// quantized down projection, ‖D h − D̂ ĥ‖², each followed by down
	// quantized again for the new products (0: none). Its ridge towards
	// the source weights is RefineDamp, as the refinement against H's.
	Expert int
	// ExpertPasses is the number of coordinate passes over each gate and
	// up row in a round of the expert-output refinement (before
	// DefaultExpertPasses it was Refine's 4).
	ExpertPasses int
	// WarmDown makes the expert-output refinement's second quantization of
	// down start from down's codes and scales so far and run only the
	// refinement (Refine passes) against its new target and Hessian,
	// instead of a new OPTQ pass with its scale search.
	WarmDown bool
	// ExpertGate makes the expert-output refinement refine gate's rows
	// after up's (false: up's alone, whose product is linear in them).
	ExpertGate bool
	// ExpertTokens is the quantizer tokens per input column (n_embd) an
	// expert needs for the expert-output refinement: an expert with fewer
	// (n < ExpertTokens·D) skips it (0: every expert runs it).
	ExpertTokens float64
	// GridTokens is the quantizer tokens per column a matrix needs (in
	// QuantizeExpert) for the Candidates grid scales: with fewer (n <
	// GridTokens·cols) each group's scale is the plain search's pick alone,
	// still with the OPTQ pass's compensation (0: the grid always).
	GridTokens float64
	// PlainTokens is the quantizer tokens per input column (n_embd) an
	// expert needs (in QuantizeExpert) for the calibrated quantizer at all:
	// one with fewer (0 < n < PlainTokens·D) gets the plain search for its
	// three matrices, reason FallbackFewTokens (0: never).
	PlainTokens float64
}

// DefaultExpert is the rounds of the expert-output refinement
// (Options.Expert): one, which measured mean KLD 0.4594 -> 0.4419 from
// BF16 on tiny-qwen3moe's held-out windows (0.4848 -> 0.4663 on the next
// 64 windows of its held-out text), docs/QUALITY.md. DefaultSelfExpert is
// the same with --calib-self windows: 0, the configuration measured there.
const (
	DefaultExpert     = 1
	DefaultSelfExpert = 0
)

// DefaultExpertTokens is Options.ExpertTokens' default: 1, the expert-output
// refinement only where the expert's gate/up Hessian has full rank (n ≥
// n_embd, the dense path). Below it the refinement measured no gain on
// tiny-qwen3moe's held-out windows (calibrated on its first 1, 2, 4 or 8
// windows, 32 to 256 tokens per expert against 256 columns: mean KLD
// -0.0012, +0.0005, -0.0028, -0.0023, against -0.019 with all 60 windows,
// about 1,900 tokens per expert; docs/QUALITY.md), while at the field
// width (n_embd 2560, 32 tokens per expert) it was 42% of an expert's time.
const DefaultExpertTokens = 1.0

// DefaultGridTokens is Options.GridTokens' default: 1, the grid scales only
// where the matrix's Hessian has full rank. Below it (the few-token runs
// of DefaultExpertTokens, without the expert-output refinement) the pick
// alone measured mean KLD -0.0044, -0.0016 and +0.0013 against the grid,
// at about 6% less CPU per field-width expert.
const DefaultGridTokens = 1.0

// DefaultPlainTokens is Options.PlainTokens' default: 0, every expert with
// tokens calibrated. Below 1/8 of a token per column the calibrated
// quantizer measured no better than the plain search: tiny-qwen3moe
// calibrated on its first half window or window (about 16 and 32 tokens
// per expert against 256 columns) gave mean KLD 0.7244 and 0.7161 (0.7154
// and 0.7193 before DefaultExpertTokens and DefaultGridTokens), the plain
// search 0.7104, at 3 to 10 times its cost; from 1/4 on it gains (0.7068,
// then 0.6607 at 1/2; docs/QUALITY.md, "Stages at few tokens per expert").
// PlainTokens 1/8 would give every expert of bench pack's field shape (32
// tokens per 2560 columns) the plain search; the default leaves that
// choice to the caller (--calib-plain-tokens).
const DefaultPlainTokens = 0.0

// DefaultRefine, DefaultCandidates and DefaultExpertPasses (with WarmDown
// and ExpertGate on) are the cheaper settings that replaced 4 passes, 12
// grid scales per sign, 4 passes per row and a second full down
// quantization: 2 passes, 3 scales per sign (the plain pick and 6 grid
// scales: one 8-lane block, so each scoring pass takes 4 rows), 1 pass per
// row, and the second down quantization refined from the first one's codes.
// On tiny-qwen3moe's held-out windows mean KLD 0.4386 -> 0.4408 from BF16
// and 0.4645 -> 0.4636 from IQ4_NL, at about 2/3 of the field-width expert's
// time (docs/QUALITY.md, where 1 refinement pass measured 0.4510 from BF16,
// over issue 14's 0.45).
const (
	DefaultRefine       = 2
	DefaultCandidates   = 3
	DefaultExpertPasses = 1
)

// DefaultDamp is the damping fraction that measured best with the supplied
// calibration set of tiny-qwen3moe (docs/QUALITY.md).
const DefaultDamp = 0.30

// Defaults are the measured defaults.
func Defaults() Options {
	return Options{Damp: DefaultDamp, Refine: DefaultRefine, Candidates: DefaultCandidates, RefineDamp: 1, SwiGLU: 0, SwiGLUDamp: 3, Expert: DefaultExpert,
		ExpertPasses: DefaultExpertPasses, WarmDown: true, ExpertGate: true, ExpertTokens: DefaultExpertTokens, GridTokens: DefaultGridTokens, PlainTokens: DefaultPlainTokens}
}

// Check reports an option out of range.
func (o *Options) Check() error {
	if !(o.Damp >= 0) || math.IsInf(o.Damp, 0) {
		return fmt.Errorf("optq: damping %v must be a finite fraction >= 0", o.Damp)
	}
	if !(o.RefineDamp >= 0) || math.IsInf(o.RefineDamp, 0) {
		return fmt.Errorf("optq: refinement damping %v must be a finite fraction >= 0", o.RefineDamp)
	}
	if !(o.SwiGLUDamp >= 0) || math.IsInf(o.SwiGLUDamp, 0) {
		return fmt.Errorf("optq: SwiGLU refinement damping %v must be a finite fraction >= 0", o.SwiGLUDamp)
	}
	if !(o.ExpertTokens >= 0) || math.IsInf(o.ExpertTokens, 0) {
		return fmt.Errorf("optq: expert-output refinement tokens per column %v must be finite and >= 0", o.ExpertTokens)
	}
	if !(o.GridTokens >= 0) || math.IsInf(o.GridTokens, 0) {
		return fmt.Errorf("optq: grid scales' tokens per column %v must be finite and >= 0", o.GridTokens)
	}
	if !(o.PlainTokens >= 0) || math.IsInf(o.PlainTokens, 0) {
		return fmt.Errorf("optq: the calibrated quantizer's tokens per column %v must be finite and >= 0", o.PlainTokens)
	}
	if o.Refine < 0 || o.Candidates < 0 || o.Q2Candidates < 0 || o.SwiGLU < 0 || o.Expert < 0 || o.ExpertPasses < 0 {
		return fmt.Errorf("optq: negative option (refine %d, candidates %d, q2 candidates %d, swiglu %d, expert %d, expert passes %d)", o.Refine, o.Candidates, o.Q2Candidates, o.SwiGLU, o.Expert, o.ExpertPasses)
	}
	return nil
}

// forTokens is o for a matrix of cols columns quantized against n tokens:
// without the grid scales when n < GridTokens·cols.
func (o Options) forTokens(n, cols int) Options {
	if float64(n) < o.GridTokens*float64(cols) {
		o.Candidates = 0
	}
	return o
}

// Fallback reasons: a matrix quantized by the plain search instead.
const (
	FallbackNoTokens = "no calibration tokens reached it"
	FallbackSingular = "singular Hessian"
	// FallbackFewTokens: fewer tokens than Options.PlainTokens per column.
	FallbackFewTokens = "fewer calibration tokens than --calib-plain-tokens per column"
)

// QuantizeMatrix writes the Q2_0 encoding of the rows×cols matrix w
// (row-major, one GGUF row per output) to dst, minimising
// sum over rows of (w-ŵ) H (w-ŵ)ᵀ, where h is the cols×cols Hessian of
// the inputs (XᵀX). It returns "" or the reason it fell back to the plain
// search (then dst holds the plain search's bytes).
func QuantizeMatrix(w []float32, rows, cols int, h []float64, opt Options, dst []byte) (string, error) {
	if err := checkShape(w, rows, cols, dst); err != nil {
		return "", err
	}
	if len(h) != cols*cols {
		return "", fmt.Errorf("optq: Hessian of %d values for %d columns", len(h), cols)
	}
	if err := opt.Check(); err != nil {
		return "", err
	}
	f, reason := factor(h, cols, opt.Damp, opt.RefineDamp)
	if reason != "" {
		return reason, plain(w, dst, opt)
	}
	f.run(w, rows, opt, dst)
	return "", nil
}

// run quantizes the rows of target against f's Hessian into dst.
func (f *factors) run(target []float32, rows int, opt Options, dst []byte) {
	f.runQ(target, rows, opt).pack(dst)
}

// rerun is run when warm is false; when it is true it starts from the
// codes and scales dst already holds (Q2_0 bytes of rows of f.cols) and
// runs only the refinement against target.
func (f *factors) rerun(target []float32, rows int, opt Options, dst []byte, warm bool) {
	if !warm {
		f.run(target, rows, opt, dst)
		return
	}
	q := unpack(dst, rows, f.cols)
	q.refine(target, f, opt.Refine)
	q.pack(dst)
}

// runQ is run without the packing.
func (f *factors) runQ(target []float32, rows int, opt Options) *quantized {
	q := f.quantize(target, rows, opt)
	q.refine(target, f, opt.Refine)
	return q
}

func checkShape(w []float32, rows, cols int, dst []byte) error {
	if rows <= 0 || cols <= 0 || cols%group != 0 {
		return fmt.Errorf("optq: matrix of %d x %d: need rows > 0 and columns a multiple of %d", rows, cols, group)
	}
	if len(w) != rows*cols {
		return fmt.Errorf("optq: %d weights for %d x %d", len(w), rows, cols)
	}
	if want := rows * cols / group * quant.Q2BlockBytes; len(dst) != want {
		return fmt.Errorf("optq: %d bytes for %d x %d Q2_0, want %d", len(dst), rows, cols, want)
	}
	return nil
}

func plain(w []float32, dst []byte, opt Options) error {
	return kernels.QuantizeQ2_0(w, dst, &quant.QuantizeOptions{Q2Candidates: opt.Q2Candidates})
}

// factors is what the passes need of one Hessian: 1/U_jj and, per column
// j, the entries U_jk of the upper Cholesky factor U of H⁻¹ within j's
// 64-column group (band); the rest of U and the refinement's H are either
// dense (h, u, lower) or the low-rank form lr (lowrank.go: fewer inputs
// than columns, H never formed).
type factors struct {
	cols    int
	h       []float32 // dense: the refinement's damped H
	u       []float32 // dense: U (row j from column j on)
	invDiag []float32
	band    []float32 // [cols][group]: row j holds U_jk for k in j's group (0 for k <= j)
	lower   []float64 // dense: Cholesky factor of the damped H (for solves)
	lr      *lowRank  // nil: dense
}

// factor damps h and factors it; reason is non-empty when it cannot.
func factor(h []float64, cols int, damp, refineDamp float64) (*factors, string) {
	var mean float64
	for j := 0; j < cols; j++ {
		mean += h[j*cols+j]
	}
	mean /= float64(cols)
	if !(mean > 0) || math.IsInf(mean, 0) {
		return nil, FallbackNoTokens
	}
	hd := append([]float64(nil), h...)
	for j := 0; j < cols; j++ {
		hd[j*cols+j] += damp * mean
	}
	f := &factors{cols: cols, h: make([]float32, cols*cols)}
	for i, v := range h {
		f.h[i] = float32(v)
	}
	for j := 0; j < cols; j++ {
		f.h[j*cols+j] += float32(refineDamp * mean)
	}
	l := append([]float64(nil), hd...)
	if !cholesky(l, cols) {
		return nil, FallbackSingular
	}
	f.lower = l
	hinv := invFromCholesky(l, cols)
	if !cholesky(hinv, cols) { // hinv = Lh Lhᵀ, U = Lhᵀ
		return nil, FallbackSingular
	}
	f.u = make([]float32, cols*cols)
	f.invDiag = make([]float32, cols)
	for j := 0; j < cols; j++ {
		for k := j; k < cols; k++ {
			f.u[j*cols+k] = float32(hinv[k*cols+j])
		}
		f.invDiag[j] = 1 / f.u[j*cols+j]
	}
	f.band = make([]float32, cols*group)
	for j := 0; j < cols; j++ {
		g0 := j / group * group
		copy(f.band[j*group+j-g0+1:(j+1)*group], f.u[j*cols+j+1:j*cols+g0+group])
	}
	return f, ""
}

// quantized holds a matrix's codes as levels (-1..2) and its block scales.
type quantized struct {
	rows, cols int
	levels     []int8
	scales     []float32 // [rows][cols/64], fp16-exact
}

// level is quant's Q2 rule: round-to-even of x*inv clamped to [-1, 2].
func level(x, inv float32) float32 {
	t := min(max(x*inv, -1), 2)
	return float32(math.RoundToEven(float64(t)))
}

// roundFP16 is d as the block's fp16 field holds it, |d| capped at the
// largest finite fp16.
func roundFP16(d float32) float32 {
	d = min(max(d, -65504), 65504)
	return quant.FP16ToFloat32(quant.Float32ToFP16(d))
}

// searcher is one matrix's per-group scale choice.
type searcher struct {
	f      *factors
	ratios []float32
	imp    [group]float32
	block  [quant.Q2BlockBytes]byte
	plain  *quant.Q2Blocks // the plain search under the weights imp
	bandT  []float32       // [cols][group]: row k holds U_jk for j < k in k's group
	slot   int             // lanes per row: its most candidates, rounded up to laneBlock
	batch  int             // rows scored in one pass set
	cand   [][]float32     // per row of the batch: its candidate scales, in the order choose takes them
	raw    []float32       // the grid's scales before their rounding to fp16
	w      blockRows
	lw     *laneWeights // one candidate a row (no grid): a row per lane
	// ratiosQ2 are the plain search's ratios where plainLanes takes its
	// picks (with lw and the group's weights pw, plainWeights of imp),
	// picks the picks of a pass's lanes.
	ratiosQ2 []float32
	pw       [group]float32
	picks    [scoreLanes]float32
	lvT      []float32 // a full pass's levels by row ([scoreLanes][group]), with lw
	score    []groupScore
}

func newSearcher(f *factors, opt Options) *searcher {
	s := &searcher{f: f, ratios: gridRatios(opt.Candidates), bandT: f.bandByColumn()}
	// Importance imp is changed in place per group; an error (none for
	// these options) would leave the plain pick 0, as a failed search did.
	s.plain, _ = kernels.NewQ2Blocks(&quant.QuantizeOptions{Q2Candidates: opt.Q2Candidates, Importance: s.imp[:]})
	s.slot = (1 + 2*len(s.ratios) + laneBlock - 1) / laneBlock * laneBlock
	s.batch = max(1, min(scoreBatchMax, scoreLanes/s.slot))
	if len(s.ratios) == 0 && scoreLaneRows != nil && scoreBatchMax > 1 {
		// The plain pick alone: a lane per row (the same passes).
		s.slot, s.batch, s.lw, s.lvT = 1, scoreLanes, new(laneWeights), make([]float32, scoreLanes*group)
		if plainLanes != nil && s.plain != nil {
			s.ratiosQ2 = quant.Q2SearchRatios(opt.Q2Candidates)
		}
	}
	s.cand = make([][]float32, s.batch)
	s.score = make([]groupScore, (s.batch*s.slot+scoreLanes-1)/scoreLanes)
	return s
}

// scoreBatchMax caps the rows one scoring pass takes (a variable so that
// tests can compare batched scoring with row by row).
var scoreBatchMax = scoreLanes / laneBlock

// quantize runs the OPTQ pass over column groups in order.
func (f *factors) quantize(w []float32, rows int, opt Options) *quantized {
	cols := f.cols
	groups := cols / group
	q := &quantized{rows: rows, cols: cols, levels: make([]int8, rows*cols), scales: make([]float32, rows*groups)}
	s := newSearcher(f, opt)
	carry := f.carrier(rows)
	// The compensated weights: a copy of the matrix (the dense carry moves
	// every later column), or on the low-rank path only the group's
	// ([rows][group]), which the carry writes from w for the next group.
	var W, errs []float32
	stride := cols
	next, low := carry.(nextCarrier)
	if low {
		W, stride = make([]float32, rows*group), group
		for r := 0; r < rows; r++ {
			copy(W[r*group:(r+1)*group], w[r*cols:r*cols+group])
		}
	} else {
		W, errs = append([]float32(nil), w...), make([]float32, rows*group)
	}
	for g := 0; g < groups; g++ {
		g0, g1 := g*group, (g+1)*group
		for j := g0; j < g1; j++ {
			s.imp[j-g0] = f.invDiag[j] * f.invDiag[j]
		}
		if s.ratiosQ2 != nil {
			s.pw = plainWeights(&s.imp)
		}
		off := g0
		if low {
			off = 0
		}
		for r0 := 0; r0 < rows; r0 += s.batch {
			nr := min(s.batch, rows-r0)
			s.scoreBatch(W, stride, off, r0, nr, g0)
			// A full pass of a row per lane: its levels by row in 16 x 16
			// tiles (row i is lane i).
			tiled := s.lw != nil && nr == scoreLanes
			if tiled {
				lf := (*[group * scoreLanes]float32)(unsafe.Pointer(&s.score[0].l))[:]
				for i0 := 0; i0 < scoreLanes; i0 += 16 {
					for k0 := 0; k0 < group; k0 += 16 {
						transpose16(s.lvT[i0*group+k0:], group, lf[k0*scoreLanes+i0:], scoreLanes)
					}
				}
			}
			for i := 0; i < nr; i++ {
				r := r0 + i
				d, gs, c := s.pick(i)
				q.scales[r*groups+g] = d
				// The chosen lane's pass is the group's: its levels and errors.
				// The levels go to the row in one 64-byte copy (a store per
				// byte into a line not yet in cache stalled the stores).
				var lv [group]int8
				if tiled {
					for k, v := range (*[group]float32)(s.lvT[i*group:]) {
						lv[k] = int8(v)
					}
				} else {
					for k := range group {
						lv[k] = int8(gs.l[k][c])
					}
				}
				*(*[group]int8)(q.levels[r*cols+g0:]) = lv
				switch {
				case !low:
					er := (*[group]float32)(errs[r*group:])
					for k := range group {
						er[k] = -gs.ne[k][c]
					}
				case s.lw == nil:
					next.setErrs(r, &gs.ne, c)
				}
			}
			if low && s.lw != nil { // row i in lane i
				next.setErrLanes(r0, nr, &s.score[0].ne)
			}
		}
		if g1 == cols {
			break
		}
		if low {
			next.carryNext(W, w, g0, g1)
		} else {
			carry.carry(W, errs, g0, g1)
		}
	}
	return q
}

// nextCarrier is a carrier that can write the next group's compensated
// weights alone (lowCarry.carryNext).
type nextCarrier interface {
	// setErrs sets row r's errors of the group, −ne[k][c]; setErrLanes
	// those of the nr rows from r0, row r0+i's −ne[k][i].
	setErrs(r int, ne *[group][scoreLanes]float32, c int)
	setErrLanes(r0, nr int, ne *[group][scoreLanes]float32)
	carryNext(next, w []float32, g0, g1 int)
}

// carrier moves one OPTQ pass's group errors on to the later columns.
type carrier interface {
	// carry applies the errors errs ([rows][group], e_j = (w_j − q_j)/U_jj)
	// of columns [g0, g1) to W's columns from g1 on: at least the next
	// group's are then current.
	carry(W []float32, errs []float32, g0, g1 int)
}

// carrier returns a carrier for one pass over rows rows.
func (f *factors) carrier(rows int) carrier {
	if f.lr != nil {
		return f.lr.carrier(rows)
	}
	return denseCarry{f: f, rows: rows}
}

type denseCarry struct {
	f    *factors
	rows int
}

func (c denseCarry) carry(W []float32, errs []float32, g0, g1 int) {
	f, cols := c.f, c.f.cols
	for r := 0; r < c.rows; r++ {
		rest := W[r*cols+g1 : (r+1)*cols]
		for jj, e := range errs[r*group : (r+1)*group] {
			if e != 0 {
				j := g0 + jj
				kernels.Axpy(rest, -e, f.u[j*cols+g1:(j+1)*cols])
			}
		}
	}
}

// bandByColumn is f.band transposed within each group: row k (column k)
// holds U_jk for the columns j < k of its group, 0 elsewhere.
func (f *factors) bandByColumn() []float32 {
	bt := make([]float32, f.cols*group)
	for j := 0; j < f.cols; j++ {
		g0 := j / group * group
		for k := j + 1; k < g0+group; k++ {
			bt[k*group+j-g0] = f.band[j*group+k-g0]
		}
	}
	return bt
}

// gridRatios are n ratios d/max|x| of one sign for the Hessian-scored
// choice, wider than the plain search's since compensation moves weights.
func gridRatios(n int) []float32 {
	r := make([]float32, n)
	for i := range r {
		if n == 1 {
			r[i] = 0.5
			continue
		}
		r[i] = float32(0.25 + 0.75*float64(i)/float64(n-1))
	}
	return r
}

// candidates sets s.cand[i] to the candidate scales of the group wg (64
// current, compensated weights) of the batch's row i: the plain search's
// pick under the weights 1/U_jj² (kept unless another is clearly better),
// then a grid of both signs.
//
// With pick set, pick0 is the plain search's pick, taken by plainLanes.
func (s *searcher) candidates(i int, wg []float32, pick bool, pick0 float32) {
	amax := absMax(wg)
	cand := s.cand[i][:0]
	if amax == 0 {
		s.cand[i] = append(cand, 0)
		return
	}
	d0 := pick0
	if s.plain != nil && !pick {
		s.plain.Block((*[group]float32)(wg), &s.block)
		d0 = quant.FP16ToFloat32(binary.LittleEndian.Uint16(s.block[:]))
	}
	cand = append(cand, d0)
	s.raw = s.raw[:0]
	for _, r := range s.ratios {
		for _, sign := range [2]float32{1, -1} {
			s.raw = append(s.raw, min(max(sign*amax*r, -65504), 65504))
		}
	}
	if amax <= math.MaxFloat32 { // finite: the batch rounding takes it
		fp16Round(s.raw)
	} else {
		for i, d := range s.raw {
			s.raw[i] = roundFP16(d)
		}
	}
	for _, d := range s.raw {
		if d != 0 {
			cand = append(cand, d)
		}
	}
	s.cand[i] = cand
}

// scoreBatch scores the candidates of the group starting at column g0 for the
// nr rows from r0 of W (row r's group at W[r*stride+off:], 64 weights): the
// batch's row i takes the lanes from i·s.slot
// on (over as many passes as they need), each candidate the in-group OPTQ
// pass that quantizes the group column by column with its compensation,
// leaving the loss Σ_j ((w_j − q_j)/U_jj)².
func (s *searcher) scoreBatch(W []float32, stride, off, r0, nr, g0 int) {
	if s.lw != nil {
		if nr == scoreLanes { // 16 x 16 tiles
			lw := (*[group * scoreLanes]float32)(unsafe.Pointer(s.lw))[:]
			for i0 := 0; i0 < scoreLanes; i0 += 16 {
				for k0 := 0; k0 < group; k0 += 16 {
					transpose16(lw[k0*scoreLanes+i0:], scoreLanes, W[(r0+i0)*stride+off+k0:], stride)
				}
			}
		} else {
			for c := range scoreLanes {
				for k, v := range (*[group]float32)(W[(r0+min(c, nr-1))*stride+off:]) {
					s.lw[k][c] = v
				}
			}
		}
		// The plain search's picks of every lane at once (the lanes it
		// leaves, and a searcher without one, take Block).
		left := ^uint32(0)
		if s.ratiosQ2 != nil {
			left = plainLanes(s.lw, &s.pw, s.ratiosQ2, &s.picks)
		}
		for i := 0; i < nr; i++ {
			s.candidates(i, W[(r0+i)*stride+off:(r0+i)*stride+off+group], left>>i&1 == 0, s.picks[i])
		}
	} else {
		for i := 0; i < nr; i++ {
			s.candidates(i, W[(r0+i)*stride+off:(r0+i)*stride+off+group], false, 0)
		}
		for b := range s.w {
			i := min(b*laneBlock/s.slot, nr-1)
			copy(s.w[b][:], W[(r0+i)*stride+off:(r0+i)*stride+off+group])
		}
	}
	id := (*[group]float32)(s.f.invDiag[g0 : g0+group])
	bt := (*[group * group]float32)(s.bandT[g0*group : (g0+group)*group])
	for p := 0; p*scoreLanes < nr*s.slot; p++ {
		gs := &s.score[p]
		for c := range scoreLanes {
			var d, inv float32
			if pos := p*scoreLanes + c; pos/s.slot < nr {
				if cand := s.cand[pos/s.slot]; pos%s.slot < len(cand) {
					d = cand[pos%s.slot]
				}
			}
			if d != 0 {
				inv = 1 / d
			}
			gs.d[c], gs.inv[c] = d, inv
		}
		if s.lw != nil {
			scoreLaneRows(s.lw, id, bt, gs)
		} else {
			scoreGroup(&s.w, id, bt, gs)
		}
	}
}

// pick returns the batch's row i's scale among its scored candidates, the
// pass its lane is in and that lane. Taken in order, a later candidate
// replaces the pick only when its loss is below the bar: the first pick's
// loss less a margin, then the best so far.
func (s *searcher) pick(i int) (float32, *groupScore, int) {
	cand, base := s.cand[i], i*s.slot
	loss := func(k int) float32 { return s.score[(base+k)/scoreLanes].loss[(base+k)%scoreLanes] }
	best, bi := cand[0], 0
	bestLoss := loss(0)
	bar := bestLoss * (1 - 1e-5)
	for k := 1; k < len(cand); k++ {
		d := cand[k]
		if d == best {
			continue
		}
		if l := loss(k); l < bar {
			best, bi, bestLoss = d, k, l
			bar = bestLoss
		}
	}
	return best, &s.score[(base+bi)/scoreLanes], (base + bi) % scoreLanes
}

// refine lowers (t-ŵ) H (t-ŵ)ᵀ row by row by coordinate descent: each code
// moved to its best level, then each group's scale to the least-squares
// value for its codes (rounded to fp16), while anything improves.
func (q *quantized) refine(t []float32, f *factors, passes int) {
	if passes == 0 {
		return
	}
	if f.lr != nil {
		q.refineLow(t, f.lr, passes)
		return
	}
	cols, groups := q.cols, q.cols/group
	e := make([]float32, cols)
	hq := f.quad()
	for r := 0; r < q.rows; r++ {
		lv := q.levels[r*cols : (r+1)*cols]
		sc := q.scales[r*groups : (r+1)*groups]
		tr := t[r*cols : (r+1)*cols]
		for j := range e {
			e[j] = tr[j] - sc[j/group]*float32(lv[j])
		}
		hq.reset(e)
		descend(lv, sc, e, hq, passes)
	}
}

// descend is the refinement's coordinate descent on one row: codes lv and
// group scales sc, e the row's error, hq its objective.
func descend(lv []int8, sc, e []float32, hq rowQuad, passes int) {
	cols, groups := len(lv), len(sc)
	for range passes {
		changed := false
		for j := 0; j < cols; j++ {
			d := sc[j/group]
			if d == 0 {
				continue
			}
			bestC, bestD, bestL := levelStep(d, float32(lv[j]), hq.diag(j), hq.grad(j))
			if bestC < 0 {
				e[j] -= bestD
				hq.moved(j, bestD)
				lv[j] = int8(bestL)
				changed = true
			}
		}
		for b := 0; b < groups; b++ {
			d := sc[b]
			num, den := hq.group(b, lv[b*group:(b+1)*group])
			if nd, ok := scaleStep(d, num, den); ok {
				dd := nd - d
				for j := b * group; j < (b+1)*group; j++ {
					e[j] -= dd * float32(lv[j])
				}
				hq.groupMoved(dd)
				sc[b] = nd
				changed = true
			}
		}
		if !changed {
			break
		}
	}
}

// levelStep is descend's step of one code: of the levels other than lo,
// at scale d, the one whose move dl = d·(nl − lo) lowers the objective
// most (its change dl·(dl·hjj − 2·gj), hjj the diagonal and gj the
// gradient), the levels tried in order -1..2 and a later one taken only
// when strictly lower. bestC is 0 (and nothing moves) when none lowers it.
func levelStep(d, lo, hjj, gj float32) (bestC, bestD, bestL float32) {
	for nl := float32(-1); nl <= 2; nl++ {
		if nl == lo {
			continue
		}
		dl := d * (nl - lo)
		if c := dl * (dl*hjj - 2*gj); c < bestC {
			bestC, bestD, bestL = c, dl, nl
		}
	}
	return bestC, bestD, bestL
}

// scaleStep is descend's step of one group's scale d: the least-squares
// scale d + num/den rounded to fp16 (num = Σ l_j g_j, den = lᵀH l), and
// whether moving there lowers the objective.
func scaleStep(d, num, den float32) (nd float32, ok bool) {
	if !(den > 0) {
		return d, false
	}
	nd = roundFP16(d + num/den)
	if nd == d || nd == 0 {
		return d, false
	}
	dd := nd - d
	return nd, dd*(dd*den-2*num) < 0
}

// rowQuad is the refinement's objective of one row, (t-ŵ) H (t-ŵ)ᵀ, as
// its gradient H e of the row's error e = t − ŵ.
type rowQuad interface {
	// reset starts a row: e is its error, which the caller keeps current.
	reset(e []float32)
	// grad is (H e)_j, diag H_jj.
	grad(j int) float32
	diag(j int) float32
	// moved says ŵ_j grew by d (the caller lowered e_j by d).
	moved(j int, d float32)
	// group returns, for group b's codes lv, num = Σ l_j (H e)_j and
	// den = lᵀ H_bb l; groupMoved says its scale then grew by dd.
	group(b int, lv []int8) (num, den float32)
	groupMoved(dd float32)
}

func (f *factors) quad() rowQuad {
	if f.lr != nil {
		return f.lr.quad()
	}
	return &denseQuad{f: f, g: make([]float32, f.cols), v: make([]float32, f.cols)}
}

// denseQuad keeps the whole gradient g = H e.
type denseQuad struct {
	f    *factors
	g, v []float32
}

func (d *denseQuad) reset(e []float32) {
	cols := d.f.cols
	for j := range d.g {
		d.g[j] = kernels.DotF32(d.f.h[j*cols:(j+1)*cols], e)
	}
}

func (d *denseQuad) grad(j int) float32 { return d.g[j] }
func (d *denseQuad) diag(j int) float32 { return d.f.h[j*d.f.cols+j] }

func (d *denseQuad) moved(j int, dl float32) {
	cols := d.f.cols
	kernels.Axpy(d.g, -dl, d.f.h[j*cols:(j+1)*cols])
}

func (d *denseQuad) group(b int, lv []int8) (num, den float32) {
	cols, v := d.f.cols, d.v
	clear(v)
	for i, l := range lv {
		if l != 0 {
			j := b*group + i
			kernels.Axpy(v, float32(l), d.f.h[j*cols:(j+1)*cols])
			num += float32(l) * d.g[j]
		}
	}
	for i, l := range lv {
		den += float32(l) * v[b*group+i]
	}
	return num, den
}

func (d *denseQuad) groupMoved(dd float32) { kernels.Axpy(d.g, -dd, d.v) }

// pack writes the Q2_0 blocks: fp16 scale, then codes level+1, element j
// at bits 2*(j%4) of byte j/4.
func (q *quantized) pack(dst []byte) {
	groups := q.cols / group
	if len(q.levels) == 0 {
		return
	}
	lb := unsafe.Slice((*byte)(unsafe.Pointer(&q.levels[0])), len(q.levels)) // int8 and byte: the same bits
	for r := 0; r < q.rows; r++ {
		for b := 0; b < groups; b++ {
			out := dst[(r*groups+b)*quant.Q2BlockBytes:][:quant.Q2BlockBytes]
			binary.LittleEndian.PutUint16(out, quant.Float32ToFP16(q.scales[r*groups+b]))
			// Eight codes at a time: the levels' bytes (-1..2) as a uint64,
			// each byte + 1 without carries (0..3), to 2 bits each, element
			// j at bits 2*(j%4) of byte j/4.
			lv := lb[r*q.cols+b*group:][:group]
			for i := 0; i < 8; i++ {
				v := binary.LittleEndian.Uint64(lv[8*i:])
				v = (v&0x7f7f7f7f7f7f7f7f + 0x0101010101010101) ^ v&0x8080808080808080
				v = v&0x0303030303030303 | v>>6&0x0c0c0c0c0c0c0c0c | v>>12&0x3030303030303030 | v>>18&0xc0c0c0c0c0c0c0c0
				out[2+2*i] = byte(v)
				out[3+2*i] = byte(v >> 32)
			}
		}
	}
}

// DefaultSelfDamp and DefaultSelfRefineDamp are the dampings that measured
// best when the calibration includes windows the model generated itself
// (more, broader inputs: less regularisation needed); with them the SwiGLU
// refinement is on (DefaultSelfSwiGLU passes, DefaultSelfSwiGLUDamp), which
// measured 0.4032 -> 0.3973 mean KLD from IQ4_NL (docs/QUALITY.md). Without
// generated windows it stays off: from BF16 and IQ4_NL it measured +-0.007,
// no gain beyond the noise of the choices, at 2.5x the quantize time.
const (
	DefaultSelfDamp       = 0.10
	DefaultSelfRefineDamp = 0.1
	DefaultSelfSwiGLU     = 4
	DefaultSelfSwiGLUDamp = 1.0
)

// DefaultSelfRefine and DefaultSelfCandidates are the refinement passes
// and grid scales per sign with --calib-self windows: the configuration
// that measured 0.3973 there (docs/QUALITY.md), kept when the defaults
// without generated windows took fewer (not measured with them).
const (
	DefaultSelfRefine     = 4
	DefaultSelfCandidates = 12
)

// weightedQuad is one row's objective of refineWeighted,
// Σ_t (y_t − s_t ŵ·x_t)² + μ‖w − ŵ‖², through its residual r_t = y_t −
// s_t ŵ·x_t and the columns sx_j = (s_t x_tj)_t: the gradient is
// μ e_j + sx_jᵀ r and the diagonal μ + ‖sx_j‖². Its rowQuad methods are
// the row-by-row definition; refineWeightedWith runs descendLanes
// (refine_weighted.go), the same steps in lanes of columns.
type weightedQuad struct {
	n, np int // np: n rounded up to 8, the stride of sx
	mu    float32
	e     []float32
	sx    []float32 // [cols][np]: sx_j, then zeros
	sxB   []laneVec // [cols/rowLanes][n]: sx_j for j = rowLanes·k + lane
	xB    []laneVec // the same layout of the inputs x_j (fill's)
	xsrc  *float32  // the inputs xB holds
	sq    []float32 // ‖sx_j‖²
	r, u  []float32 // [n], [np]
	// descendLanes' and refineWeightedWith's scratch.
	lf, what, err []float32 // [cols]
	off           []int32
	coef          []float32
}

func (q *weightedQuad) reset(e []float32)      { q.e = e }
func (q *weightedQuad) col(j int) []float32    { return q.sx[j*q.np : j*q.np+q.n] }
func (q *weightedQuad) grad(j int) float32     { return q.mu*q.e[j] + kernels.DotF32(q.col(j), q.r) }
func (q *weightedQuad) diag(j int) float32     { return q.mu + q.sq[j] }
func (q *weightedQuad) moved(j int, d float32) { kernels.Axpy(q.r, -d, q.col(j)) }
func (q *weightedQuad) groupMoved(dd float32)  { kernels.Axpy(q.r, -dd, q.u[:q.n]) }

func (q *weightedQuad) group(b int, lv []int8) (num, den float32) {
	u := q.u[:q.n]
	clear(u)
	var l2 float32
	for i, l := range lv {
		if l == 0 {
			continue
		}
		j := b*group + i
		kernels.Axpy(u, float32(l), q.col(j))
		l2 += float32(l) * float32(l)
		num += float32(l) * q.mu * q.e[j]
	}
	return num + kernels.DotF32(u, q.r), kernels.DotF32(u, u) + q.mu*l2
}

// refineWeighted lowers, row by row, Σ_t (y_t − s_t ŵ·x_t)² + μ‖w − ŵ‖²
// (s and y per row and token: [rows][n]; μ = damp × the mean of the row's
// diagonal Σ_t s_t² x_tj²) by the refinement's coordinate descent over
// codes and scales. x is n×cols, xt its transpose.
func (q *quantized) refineWeighted(w, x, xt []float32, n int, sw, yw []float32, damp float32, passes int) {
	if passes == 0 || n == 0 {
		return
	}
	q.refineWeightedWith(newWeightedQuad(q.cols, n), w, x, xt, n, sw, yw, damp, 0, passes)
}

func newWeightedQuad(cols, n int) *weightedQuad {
	np := (n + 7) &^ 7
	return &weightedQuad{n: n, np: np, sx: make([]float32, cols*np), sxB: make([]laneVec, cols/rowLanes*n), xB: make([]laneVec, cols/rowLanes*n), sq: make([]float32, cols),
		r: make([]float32, n), u: make([]float32, np), lf: make([]float32, cols), what: make([]float32, cols), err: make([]float32, cols),
		off: make([]int32, group), coef: make([]float32, group)}
}

// refineWeightedWith is refineWeighted in hq's buffers (n inputs of q's
// columns).
//
// The ridge is damp times the row's mean weighted diagonal, but at least
// floor: a row whose weights the output hardly sees (its weights s near 0)
// would otherwise have no ridge at all, and its descent chase a target
// divided by those weights far from the source row.
func (q *quantized) refineWeightedWith(hq *weightedQuad, w, x, xt []float32, n int, sw, yw []float32, damp, floor float32, passes int) {
	if passes == 0 || n == 0 {
		return
	}
	cols, groups := q.cols, q.cols/group
	for row := 0; row < q.rows; row++ {
		s, y := sw[row*n:(row+1)*n], yw[row*n:(row+1)*n]
		lv := q.levels[row*cols : (row+1)*cols]
		sc := q.scales[row*groups : (row+1)*groups]
		hq.fill(x, xt, s)
		if hq.start(w[row*cols:(row+1)*cols], x, s, y, lv, sc, damp, floor) {
			hq.descendLanes(lv, sc, hq.err, passes)
		}
	}
}

// start sets up one row's descent from the norms q.sq of its columns: the
// ridge mu, the error q.err of the codes lv and scales sc against the
// source row wr, and the residual r_t = y_t − s_t ŵ·x_t. It reports false
// for a row whose weighted diagonal is 0 (the output does not see it).
func (q *weightedQuad) start(wr, x, s, y []float32, lv []int8, sc []float32, damp, floor float32) bool {
	cols := len(wr)
	var mean float32
	for _, v := range q.sq {
		mean += v
	}
	if !(mean > 0) {
		return false
	}
	q.mu = max(damp*mean/float32(cols), floor)
	e, what := q.err, q.what
	for j := range what {
		what[j] = sc[j/group] * float32(lv[j])
		e[j] = wr[j] - what[j]
	}
	dotMany(q.r, what, x, cols)
	for t, v := range q.r {
		q.r[t] = y[t] - s[t]*v
	}
	q.reset(e)
	return true
}

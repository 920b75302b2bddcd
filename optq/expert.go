package optq

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// Expert is one SwiGLU expert's weights as float32, row-major with one
// GGUF row per output: Gate and Up are F rows of D, Down D rows of F.
type Expert struct {
	Gate, Up, Down []float32
	D, F           int
}

// Inputs are the calibration inputs of one expert: the normed hidden
// states of the tokens routed to it, N rows of D for the quantizer and
// Held rows held back to measure the output error.
type Inputs struct {
	X    []float32
	N    int
	Held []float32
	NH   int
}

// Errors accumulates one tensor's errors in float64 so that experts add
// up: the weight error ‖W−Ŵ‖² against ‖W‖², and the output error
// ‖(W−Ŵ)X‖² against ‖WX‖² on held-back inputs.
type Errors struct {
	Weight, WeightEnergy float64
	Output, OutputEnergy float64
	HeldTokens           int64
}

// Add accumulates b.
func (a *Errors) Add(b Errors) {
	a.Weight += b.Weight
	a.WeightEnergy += b.WeightEnergy
	a.Output += b.Output
	a.OutputEnergy += b.OutputEnergy
	a.HeldTokens += b.HeldTokens
}

// RelWeight is ‖W−Ŵ‖²/‖W‖² (0 for a zero tensor).
func (a Errors) RelWeight() float64 { return ratio(a.Weight, a.WeightEnergy) }

// RelOutput is ‖(W−Ŵ)X‖/‖WX‖ over the held-back inputs, or NaN when none
// were held back.
func (a Errors) RelOutput() float64 {
	if a.HeldTokens == 0 {
		return math.NaN()
	}
	return math.Sqrt(ratio(a.Output, a.OutputEnergy))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return a / b
}

// ExpertResult is one expert quantized: Q2_0 bytes of each matrix, their
// errors, and the reason the expert fell back to the plain search ("" when
// it did not).
type ExpertResult struct {
	Gate, Up, Down []byte
	Errors         [3]Errors // gate, up, down
	Fallback       string
	// ExpertRounds is the rounds of the expert-output refinement it ran:
	// Options.Expert, or 0 when it had too few tokens (Options.ExpertTokens)
	// or fell back.
	ExpertRounds int
}

// QuantizeExpert quantizes an expert's three matrices against its
// calibration inputs: gate and up with H = XᵀX; down against the SwiGLU
// products A its exact gate and up give, through the products Â its
// quantized ones give: the target minimising ‖W A − Ŵ Â‖² + λ‖W − Ŵ‖² is
// W* = W (AᵀÂ + λI)(ÂᵀÂ + λI)⁻¹, quantized with H = ÂᵀÂ. With no inputs it
// falls back to the plain search for all three, as it does with fewer than
// opt.PlainTokens per column. Then opt.Expert rounds of
// refineExpert, when the expert has at least opt.ExpertTokens tokens per
// column of gate and up.
func QuantizeExpert(ex *Expert, in *Inputs, opt Options) (*ExpertResult, error) {
	D, F := ex.D, ex.F
	if len(ex.Gate) != F*D || len(ex.Up) != F*D || len(ex.Down) != D*F {
		return nil, fmt.Errorf("optq: expert of %d, %d, %d weights for D %d, F %d", len(ex.Gate), len(ex.Up), len(ex.Down), D, F)
	}
	if len(in.X) != in.N*D || len(in.Held) != in.NH*D {
		return nil, fmt.Errorf("optq: %d and %d input values for %d and %d tokens of %d", len(in.X), len(in.Held), in.N, in.NH, D)
	}
	if err := opt.Check(); err != nil {
		return nil, err
	}
	res := &ExpertResult{
		Gate: make([]byte, F*D/group*quant.Q2BlockBytes),
		Up:   make([]byte, F*D/group*quant.Q2BlockBytes),
		Down: make([]byte, D*F/group*quant.Q2BlockBytes),
	}
	var f *factors
	reason := FallbackNoTokens
	if in.N > 0 && float64(in.N) < opt.PlainTokens*float64(D) {
		reason = FallbackFewTokens
	} else {
		f, reason = hessianOf(in.X, in.N, D, opt.Damp, opt.RefineDamp)
	}
	if reason == "" {
		gu := opt.forTokens(in.N, D)
		if opt.SwiGLU > 0 {
			reason = swigluQuantize(f, ex, in, gu, res)
		} else {
			f.run(ex.Gate, F, gu, res.Gate)
			f.run(ex.Up, F, gu, res.Up)
		}
	}
	var pr *products
	if reason == "" {
		pr, reason = newProducts(ex, in, res)
	}
	if reason == "" {
		reason = quantizeDown(ex, in, opt, res, pr, false)
	}
	if float64(in.N) >= opt.ExpertTokens*float64(D) {
		for range opt.Expert {
			if reason != "" {
				break
			}
			reason = refineExpert(ex, in, opt, res, pr)
			res.ExpertRounds++
		}
	}
	if reason != "" {
		res.Fallback, res.ExpertRounds = reason, 0
		for _, m := range []struct {
			w   []float32
			dst []byte
		}{{ex.Gate, res.Gate}, {ex.Up, res.Up}, {ex.Down, res.Down}} {
			if err := plain(m.w, m.dst, opt); err != nil {
				return nil, err
			}
		}
	}
	return res, res.measure(ex, in)
}

// products are an expert's SwiGLU products on its quantizer tokens: a
// from the exact gate and up, and the quantized gate's and up's outputs,
// kept current as the expert-output refinement changes their rows.
type products struct {
	a      []float32 // [n][F]: silu(G x_t)·(U x_t)
	gh, uh []float32 // [F][n]: Ĝ x_t and Û x_t
}

// newProducts computes the products for res's quantized gate and up.
func newProducts(ex *Expert, in *Inputs, res *ExpertResult) (*products, string) {
	D, F, n := ex.D, ex.F, in.N
	gq, uq := make([]float32, F*D), make([]float32, F*D)
	if kernels.Dequantize(quant.Q2_0, res.Gate, gq) != nil || kernels.Dequantize(quant.Q2_0, res.Up, uq) != nil {
		return nil, FallbackSingular
	}
	return &products{a: swiglu(ex.Gate, ex.Up, in.X, n, D, F), gh: project(gq, in.X, n, D, F), uh: project(uq, in.X, n, D, F)}, ""
}

// quantized is silu(ĝ)·û, [n][F]: swiglu's of the quantized gate and up.
func (p *products) quantized(n, F int) []float32 {
	ah := make([]float32, n*F)
	for i := 0; i < F; i++ {
		for t := 0; t < n; t++ {
			ah[t*F+i] = silu(p.gh[i*n+t]) * p.uh[i*n+t]
		}
	}
	return ah
}

// quantizeDown fills res.Down for the products pr of the quantized gate
// and up in res; warm: from the codes and scales res.Down holds, by the
// refinement alone.
func quantizeDown(ex *Expert, in *Inputs, opt Options, res *ExpertResult, pr *products, warm bool) string {
	D, F := ex.D, ex.F
	opt = opt.forTokens(in.N, F)
	a, ah := pr.a, pr.quantized(in.N, F)
	if useLowRank(in.N, F) {
		return quantizeDownLowRank(ex.Down, a, ah, in.N, D, F, opt, res.Down, warm)
	}
	h := gram(ah, in.N, F)
	f, reason := factor(h, F, opt.Damp, opt.RefineDamp)
	if reason != "" {
		return reason
	}
	var mean float64
	for j := 0; j < F; j++ {
		mean += h[j*F+j]
	}
	lambda := opt.Damp * mean / float64(F)
	// Row r of the target solves Ĥ yᵀ = (w_r M)ᵀ, M = AᵀÂ + λI (Ĥ is
	// symmetric): first the rows w_r M, then the solves.
	m := cross(a, ah, in.N, F)
	for j := 0; j < F; j++ {
		m[j*F+j] += lambda
	}
	m32 := make([]float32, F*F)
	for i, v := range m {
		m32[i] = float32(v)
	}
	wm := make([]float64, D*F)
	row := make([]float32, F)
	for r := 0; r < D; r++ {
		clear(row)
		for i, w := range ex.Down[r*F : (r+1)*F] {
			if w != 0 {
				kernels.Axpy(row, w, m32[i*F:(i+1)*F])
			}
		}
		for j, v := range row {
			wm[r*F+j] = float64(v)
		}
	}
	solveCholesky(f.lower, F, wm, D)
	target := make([]float32, D*F)
	for i, v := range wm {
		target[i] = float32(v)
	}
	for _, v := range target {
		if v-v != 0 {
			return FallbackSingular
		}
	}
	f.rerun(target, D, opt, res.Down, warm)
	return ""
}

// swiglu returns silu(X Gᵀ) * (X Uᵀ), n rows of F.
func swiglu(gate, up, x []float32, n, D, F int) []float32 {
	out := make([]float32, n*F)
	g, u := make([]float32, F*n), make([]float32, F*n) // [F][n]
	projectRows(g, gate, F, D, x, n)
	projectRows(u, up, F, D, x, n)
	for i := 0; i < F; i++ {
		for t := 0; t < n; t++ {
			out[t*F+i] = silu(g[i*n+t]) * u[i*n+t]
		}
	}
	return out
}

// measure fills res.Errors from the decoded matrices and held-back inputs.
// The three matrices (F×D and D×F) are decoded in turn into one buffer.
func (res *ExpertResult) measure(ex *Expert, in *Inputs) error {
	D, F := ex.D, ex.F
	buf := make([]float32, F*D)
	var errs [3]Errors
	var a []float32
	if in.NH > 0 {
		// No subnormal products in the error's sums (their part is far
		// below one ulp of them: TestQuantizeExpertGolden's errors).
		a = flushTiny(swiglu(ex.Gate, ex.Up, in.Held, in.NH, D, F))
	}
	for i, m := range []struct {
		w, x       []float32
		q          []byte
		rows, cols int
	}{{ex.Gate, in.Held, res.Gate, F, D}, {ex.Up, in.Held, res.Up, F, D}, {ex.Down, a, res.Down, D, F}} {
		if err := kernels.Dequantize(quant.Q2_0, m.q, buf); err != nil {
			return err
		}
		errs[i] = matErrors(m.w, buf, m.rows, m.cols, m.x, in.NH)
	}
	res.Errors = errs
	return nil
}

// matErrors is the errors of wq against w; wq is overwritten with w − wq.
func matErrors(w, wq []float32, rows, cols int, x []float32, n int) Errors {
	var e Errors
	diff := wq
	var sd, sw float64 // the sums in registers (Errors' five fields are not)
	for i, v := range w {
		d := v - wq[i]
		diff[i] = d
		sd += float64(d) * float64(d)
		sw += float64(v) * float64(v)
	}
	e.Weight, e.WeightEnergy = sd, sw
	// The products row by row (a row's weights stay in cache for every
	// token), then summed token by token.
	ys, ds := make([]float32, n*rows), make([]float32, n*rows)
	y, d := make([]float32, rows*n), make([]float32, rows*n) // [rows][n]
	projectRows(y, w, rows, cols, x, n)
	projectRows(d, diff, rows, cols, x, n)
	for r := 0; r < rows; r++ {
		for t := 0; t < n; t++ {
			ys[t*rows+r], ds[t*rows+r] = y[r*n+t], d[r*n+t]
		}
	}
	for i, y := range ys {
		d := float64(ds[i])
		e.Output += d * d
		e.OutputEnergy += float64(y) * float64(y)
	}
	e.HeldTokens = int64(n)
	return e
}

// swigluQuantize quantizes gate and up against the SwiGLU product they
// make: after the OPTQ pass and the refinement against H, gate's rows are
// refined against the product's linearised error (weights silu'(g)·u per
// token), then up's against the product with the quantized gate,
// silu(g)·u − silu(ĝ)·û. The down projection's corrected target then
// compensates what is left.
func swigluQuantize(f *factors, ex *Expert, in *Inputs, opt Options, res *ExpertResult) string {
	D, F, n := ex.D, ex.F, in.N
	xt := transpose(in.X, n, D)
	g := project(ex.Gate, in.X, n, D, F) // [F][n]
	u := project(ex.Up, in.X, n, D, F)
	s := make([]float32, F*n)
	y := make([]float32, F*n)
	for i, z := range g {
		sg := sigmoid(z)
		s[i] = sg * (1 + z*(1-sg)) * u[i]
		y[i] = s[i] * z
	}
	qg := f.runQ(ex.Gate, F, opt)
	qg.refineWeighted(ex.Gate, in.X, xt, n, s, y, float32(opt.SwiGLUDamp), opt.SwiGLU)
	qg.pack(res.Gate)
	gq := make([]float32, F*D)
	if kernels.Dequantize(quant.Q2_0, res.Gate, gq) != nil {
		return FallbackSingular
	}
	gh := project(gq, in.X, n, D, F)
	for i, z := range g {
		s[i] = silu(gh[i])
		y[i] = silu(z) * u[i]
	}
	qu := f.runQ(ex.Up, F, opt)
	qu.refineWeighted(ex.Up, in.X, xt, n, s, y, float32(opt.SwiGLUDamp), opt.SwiGLU)
	qu.pack(res.Up)
	return ""
}

func sigmoid(z float32) float32 { return 1 / (1 + float32(math.Exp(float64(-z)))) }

// silu is z·sigmoid(z) as swiglu computes it.
func silu(z float32) float32 { return z / (1 + float32(math.Exp(float64(-z)))) }

// project returns W Xᵀ, [rows][n], for rows of w each D long.
func project(w, x []float32, n, D, rows int) []float32 {
	out := make([]float32, rows*n)
	projectRows(out, w, rows, D, x, n)
	return out
}

// unpack is pack's inverse: the levels and scales of rows×cols Q2_0 bytes.
func unpack(b []byte, rows, cols int) *quantized {
	groups := cols / group
	q := &quantized{rows: rows, cols: cols, levels: make([]int8, rows*cols), scales: make([]float32, rows*groups)}
	for r := 0; r < rows; r++ {
		for g := 0; g < groups; g++ {
			blk := b[(r*groups+g)*quant.Q2BlockBytes:][:quant.Q2BlockBytes]
			q.scales[r*groups+g] = quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < group; j++ {
				q.levels[r*cols+g*group+j] = int8(blk[2+j/4]>>(2*(j%4))&3) - 1
			}
		}
	}
	return q
}

// refineExpert is one round of the expert-output refinement: with the
// residual R_t = D h_t − D̂ ĥ_t of the expert's output on each quantizer
// token (h = silu(G x)·(U x) exact, ĥ from the quantized gate and up, D̂
// the quantized down), each row i of up, then of gate, is refined by the
// weighted coordinate descent (refineWeighted) against the part of the
// residual its product ĥ_i can reach through D̂'s column d_i:
// Σ_t (R_t·d_i/‖d_i‖ − ‖d_i‖ c_t (ŵ' − ŵ)·x_t)², with c_t = silu(ĝ_t) for
// up's row (exact: the product is linear in it) and silu'(ĝ_t)·û_t for
// gate's (linearised), plus the ridge RefineDamp × the row's mean diagonal
// × ‖w − ŵ'‖² towards the source row. After each row R follows its new
// products (exactly), so later rows see the error left. Down is then
// quantized again (quantizeDown) for the new products. This lowers the
// error the model feels, the expert's output, where the passes before it
// each lower their own matrix's.
func refineExpert(ex *Expert, in *Inputs, opt Options, res *ExpertResult, pr *products) string {
	D, F, n := ex.D, ex.F, in.N
	dq := make([]float32, D*F)
	if kernels.Dequantize(quant.Q2_0, res.Down, dq) != nil {
		return FallbackSingular
	}
	xt := transpose(in.X, n, D)
	h := pr.a // [n][F]
	qg, qu := unpack(res.Gate, F, D), unpack(res.Up, F, D)
	gh, uh := pr.gh, pr.uh       // [F][n], kept current below
	dcols := transpose(dq, D, F) // [F][D]: column i of D̂
	nus := make([]float32, F)    // ‖column i of D̂‖²
	for i := range nus {
		nus[i] = dot32(dcols[i*D:(i+1)*D], dcols[i*D:(i+1)*D])
	}
	R := make([]float32, n*D)
	hh := make([]float32, n*F) // [n][F]: ĥ
	for t := 0; t < n; t++ {
		for i := 0; i < F; i++ {
			hh[t*F+i] = silu(gh[i*n+t]) * uh[i*n+t]
		}
	}
	yr, yq := make([]float32, n), make([]float32, n)
	for r := 0; r < D; r++ { // row by row: a row of D and D̂ stays in cache
		dotMany(yr, ex.Down[r*F:(r+1)*F], h, F)
		dotMany(yq, dq[r*F:(r+1)*F], hh, F)
		for t := 0; t < n; t++ {
			R[t*D+r] = yr[t] - yq[t]
		}
	}
	s, y := make([]float32, n), make([]float32, n)
	newv, dd := make([]float32, n), make([]float32, n)
	rd := make([]float32, n) // ⟨R_t, dc⟩ of the row being refined
	xnorm := make([]float32, n)
	for t := range xnorm {
		xnorm[t] = dot32(in.X[t*D:(t+1)*D], in.X[t*D:(t+1)*D])
	}
	what := make([]float32, D)
	keepLv, keepSc := make([]int8, D), make([]float32, D/group)
	groups := D / group
	hq := newWeightedQuad(D, n)
	parts := 1
	if opt.ExpertGate {
		parts = 2
	}
	for part := 0; part < parts; part++ { // up, then gate
		q, w := qu, ex.Up
		if part == 1 {
			q, w = qg, ex.Gate
		}
		// weight is row i's output weights s (the product's slope
		// through D̂'s column, times that column's norm) at token t.
		weight := func(i, t int, sn float32) (s, cur float32) {
			if part == 0 {
				return silu(gh[i*n+t]) * sn, uh[i*n+t]
			}
			z := gh[i*n+t]
			sg := sigmoid(z)
			return sg * (1 + z*(1-sg)) * uh[i*n+t] * sn, z
		}
		// The ridge's floor: damp times the rows' mean weighted diagonal,
		// averaged over this matrix's rows, so that a row the output
		// hardly sees stays near its source row.
		var s2 float64
		for i := 0; i < F; i++ {
			sn := float32(math.Sqrt(float64(nus[i])))
			for t := 0; t < n; t++ {
				st, _ := weight(i, t, sn)
				s2 += float64(st) * float64(st) * float64(xnorm[t])
			}
		}
		floor := float32(opt.RefineDamp * s2 / float64(F) / float64(D))
		for i := 0; i < F; i++ {
			dc := dcols[i*D : (i+1)*D]
			nu := nus[i]
			if !(nu > 0) {
				continue
			}
			sn := float32(math.Sqrt(float64(nu)))
			dotMany(rd, dc, R, D)
			for t := 0; t < n; t++ {
				var cur float32
				s[t], cur = weight(i, t, sn)
				y[t] = rd[t]/sn + s[t]*cur
			}
			lv, sc := q.levels[i*D:(i+1)*D], q.scales[i*groups:(i+1)*groups]
			copy(keepLv, lv)
			copy(keepSc, sc)
			row := &quantized{rows: 1, cols: D, levels: lv, scales: sc}
			row.refineWeightedWith(hq, w[i*D:(i+1)*D], in.X, xt, n, s, y, float32(opt.RefineDamp), floor, opt.ExpertPasses)
			for j := range what {
				what[j] = row.scales[j/group] * float32(row.levels[j])
			}
			// The row is kept only if the expert's true output residual on
			// these tokens falls (the descent saw a linearised gate): the
			// change of Σ‖R_t‖² is Σ d_t² ‖dc‖² − 2 d_t ⟨R_t, dc⟩.
			var change float64
			dotMany(newv, what, in.X, D)
			for t := 0; t < n; t++ {
				v := newv[t]
				old := silu(gh[i*n+t]) * uh[i*n+t]
				var nw float32
				if part == 0 {
					nw = silu(gh[i*n+t]) * v
				} else {
					nw = silu(v) * uh[i*n+t]
				}
				newv[t], dd[t] = v, nw-old
				d := float64(dd[t])
				change += d*d*float64(nu) - 2*d*float64(rd[t]) // R is as it was for y
			}
			if !(change <= 0) {
				copy(lv, keepLv)
				copy(sc, keepSc)
				continue
			}
			for t := 0; t < n; t++ {
				if part == 0 {
					uh[i*n+t] = newv[t]
				} else {
					gh[i*n+t] = newv[t]
				}
				if d := dd[t]; d != 0 {
					kernels.Axpy(R[t*D:(t+1)*D], -d, dc)
				}
			}
		}
	}
	qg.pack(res.Gate)
	qu.pack(res.Up)
	return quantizeDown(ex, in, opt, res, pr, opt.WarmDown)
}

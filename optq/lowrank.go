package optq

import (
	"math"
	"unsafe"

	"github.com/stratactl/stratactl/kernels"
)

// The low-rank path: an expert that received fewer tokens n than its
// matrices have columns has H + λI = λI + XᵀX of the n×cols inputs X, and
// nothing of it needs the cols×cols H. With G_j = λI_n + Σ_{k>j} x_k x_kᵀ
// (x_k the column k of X, an n-vector), the OPTQ factor U of (H + λI)⁻¹ is
//
//	1/U_jj² = λ (1 + x_jᵀ G_j⁻¹ x_j),   U_jk/U_jj = −x_kᵀ G_j⁻¹ x_j  (k > j)
//
// (the Schur complement of the trailing block, through the push-through
// identity (λI + X_>ᵀX_>)⁻¹X_>ᵀ = X_>ᵀ(λI + X_>X_>ᵀ)⁻¹), so one pass over the
// columns from the last, adding x_j x_jᵀ to G⁻¹ by Sherman–Morrison, gives
// every c_j = G_j⁻¹ x_j in O(cols·n²). The OPTQ pass then carries a row's
// errors to the later columns through one n-vector z = Σ_j δ_j c_j (column
// k's compensated weight is w_k + x_kᵀ z), and the refinement keeps the
// row's output error r = X e (n values) instead of the gradient H e: both
// O(rows·cols·n). The down projection's corrected target needs only an
// n×n solve (downTargetLowRank). Float rounding aside, every step is the
// dense path's (lowrank_test.go checks each against it).

// useLowRank reports whether n inputs of cols columns take the low-rank
// path (a variable so that tests can compare both paths on one case).
var useLowRank = func(n, cols int) bool { return n < cols }

// hessianOf factors the damped Hessian of the n inputs x (rows of cols),
// by the low-rank path when useLowRank says so; reason as factor's.
func hessianOf(x []float32, n, cols int, damp, refineDamp float64) (*factors, string) {
	if n == 0 {
		return nil, FallbackNoTokens
	}
	if useLowRank(n, cols) {
		return lowRankFactor(x, n, cols, damp, refineDamp)
	}
	return factor(gram(x, n, cols), cols, damp, refineDamp)
}

// lowRank is a Hessian λI + XᵀX kept as its inputs.
type lowRank struct {
	n, cols int
	x       []float32 // [n][cols], the inputs
	xt      []float32 // [cols][n]: column j of X at xt[j*n:]
	cp      []float32 // [cols][n]: c_j/(1/U_jj) = G_j⁻¹ x_j U_jj
	sq      []float32 // ‖x_j‖²
	lambda  float64   // the OPTQ pass's damping λ
	lambdaR float32   // the refinement's damping
}

// lowRankFactor is factor for H = XᵀX given as its n < cols inputs x.
func lowRankFactor(x []float32, n, cols int, damp, refineDamp float64) (*factors, string) {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	mean := sum / float64(cols)
	if !(mean > 0) || math.IsInf(mean, 0) {
		return nil, FallbackNoTokens
	}
	lambda := damp * mean
	lr := &lowRank{n: n, cols: cols, x: x, xt: transpose(x, n, cols), cp: make([]float32, cols*n), sq: make([]float32, cols),
		lambda: lambda, lambdaR: float32(refineDamp * mean)}
	// H has rank n < cols: only the damping makes it invertible, and a
	// damping lost in the rounding of its largest diagonal (as the dense
	// Cholesky's pivot test sees it) is none.
	var maxDiag float64
	xt64 := make([]float64, cols*n)
	for j := 0; j < cols; j++ {
		var s float64
		for t, v := range lr.xt[j*n : (j+1)*n] {
			xt64[j*n+t] = float64(v)
			s += float64(v) * float64(v)
		}
		lr.sq[j] = float32(s)
		maxDiag = max(maxDiag, s+lambda)
	}
	if !(lambda > 1e-12*maxDiag) {
		return nil, FallbackSingular
	}
	f := &factors{cols: cols, invDiag: make([]float32, cols), band: make([]float32, cols*group), lr: lr}
	// G⁻¹ from G = λI (no column after the last), growing by x_j x_jᵀ.
	ginv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		ginv[i*n+i] = 1 / lambda
	}
	c := make([]float64, cols*n) // c_j = G_j⁻¹ x_j
	for j := cols - 1; j >= 0; j-- {
		xj, cj := xt64[j*n:(j+1)*n], c[j*n:(j+1)*n]
		a := 0
		for ; a+4 <= n; a += 4 {
			cj[a], cj[a+1], cj[a+2], cj[a+3] = dot64x4(ginv[a*n:(a+1)*n], ginv[(a+1)*n:(a+2)*n], ginv[(a+2)*n:(a+3)*n], ginv[(a+3)*n:(a+4)*n], xj)
		}
		for ; a < n; a++ {
			cj[a] = dot64(ginv[a*n:(a+1)*n], xj)
		}
		s := dot64(xj, cj)
		id := math.Sqrt(lambda * (1 + s))
		if !(id > 0) || math.IsInf(id, 0) {
			return nil, FallbackSingular
		}
		f.invDiag[j] = float32(id)
		for a, v := range cj {
			lr.cp[j*n+a] = float32(v / id)
		}
		k := 1 / (1 + s)
		for a := 0; a < n; a++ {
			ca, row := cj[a]*k, ginv[a*n:(a+1)*n]
			for b, v := range cj {
				row[b] -= ca * v
			}
		}
	}
	// The in-group entries U_jk = −x_kᵀ c_j / (1/U_jj).
	for j := 0; j < cols; j++ {
		g0 := j / group * group
		cj, id := c[j*n:(j+1)*n], float64(f.invDiag[j])
		k := j + 1
		for ; k+4 <= g0+group; k += 4 {
			s0, s1, s2, s3 := dot64x4(xt64[k*n:(k+1)*n], xt64[(k+1)*n:(k+2)*n], xt64[(k+2)*n:(k+3)*n], xt64[(k+3)*n:(k+4)*n], cj)
			bj := f.band[j*group+k-g0:][:4]
			bj[0], bj[1], bj[2], bj[3] = float32(-s0/id), float32(-s1/id), float32(-s2/id), float32(-s3/id)
		}
		for ; k < g0+group; k++ {
			f.band[j*group+k-g0] = float32(-dot64(xt64[k*n:(k+1)*n], cj) / id)
		}
	}
	return f, ""
}

func dot64(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// dot64x4 is dot64 of a0..a3 with b, the four sums interleaved (each in
// dot64's order) so that they do not wait on one another.
func dot64x4(a0, a1, a2, a3, b []float64) (s0, s1, s2, s3 float64) {
	a0, a1, a2, a3 = a0[:len(b)], a1[:len(b)], a2[:len(b)], a3[:len(b)]
	for i, v := range b {
		s0 += a0[i] * v
		s1 += a1[i] * v
		s2 += a2[i] * v
		s3 += a3[i] * v
	}
	return s0, s1, s2, s3
}

// lowCarry keeps each row's z = Σ_j e_j cp_j over the columns quantized so
// far; carry brings only the next group's columns up to date. The rows go
// a block at a time, one per lane (rowLanes, or wideLanes where useWide):
// the bits of a kernels.Axpy per error and a kernels.DotF32 per column,
// row by row.
type lowCarry[V lanes, M masks] struct {
	lr    *lowRank
	rows  int
	z     []V // [rows/width rounded up][n]
	el    []V // [rows/width rounded up][group]: each block's errors of one group, by column
	dots  []V // [group]: its next group's x_kᵀz
	block func(et []V, cp []float32, n int, z []V, xt []float32, dots []V)
}

func (lr *lowRank) carrier(rows int) carrier {
	if useWide {
		return newLowCarry[wideVec, wideMask](lr, rows, carryBlockWide)
	}
	return newLowCarry[laneVec, laneMask](lr, rows, carryBlockGo)
}

func newLowCarry[V lanes, M masks](lr *lowRank, rows int, block func(et []V, cp []float32, n int, z []V, xt []float32, dots []V)) *lowCarry[V, M] {
	var v V
	blocks := (rows + len(v) - 1) / len(v)
	return &lowCarry[V, M]{lr: lr, rows: rows, z: make([]V, blocks*lr.n), el: make([]V, blocks*group), dots: make([]V, group), block: block}
}

// setErrs sets the errors of row r for the next carry: e_k = −ne[k][c].
func (c *lowCarry[V, M]) setErrs(r int, ne *[group][scoreLanes]float32, c0 int) {
	var v V
	width := len(v)
	el, l := c.el[r/width*group:][:group], r%width
	for k := range el {
		el[k][l] = -ne[k][c0]
	}
}

// setErrLanes sets the errors of the nr rows from r0 (a multiple of
// scoreLanes) for the next carry from a pass with a row per lane: row
// r0+i's e_k = −ne[k][i]; lanes of no row are 0.
func (c *lowCarry[V, M]) setErrLanes(r0, nr int, ne *[group][scoreLanes]float32) {
	var v V
	width := len(v)
	for b := 0; b*width < scoreLanes && r0+b*width < c.rows; b++ {
		el := c.el[(r0/width+b)*group:][:group]
		m := min(width, nr-b*width)
		if m == width {
			negLanes(unsafe.Slice(&el[0][0], group*width), width, ne[:], b*width)
			continue
		}
		for k := range el {
			src := ne[k][b*width:]
			for l := 0; l < m; l++ {
				el[k][l] = -src[l]
			}
			for l := m; l < width; l++ {
				el[k][l] = 0
			}
		}
	}
}

func (c *lowCarry[V, M]) carry(W []float32, errs []float32, g0, g1 int) {
	var v V
	width := len(v)
	for r0 := 0; r0 < c.rows; r0 += width {
		el := c.el[r0/width*group:][:group]
		if r0+width > c.rows {
			clear(el)
		}
		for l := 0; l < min(width, c.rows-r0); l++ {
			for jj, e := range errs[(r0+l)*group : (r0+l)*group+g1-g0] {
				el[jj][l] = e
			}
		}
	}
	c.carryTo(W, c.lr.cols, g1, W, g0, g1)
}

// carryNext is carry with the errors set by setErrs or setErrLanes and
// the next group's compensated weights written to next ([rows][group]:
// w_k + x_kᵀ z for the columns k from g1, w the source rows) instead of
// into a copy of the whole matrix: the same values, since each column's
// weight is carried to once.
func (c *lowCarry[V, M]) carryNext(next, w []float32, g0, g1 int) {
	c.carryTo(next, group, 0, w, g0, g1)
}

// carryTo carries the errors c.el of columns [g0, g1):
// out[r*stride+off+k] = src[r*cols+g1+k] + x_{g1+k}ᵀ z_r for the next
// group's columns k.
func (c *lowCarry[V, M]) carryTo(out []float32, stride, off int, src []float32, g0, g1 int) {
	lr := c.lr
	n, cols := lr.n, lr.cols
	g2 := min(g1+group, cols)
	var v V
	width := len(v)
	dots := c.dots[:g2-g1]
	if g2-g1 == group {
		prefetchGroups(src[g1:], cols, min(width, c.rows))
	}
	for r0 := 0; r0 < c.rows; r0 += width {
		nr := min(width, c.rows-r0)
		if g2-g1 == group && r0+width < c.rows { // the next block's source rows
			prefetchGroups(src[(r0+width)*cols+g1:], cols, min(width, c.rows-r0-width))
		}
		et := c.el[r0/width*group:][:g1-g0]
		z := c.z[r0/width*n : (r0/width+1)*n]
		c.block(et, lr.cp[g0*n:g1*n], n, z, lr.xt[g1*n:g2*n], dots)
		// Columns from g1 on were not touched yet: w_k + x_kᵀ z, row by
		// row (each row's columns are contiguous).
		for l := 0; l < nr; l++ {
			r := r0 + l
			or, sr := out[r*stride+off:r*stride+off+len(dots)], src[r*cols+g1:r*cols+g1+len(dots)]
			for k := range or {
				or[k] = sr[k] + dots[k][l]
			}
		}
	}
}

// carryBlockOf is one block's carry: for each column jj of the group, in
// order, z += e_jj·cp_jj in the lanes whose error is not 0 (et[jj][l]),
// then dots[k] = x_kᵀz for the next group's columns xt ([k][n]).
func carryBlockOf[V lanes, M masks](dot func([]float32, []V, *V), axpy func([]V, *V, *M, []float32), et []V, cp []float32, n int, z []V, xt []float32, dots []V) {
	for jj := range et {
		var mask M
		any := false
		for l := 0; l < len(mask); l++ {
			if et[jj][l] != 0 {
				mask[l] = ^uint32(0)
				any = true
			}
		}
		if any {
			axpy(z, &et[jj], &mask, cp[jj*n:(jj+1)*n])
		}
	}
	for k := range dots {
		dot(xt[k*n:(k+1)*n], z, &dots[k])
	}
}

func carryBlockGo(et []laneVec, cp []float32, n int, z []laneVec, xt []float32, dots []laneVec) {
	carryBlockOf(dotLanes, axpyLanes, et, cp, n, z, xt, dots)
}

// carryBlockWide is the wide carry's block (replaced where the CPU has it).
var carryBlockWide = func(et []wideVec, cp []float32, n int, z []wideVec, xt []float32, dots []wideVec) {
	carryBlockOf(dotLanesOf[wideVec], axpyLanesOf[wideVec, wideMask], et, cp, n, z, xt, dots)
}

// lowQuad keeps a row's output error r = X e: (H e)_j = λ e_j + x_jᵀ r.
type lowQuad struct {
	lr   *lowRank
	e    []float32
	r, u []float32
}

func (lr *lowRank) quad() rowQuad {
	return &lowQuad{lr: lr, r: make([]float32, lr.n), u: make([]float32, lr.n)}
}

func (q *lowQuad) reset(e []float32) {
	q.e = e
	cols := q.lr.cols
	for t := range q.r {
		q.r[t] = kernels.DotF32(q.lr.x[t*cols:(t+1)*cols], e)
	}
}

func (q *lowQuad) col(j int) []float32 { n := q.lr.n; return q.lr.xt[j*n : (j+1)*n] }

func (q *lowQuad) grad(j int) float32 {
	return q.lr.lambdaR*q.e[j] + kernels.DotF32(q.col(j), q.r)
}

func (q *lowQuad) diag(j int) float32 { return q.lr.lambdaR + q.lr.sq[j] }

func (q *lowQuad) moved(j int, d float32) { kernels.Axpy(q.r, -d, q.col(j)) }

func (q *lowQuad) group(b int, lv []int8) (num, den float32) {
	clear(q.u)
	var l2 float32
	for i, l := range lv {
		if l != 0 {
			j := b*group + i
			kernels.Axpy(q.u, float32(l), q.col(j))
			num += float32(l) * q.grad(j)
			l2 += float32(l) * float32(l)
		}
	}
	return num, q.lr.lambdaR*l2 + kernels.DotF32(q.u, q.u)
}

func (q *lowQuad) groupMoved(dd float32) { kernels.Axpy(q.r, -dd, q.u) }

// downTarget is the down projection's corrected target of quantizeDown
// for n < F tokens: with Δ = A − Â (n×F) and K = λI_n + ÂÂᵀ,
//
//	W (AᵀÂ + λI)(ÂᵀÂ + λI)⁻¹ = W + (W Δᵀ) K⁻¹ Â
//
// (Woodbury on (ÂᵀÂ + λI)⁻¹ and push-through on AᵀÂ(ÂᵀÂ + λI)⁻¹), an n×n
// solve instead of an F×F one. w is D rows of F. It returns nil when K is
// not positive definite.
func (lr *lowRank) downTarget(w, a []float32, D int) []float32 {
	n, F, ah := lr.n, lr.cols, lr.x
	k := make([]float64, n*n)
	dots := make([]float32, n)
	for t := 0; t < n; t++ {
		dotMany(dots[:t+1], ah[t*F:(t+1)*F], ah, F)
		for s, d := range dots[:t+1] {
			v := float64(d)
			k[t*n+s], k[s*n+t] = v, v
		}
		k[t*n+t] += lr.lambda
	}
	if !cholesky(k, n) {
		return nil
	}
	delta := make([]float32, n*F)
	for i, v := range a {
		delta[i] = v - ah[i]
	}
	p := make([]float64, D*n) // rows W Δᵀ, then solved: (W Δᵀ) K⁻¹
	wd := make([]float32, D*n)
	projectRows(wd, w, D, F, delta, n)
	for i, d := range wd {
		p[i] = float64(d)
	}
	solveCholesky(k, n, p, D)
	out := append([]float32(nil), w...)
	as, ts := make([]float32, n), make([]int32, n)
	for r := 0; r < D; r++ {
		na := 0
		for t, y := range p[r*n : (r+1)*n] {
			if y != 0 {
				as[na], ts[na] = float32(y), int32(t)
				na++
			}
		}
		axpyTokens(out[r*F:(r+1)*F], as[:na], ts[:na], ah)
	}
	return out
}

// axpyTokens adds a[k]·x_{t[k]} to o for k in order (x_t the row t of x,
// len(o) long), each a kernels.Axpy: the product rounded, then the add.
var axpyTokens = axpyTokensGo

func axpyTokensGo(o, a []float32, t []int32, x []float32) {
	F := len(o)
	for k, ak := range a {
		kernels.Axpy(o, ak, x[int(t[k])*F:int(t[k])*F+F])
	}
}

// quantizeDownLowRank is quantizeDown's target and quantization for n < F
// tokens: a and ah are the exact and quantized SwiGLU products; warm as
// quantizeDown's.
func quantizeDownLowRank(w, a, ah []float32, n, D, F int, opt Options, dst []byte, warm bool) string {
	a, ah = flushTiny(a), flushTiny(ah)
	f, reason := lowRankFactor(ah, n, F, opt.Damp, opt.RefineDamp)
	if reason != "" {
		return reason
	}
	target := f.lr.downTarget(w, a, D)
	if target == nil {
		return FallbackSingular
	}
	for _, v := range target {
		if v-v != 0 {
			return FallbackSingular
		}
	}
	f.rerun(target, D, opt, dst, warm)
	return ""
}

// tinyProduct bounds the SwiGLU products that down's quantization takes
// as they are: below it (2^-50) a product is taken as 0.
const tinyProduct = 0x1p-50

// flushTiny returns v with every value of magnitude below tinyProduct
// (SiLU's far negative tail, about 1e-15 and less) replaced by 0, a copy
// when it changes any. Such a value's part in every sum down's
// quantization takes is far below one float32 ulp of that sum (the
// products' energy is O(1) per token), so the bytes are the same
// (TestQuantizeExpertGolden); but its products with the other small
// values there are float32 subnormals, and every vector instruction with
// a subnormal lane takes a microcode assist on Intel CPUs (about 100
// cycles): 3% of downTarget's products were subnormal in the field
// benchmark, which ran 3x slower on the lent Xeon than on an AMD EPYC.
func flushTiny(v []float32) []float32 {
	var out []float32
	for i, x := range v {
		if x != 0 && math.Abs(float64(x)) < tinyProduct {
			if out == nil {
				out = append([]float32(nil), v...)
			}
			out[i] = 0
		}
	}
	if out == nil {
		return v
	}
	return out
}

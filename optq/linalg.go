package optq

import (
	"math"

	"github.com/stratactl/stratactl/kernels"
)

// gram returns XᵀX of the n rows of x (each cols long) as a dense
// cols×cols float64 matrix. The sums run in float32 lanes over the tokens
// (one kernels.DotF32 per entry on the transposed data), which is exact
// enough for a Hessian and fast at the field width.
func gram(x []float32, n, cols int) []float64 {
	xt := transpose(x, n, cols)
	h := make([]float64, cols*cols)
	for i := 0; i < cols; i++ {
		ci := xt[i*n : (i+1)*n]
		for j := 0; j <= i; j++ {
			v := float64(kernels.DotF32(ci, xt[j*n:(j+1)*n]))
			h[i*cols+j], h[j*cols+i] = v, v
		}
	}
	return h
}

// cross returns AᵀB of two n-row matrices of cols columns: entry [i][j] is
// sum over rows t of a[t][i]*b[t][j].
func cross(a, b []float32, n, cols int) []float64 {
	at, bt := transpose(a, n, cols), transpose(b, n, cols)
	m := make([]float64, cols*cols)
	for i := 0; i < cols; i++ {
		ai := at[i*n : (i+1)*n]
		for j := 0; j < cols; j++ {
			m[i*cols+j] = float64(kernels.DotF32(ai, bt[j*n:(j+1)*n]))
		}
	}
	return m
}

// transpose returns the cols×rows transpose of the rows×cols x, in tiles of
// transposeTile×transposeTile so that both sides stay in cache lines.
func transpose(x []float32, rows, cols int) []float32 {
	t := make([]float32, rows*cols)
	for r0 := 0; r0 < rows; r0 += transposeTile {
		r1 := min(r0+transposeTile, rows)
		for c0 := 0; c0 < cols; c0 += transposeTile {
			c1 := min(c0+transposeTile, cols)
			for r := r0; r < r1; r++ {
				xr := x[r*cols+c0 : r*cols+c1]
				for i, v := range xr {
					t[(c0+i)*rows+r] = v
				}
			}
		}
	}
	return t
}

const transposeTile = 16

// cholesky factors the symmetric positive definite n×n matrix a in place
// into its lower factor L (a = L Lᵀ; the upper triangle is zeroed). It
// reports false when a pivot is not positive (a singular or indefinite
// matrix) or not finite.
func cholesky(a []float64, n int) bool {
	for j := 0; j < n; j++ {
		rj := a[j*n : j*n+j]
		s := a[j*n+j]
		for _, v := range rj {
			s -= v * v
		}
		// A pivot that lost almost all of its diagonal to cancellation is
		// rank deficiency in float64 clothing: treat it as singular.
		if !(s > 1e-12*math.Abs(a[j*n+j])) || math.IsInf(s, 0) {
			return false
		}
		d := math.Sqrt(s)
		a[j*n+j] = d
		for i := j + 1; i < n; i++ {
			ri := a[i*n : i*n+j]
			t := a[i*n+j]
			for k, v := range ri {
				t -= v * rj[k]
			}
			a[i*n+j] = t / d
		}
		for k := j + 1; k < n; k++ {
			a[j*n+k] = 0
		}
	}
	return true
}

// invFromCholesky returns a⁻¹ = L⁻ᵀ L⁻¹ from the lower factor l of a.
func invFromCholesky(l []float64, n int) []float64 {
	// Linv: solve L Linv = I column by column (lower triangular).
	li := make([]float64, n*n)
	for c := 0; c < n; c++ {
		for i := c; i < n; i++ {
			s := 0.0
			if i == c {
				s = 1
			}
			for k := c; k < i; k++ {
				s -= l[i*n+k] * li[k*n+c]
			}
			li[i*n+c] = s / l[i*n+i]
		}
	}
	inv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := 0.0
			for k := i; k < n; k++ { // (Linvᵀ Linv)[i][j] = sum_k Linv[k][i] Linv[k][j], k >= max(i,j)
				s += li[k*n+i] * li[k*n+j]
			}
			inv[i*n+j], inv[j*n+i] = s, s
		}
	}
	return inv
}

// solveCholesky overwrites each of the m rows of b (n long) with a⁻¹ bᵀ
// given the lower factor l of the symmetric a: rows are solved independently.
func solveCholesky(l []float64, n int, b []float64, m int) {
	r := 0
	for ; r+4 <= m; r += 4 { // four rows at once: their chains are independent
		y0, y1, y2, y3 := b[r*n:(r+1)*n], b[(r+1)*n:(r+2)*n], b[(r+2)*n:(r+3)*n], b[(r+3)*n:(r+4)*n]
		for i := 0; i < n; i++ {
			s0, s1, s2, s3 := y0[i], y1[i], y2[i], y3[i]
			li := l[i*n : i*n+i]
			for k, v := range li {
				s0 -= v * y0[k]
				s1 -= v * y1[k]
				s2 -= v * y2[k]
				s3 -= v * y3[k]
			}
			d := l[i*n+i]
			y0[i], y1[i], y2[i], y3[i] = s0/d, s1/d, s2/d, s3/d
		}
		for i := n - 1; i >= 0; i-- {
			s0, s1, s2, s3 := y0[i], y1[i], y2[i], y3[i]
			for k := i + 1; k < n; k++ {
				v := l[k*n+i]
				s0 -= v * y0[k]
				s1 -= v * y1[k]
				s2 -= v * y2[k]
				s3 -= v * y3[k]
			}
			d := l[i*n+i]
			y0[i], y1[i], y2[i], y3[i] = s0/d, s1/d, s2/d, s3/d
		}
	}
	for ; r < m; r++ {
		y := b[r*n : (r+1)*n]
		for i := 0; i < n; i++ {
			s := y[i]
			for k := 0; k < i; k++ {
				s -= l[i*n+k] * y[k]
			}
			y[i] = s / l[i*n+i]
		}
		for i := n - 1; i >= 0; i-- {
			s := y[i]
			for k := i + 1; k < n; k++ {
				s -= l[k*n+i] * y[k]
			}
			y[i] = s / l[i*n+i]
		}
	}
}

func dot32(a, b []float32) float32 { return kernels.DotF32(a, b) }

// dotMany sets out[t] = kernels.DotF32(b[t·stride:], a) (len(a) values)
// for every t < len(out), bit for bit: where the CPU has AVX-512 several
// rows at once, sharing a's loads.
var dotMany = dotManyGo

// dotManyGo is the portable definition of dotMany.
func dotManyGo(out, a, b []float32, stride int) {
	for t := range out {
		out[t] = kernels.DotF32(b[t*stride:t*stride+len(a)], a)
	}
}

// projectRows sets out[i·n+t] = kernels.DotF32(row i of w, token t of x)
// for rows rows of w and n tokens of x (both D long), as dotMany does row
// by row, but rows four at a time against each token: the four rows stay
// in cache while the tokens stream by once per four rows, not once per
// row (at the field width the tokens are 327 KB).
func projectRows(out, w []float32, rows, D int, x []float32, n int) {
	var d [4]float32
	i := 0
	for ; i+4 <= rows; i += 4 {
		for t := 0; t < n; t++ {
			dotMany(d[:], x[t*D:(t+1)*D], w[i*D:], D)
			out[i*n+t], out[(i+1)*n+t], out[(i+2)*n+t], out[(i+3)*n+t] = d[0], d[1], d[2], d[3]
		}
	}
	for ; i < rows; i++ {
		dotMany(out[i*n:(i+1)*n], w[i*D:(i+1)*D], x, D)
	}
}

// prefetchGroups asks for the 64 values at p[r*stride:] of each of rows
// rows to be brought into cache (a hint: no value changes); the portable
// path does nothing.
var prefetchGroups = func(p []float32, stride, rows int) {}

// transpose16 sets dst[j*ds+i] = src[i*ss+j] for i, j < 16: one 16 × 16
// tile (ds and ss the strides in values), in registers where the CPU has
// a vector path (a permutation: the same values whatever the path).
var transpose16 = transpose16Go

func transpose16Go(dst []float32, ds int, src []float32, ss int) {
	_, _ = dst[15*ds+15], src[15*ss+15]
	for i := 0; i < 16; i++ {
		for j := 0; j < 16; j++ {
			dst[j*ds+i] = src[i*ss+j]
		}
	}
}

// negLanes sets dst[k*width+l] = −ne[k][off+l] for k < group, l < width
// (width 8 or 16, off+width <= scoreLanes): a pass's errors into the
// carry's lanes, in registers where the CPU has a vector path.
var negLanes = negLanesGo

func negLanesGo(dst []float32, width int, ne [][scoreLanes]float32, off int) {
	dst, ne = dst[:group*width], ne[:group]
	for k := range ne {
		src, d := ne[k][off:off+width], dst[k*width:(k+1)*width]
		for l, v := range src {
			d[l] = -v
		}
	}
}

package kernels

import "fmt"

// Attention's two inner loops over the cached positions, for the batched
// (prompt) path: the scores of one query against n keys, and the
// probability-weighted sum of n values. Each is defined by the loop it
// replaces, one DotF32 or one Axpy per position, so every path gives those
// bits: the vector paths keep the query (or the output) in registers and
// run every position in one call, but each score is DotF32's order and each
// output element takes its terms one position at a time, a rounded product
// then a rounded add, as Axpy does. Exact and fast mode both run them.

// AttnScores sets out[j] = DotF32(k[j*stride:j*stride+len(q)], q) * scale
// for every j < len(out).
func AttnScores(out, q, k []float32, stride int, scale float32) {
	host.attnScoresSlices(out, q, k, stride, scale)
}

func (h *kernelSet) attnScoresSlices(out, q, k []float32, stride int, scale float32) {
	n, d := len(out), len(q)
	if n == 0 {
		return
	}
	if stride < d || len(k) < (n-1)*stride+d {
		panic(fmt.Sprintf("kernels: AttnScores of %d keys of %d at stride %d in %d values", n, d, stride, len(k)))
	}
	if h.attnScores != nil && d > 0 && d%32 == 0 {
		h.attnScores(&q[0], &k[0], stride, n, d/32, scale, &out[0])
		return
	}
	for j := range out {
		out[j] = h.dotF32Slices(k[j*stride:j*stride+d], q) * scale
	}
}

// AttnSum adds p[j]*v[j*stride+i] to o[i] for every j < len(p) in turn
// (Axpy(o, p[j], v[j*stride:]) for j = 0, 1, ...).
func AttnSum(o, p, v []float32, stride int) { host.attnSumSlices(o, p, v, stride) }

func (h *kernelSet) attnSumSlices(o, p, v []float32, stride int) {
	n, d := len(p), len(o)
	if n == 0 {
		return
	}
	if stride < d || len(v) < (n-1)*stride+d {
		panic(fmt.Sprintf("kernels: AttnSum of %d values of %d at stride %d in %d values", n, d, stride, len(v)))
	}
	if h.attnSum != nil && d > 0 && d%attnSumBlock == 0 {
		h.attnSum(&o[0], &p[0], &v[0], stride, n, d/attnSumBlock)
		return
	}
	for j, pj := range p {
		h.axpySlices(o, pj, v[j*stride:j*stride+d])
	}
}

// attnSumBlock is how many outputs the vector AttnSum keeps in registers.
const attnSumBlock = 128

package engine

// batchBufs are float32 buffers of the batched (multi-token) path that a
// session keeps between layers and batches, so a prompt's layers do not
// each allocate (and the runtime clear) tens of megabytes: at 512 tokens
// the routed experts' outputs alone are 42 MB a layer. They are bounded by
// Session.MaxBatch, not by the model.
type batchBufs struct {
	q, k, v, att, ys []float32
}

// grow is (*b)[:n], reallocated when shorter; the contents are left as
// they are (callers write every element or clear it).
func grow(b *[]float32, n int) []float32 {
	if cap(*b) < n {
		*b = make([]float32, n)
	}
	*b = (*b)[:n]
	return *b
}

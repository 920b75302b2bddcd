package kernels

// Argmax is the index of the largest of x, ties to the lower index: the
// loop `if x[i] > x[best] { best = i }` from best = 0, whose answer is 0
// when x[0] is NaN (nothing compares greater) and otherwise the first
// index holding the largest value that is not NaN (-0 and +0 equal). The
// vector path finds that value over the whole slice, then its first index.
func Argmax(x []float32) int { return host.argmax(x) }

func (k *kernelSet) argmax(x []float32) int {
	n := len(x)
	if k.maxF32 == nil || n < 64 || x[0] != x[0] {
		best := 0
		for i, v := range x {
			if v > x[best] {
				best = i
			}
		}
		return best
	}
	// x[0] is a number, so the largest value is one, found in the vector
	// part or the tail; a NaN never compares greater, nor equal.
	n8 := n &^ 7
	mx := k.maxF32(&x[0], n8)
	for _, v := range x[n8:] {
		if v > mx {
			mx = v
		}
	}
	if i := k.findF32(&x[0], n8, mx); i < n8 {
		return i
	}
	for i := n8; i < n; i++ {
		if x[i] == mx {
			return i
		}
	}
	return 0 // not reached: mx is one of x
}

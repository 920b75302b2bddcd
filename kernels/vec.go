package kernels

// Element-wise loops of the decode step's glue (the residual adds and the
// RMS norm's scaling), each element its own: the vector paths give the
// loops' bits.

// AddTo adds o[i] to x[i] for every i < len(x) (len(o) >= len(x)).
func AddTo(x, o []float32) { host.addTo(x, o) }

func (k *kernelSet) addTo(x, o []float32) {
	n := len(x)
	o = o[:n]
	i := 0
	if k.add != nil && n >= 8 {
		i = n &^ 7
		k.add(&x[0], &o[0], i)
	}
	for ; i < n; i++ {
		x[i] += o[i]
	}
}

// ScaleMul sets y[i] = (x[i]*s)*w[i] for every i < len(y) (len(x) and
// len(w) >= len(y)), each product rounded to float32; y may be x.
func ScaleMul(y, x, w []float32, s float32) { host.scaleMul(y, x, w, s) }

func (k *kernelSet) scaleMul(y, x, w []float32, s float32) {
	n := len(y)
	x, w = x[:n], w[:n]
	i := 0
	if k.scaleMulVec != nil && n >= 8 {
		i = n &^ 7
		k.scaleMulVec(&y[0], &x[0], &w[0], s, i)
	}
	for ; i < n; i++ {
		y[i] = (x[i] * s) * w[i]
	}
}

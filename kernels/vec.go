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

// ShiftScale sets x[i] = float32((float64(v[i]) - sub) * mul) for every
// i < len(x) (len(v) >= len(x)): a float64 difference and product, then
// one rounding to float32 (the sampler's scaled logits).
func ShiftScale(x, v []float32, sub, mul float64) { host.shiftScale(x, v, sub, mul) }

func (k *kernelSet) shiftScale(x, v []float32, sub, mul float64) {
	n := len(x)
	v = v[:n]
	i := 0
	if k.shiftScaleVec != nil && n >= 8 {
		i = n &^ 7
		k.shiftScaleVec(&x[0], &v[0], sub, mul, i)
	}
	for ; i < n; i++ {
		x[i] = float32((float64(v[i]) - sub) * mul)
	}
}

// Widen sets p[i] = float64(x[i]) for every i < len(p) (len(x) >= len(p)).
func Widen(p []float64, x []float32) { host.widen(p, x) }

func (k *kernelSet) widen(p []float64, x []float32) {
	n := len(p)
	x = x[:n]
	i := 0
	if k.widenVec != nil && n >= 8 {
		i = n &^ 7
		k.widenVec(&p[0], &x[0], i)
	}
	for ; i < n; i++ {
		p[i] = float64(x[i])
	}
}

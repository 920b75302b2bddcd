package kernels

import "github.com/stratactl/stratactl/quant"

// QuantizeQ2_0 is quant.Quantize(quant.Q2_0, src, dst, opt) with Q2Search's
// hot loops on the fastest path this CPU has. It writes exactly the bytes
// of the reference in package quant, on every path.
func QuantizeQ2_0(src []float32, dst []byte, opt *quant.QuantizeOptions) error {
	return host.quantizeQ2_0(src, dst, opt)
}

// Quantize is quant.Quantize with the vector paths for the types that have
// them (Q2_0); other types go to the reference.
func Quantize(t quant.Type, src []float32, dst []byte, opt *quant.QuantizeOptions) error {
	if t == quant.Q2_0 {
		return QuantizeQ2_0(src, dst, opt)
	}
	return quant.Quantize(t, src, dst, opt)
}

func (k *kernelSet) quantizeQ2_0(src []float32, dst []byte, opt *quant.QuantizeOptions) error {
	q2 := k.q2
	if q2 == nil {
		q2 = &quant.Q2SearchRef
	}
	return quant.QuantizeQ2_0With(src, dst, opt, q2)
}

// NewQ2Blocks is quant.NewQ2Blocks with Q2Search's hot loops on the fastest
// path this CPU has.
func NewQ2Blocks(opt *quant.QuantizeOptions) (*quant.Q2Blocks, error) {
	q2 := host.q2
	if q2 == nil {
		q2 = &quant.Q2SearchRef
	}
	return quant.NewQ2Blocks(opt, q2)
}

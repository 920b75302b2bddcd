package convert

import "github.com/stratactl/stratactl/kernels"

// dequantize and quantize are the codecs the pipelines use: package
// kernels' vector paths, which give the same bits as package quant's
// reference on every CPU.
var (
	dequantize = kernels.Dequantize
	quantize   = kernels.Quantize
)

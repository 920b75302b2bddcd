package convert

import "github.com/stratactl/stratactl/quant"

// dequantize and quantize are the codecs the pipelines use: the reference
// implementations in package quant.
var (
	dequantize = quant.Dequantize
	quantize   = quant.Quantize
)

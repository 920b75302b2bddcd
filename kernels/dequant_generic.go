//go:build !amd64 || noasm

package kernels

import "github.com/stratactl/stratactl/quant"

// Without assembly every type takes quant's portable path.
func vectorDequantizer(quant.Type) func(src []byte, dst []float32) { return nil }

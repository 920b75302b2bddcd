//go:build !amd64

package kernels

import "github.com/stratactl/stratactl/quant"

const q2HaveAVX2 = false

var q2AVX2 = quant.Q2SearchRef

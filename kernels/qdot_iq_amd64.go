//go:build amd64 && !noasm

package kernels

import "github.com/stratactl/stratactl/quant"

// The IQ4_XS and MXFP4 DotQ8 kernels take whole groups of 8 sub-blocks (136
// bytes of weights) and the groups' factors (qdot_iq_amd64.s); groups > 0.

//go:noescape
func q8dotIQ4XSAVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)

//go:noescape
func q8dotMXFP4AVX2(w *byte, xq *int8, xd *float32, dw *float32, groups int, lanes *[8]float32, table *int8)

// nibBatch is how many groups' factors the wrappers compute per call.
const nibBatch = 16

// q8dotNibGroups runs the IQ4_XS kernel (or, mxfp4, MXFP4's) over the
// row's whole groups and returns the lanes and the sub-blocks taken (the
// rest, a partial group, is the portable tail's).
func q8dotNibGroups(mxfp4 bool, row []byte, x *Q8Row) (l [8]float32, taken int) {
	groups := len(x.d) / 8
	var dw [8 * nibBatch]float32
	for g0 := 0; g0 < groups; g0 += nibBatch {
		ng := min(nibBatch, groups-g0)
		for g := 0; g < ng; g++ {
			blk := row[136*(g0+g) : 136*(g0+g)+136]
			if mxfp4 {
				for j := range 8 {
					dw[8*g+j] = quant.E8M0Half(blk[17*j])
				}
			} else {
				quant.IQ4XSFactors(blk, (*[8]float32)(dw[8*g:]))
			}
		}
		if mxfp4 {
			q8dotMXFP4AVX2(&row[136*g0], &x.qs[256*g0], &x.d[8*g0], &dw[0], ng, &l, &mxfp4Values[0])
		} else {
			q8dotIQ4XSAVX2(&row[136*g0], &x.qs[256*g0], &x.d[8*g0], &dw[0], ng, &l, &quant.KvaluesIQ4NL[0])
		}
	}
	return l, 8 * groups
}

func q8dotIQ4XSVector(row []byte, x *Q8Row) ([8]float32, int) { return q8dotNibGroups(false, row, x) }

func q8dotMXFP4Vector(row []byte, x *Q8Row) ([8]float32, int) { return q8dotNibGroups(true, row, x) }

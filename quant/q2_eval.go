package quant

import (
	"encoding/binary"
	"fmt"
)

// Q2Error decodes the Q2_0 blocks q and returns the squared error against
// x, sum w_c (x_i - y_i)^2, and the energy sum w_c x_i^2, in float64, where
// c = i % rowLen is the column of element i and w == nil means every w_c = 1.
// Relative MSE is err/energy.
func Q2Error(x []float32, q []byte, w []float32, rowLen int) (errSum, energy float64, err error) {
	want, e := RowBytes(Q2_0, int64(len(x)))
	if e != nil {
		return 0, 0, e
	}
	if int64(len(q)) != want {
		return 0, 0, fmt.Errorf("q2 error: %d bytes for %d weights, want %d", len(q), len(x), want)
	}
	if w != nil && (rowLen <= 0 || len(w) != rowLen || len(x)%rowLen != 0) {
		return 0, 0, fmt.Errorf("q2 error: %d weights do not fit rows of %d", len(w), rowLen)
	}
	for b := 0; b < len(x)/Q2BlockElements; b++ {
		blk := q[b*Q2BlockBytes:]
		d := FP16ToFloat32(binary.LittleEndian.Uint16(blk))
		for j := range Q2BlockElements {
			i := b*Q2BlockElements + j
			code := blk[2+j/4] >> (2 * (j % 4)) & 3
			y := float32(int(code)-1) * d
			r := float64(x[i]) - float64(y)
			wt := 1.0
			if w != nil {
				wt = float64(w[i%rowLen])
			}
			errSum += wt * r * r
			energy += wt * float64(x[i]) * float64(x[i])
		}
	}
	return errSum, energy, nil
}

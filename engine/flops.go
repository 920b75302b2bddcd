package engine

import (
	"fmt"
	"math/rand/v2"

	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// Product is a share of the weight products one token needs: MACs
// multiply-adds against matrices of Type with Cols columns.
type Product struct {
	Type quant.Type
	Cols int
	MACs int64
}

// DenseMACsPerToken lists the multiply-adds one token's pass through the
// layers spends on matrices outside the routed experts (every layer's
// attention or delta-net matrices, router and shared expert), one entry
// per matrix; the embedding lookup and the output head are not counted.
func (m *Model) DenseMACsPerToken() []Product {
	var out []Product
	for i := range m.Layers {
		L := &m.Layers[i]
		ms := L.denseMatrices()
		if sh := L.Shared; sh != nil {
			ms = append(ms, &sh.Gate, &sh.Up, &sh.Down)
		}
		for _, mm := range ms {
			if mm.Rows > 0 {
				out = append(out, Product{Type: mm.Type, Cols: mm.Cols, MACs: int64(mm.Rows) * int64(mm.Cols)})
			}
		}
	}
	return out
}

// InCacheProduct makes a random matrix of rows x cols weights of type t and
// ntok random activation rows, prepared as mode's products read them (in
// fast mode quantized, as a batch's rows are once per batch), and returns
// the product of the two as mode's batched prefill runs it (matMul), for
// timing the kernel on data that stays in cache.
func InCacheProduct(mode Mode, t quant.Type, cols, rows, ntok int, seed uint64) (func(*kernels.Pool), error) {
	ti, ok := quant.Info(t)
	if !ok || cols%ti.BlockElements != 0 {
		return nil, fmt.Errorf("in-cache product: %d columns of %s", cols, t)
	}
	data, err := kernels.SampleBlocks(t, rows*cols/ti.BlockElements, seed)
	if err != nil {
		return nil, err
	}
	mat, err := kernels.NewMatrix(t, data, cols, rows)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 4))
	x := make([]float32, ntok*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	a := newActs(x, cols, mode)
	if a.useQ8(&mat) {
		a.q8()
	}
	out := make([]float32, ntok*rows)
	return func(pool *kernels.Pool) { matMul(pool, &mat, a, out) }, nil
}

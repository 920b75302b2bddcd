package engine

import (
	"fmt"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestDecodeRotatesQueriesInPass: a decode token's query heads are normed
// and rotated inside attention's pass (one head per index, on the pool's
// threads), a batch's before it; decode token by token gives the bits of
// the batched prefill at 1, 2, 3 and 7 threads, in both modes, with plain
// attention (qwen3moe) and gated (qwen35moe's every-4th layer).
func TestDecodeRotatesQueriesInPass(t *testing.T) {
	specs := map[string]SynthSpec{
		"qwen3moe": {Layers: 2, Embd: 256, Heads: 8, HeadsKV: 2, HeadDim: 32, Experts: 4, ExpertsUsed: 2,
			ExpertFF: 64, Vocab: 300, DenseType: quant.Q8_0, ExpertType: quant.Q8_0, Seed: 3},
		"qwen35moe": {Arch: "qwen35moe", Layers: 4, Embd: 256, Experts: 8, ExpertsUsed: 2, ExpertFF: 64, Vocab: 300,
			DenseType: quant.Q8_0, ExpertType: quant.Q8_0, Seed: 4},
	}
	ids := []int32{5, 77, 200, 12, 299, 1, 150}
	for name, sp := range specs {
		dir := t.TempDir()
		if err := WriteSyntheticPack(dir, sp); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []Mode{Exact, Fast} {
			for _, threads := range []int{1, 2, 3, 7} {
				t.Run(fmt.Sprintf("%s/%s/j%d", name, mode, threads), func(t *testing.T) {
					m, err := Open(dir, Options{Mode: mode, Threads: threads})
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					prefillEqualsDecode(t, m, ids)
				})
			}
		}
	}
}

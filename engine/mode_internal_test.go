package engine

import (
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

// FastFixtures are the quantized fixtures fast mode is checked on (here and
// in mode_test.go), with the bound on its mean KL divergence from exact
// mode (nats per position, over the windows scored) and the least top-1
// agreement. The bounds sit about 3x above the divergences measured over
// all 64 windows of refs/ppl_tokens (docs/QUALITY.md), and far below each
// quantization's own divergence from BF16.
var FastFixtures = []struct {
	Model, File string
	MaxKLD      float64
	MinTop1     float64
}{
	{"tiny-qwen3moe", "model-iq3s.gguf", 0.02, 0.95},
	{"tiny-qwen3moe", "model-iq4nl.gguf", 0.02, 0.95},
	{"tiny-qwen35moe", "model-iq4nl.gguf", 0.02, 0.95},
	// BF16 (kernels.DotBF16, bfloat16 hi+lo activations): measured 1.2e-5
	// (tiny-qwen3moe, 64 windows); the bound stays far below llama.cpp's
	// own 0.0014 from the float32 reference.
	{"tiny-qwen3moe", "model-bf16.gguf", 1e-4, 0.995},
	{"tiny-qwen35moe", "model-bf16.gguf", 1e-4, 0.995},
}

// TestFastModeDeterministic: in fast mode the logits have the same bits at
// 1 and 3 threads, and batched prefill gives token-by-token decode's bits.
func TestFastModeDeterministic(t *testing.T) {
	for _, fx := range FastFixtures {
		t.Run(fx.Model+"/"+fx.File, func(t *testing.T) {
			path := testutil.Path(t, "models", fx.Model, fx.File)
			ids := readI32(t, testutil.Path(t, "models", fx.Model, "refs", "eval_tokens.i32.bin"))[:24]
			var ms [2]*Model
			for i, threads := range []int{1, 3} {
				m, err := Open(path, Options{Mode: Fast, Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				ms[i] = m
			}
			sameLogitBits(t, ms[0], ms[1], ids, "fast mode at 3 threads (reference: 1 thread)")
			prefillEqualsDecode(t, ms[1], ids)
		})
	}
}

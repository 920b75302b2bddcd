package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

// qwen3moePinnedLogits is the SHA-256 of the float32 bits (little endian)
// of the logits below, computed by the engine before the architecture seam
// (commit 574f767): the qwen3moe graph must stay bit for bit what it was.
const qwen3moePinnedLogits = "be8bbad18053d0a3cc614a53229b09ff45cd54250866a7ea6d965ed7c88741ae"

// TestQwen3moeBitsPinned hashes the logits of every position of eval
// sequence 0 (batched prefill in batches of 24), then 8 greedy decode steps
// with the KV cache.
func TestQwen3moeBitsPinned(t *testing.T) {
	m := openModel(t, "model-bf16.gguf")
	tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:64]
	s := m.NewSession()
	s.MaxBatch = 24
	all, err := s.Forward(tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	var b [4]byte
	put := func(v []float32) {
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			h.Write(b[:])
		}
	}
	put(all)
	last := all[len(all)-m.Config.Vocab:]
	for i := 0; i < 8; i++ {
		if last, err = s.Forward([]int32{Argmax(last)}, false); err != nil {
			t.Fatal(err)
		}
		put(last)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != qwen3moePinnedLogits {
		t.Fatalf("qwen3moe logits hash %s, want %s", got, qwen3moePinnedLogits)
	}
}

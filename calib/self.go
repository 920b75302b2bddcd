package calib

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/stratactl/stratactl/engine"
)

// Generate samples n windows of ctx tokens from m itself at temperature 1
// (the whole distribution, no top-p), window i from its own generator
// seeded with seed+i, each starting from the model's BOS token (or, with
// none, its end-of-text token, or id 0) and run from position 0. The same
// model and seed give the same windows.
func Generate(ctx context.Context, m *engine.Model, n, length int, seed uint64, progress func(tokens int)) ([][]int32, error) {
	if n < 0 || length < 2 {
		return nil, fmt.Errorf("self-generated calibration: %d windows of %d tokens (need >= 0 windows of >= 2)", n, length)
	}
	if length > m.Config.Context {
		return nil, fmt.Errorf("self-generated calibration: windows of %d tokens exceed the context length %d", length, m.Config.Context)
	}
	start := int32(0)
	if tok, err := m.Tokenizer(); err == nil {
		if tok.BOS() >= 0 {
			start = tok.BOS()
		} else if tok.EOS() >= 0 {
			start = tok.EOS()
		}
	}
	out := make([][]int32, 0, n)
	s := m.NewSession()
	for i := 0; i < n; i++ {
		s.Reset()
		res, err := s.Generate(ctx, []int32{start}, engine.GenerateOptions{MaxTokens: length - 1, Sampler: engine.NewSampler(1, 1, seed+uint64(i))})
		if err != nil {
			return nil, fmt.Errorf("self-generated calibration window %d: %w", i, err)
		}
		w := append([]int32{start}, res.GeneratedIDs...)
		if len(w) != length {
			return nil, fmt.Errorf("self-generated calibration window %d: %d tokens, want %d", i, len(w), length)
		}
		out = append(out, w)
		if progress != nil {
			progress(len(w))
		}
	}
	return out, nil
}

// IDsSHA256 is the sha256 of windows as little-endian int32 ids, in order.
func IDsSHA256(windows [][]int32) string {
	h := sha256.New()
	var b [4]byte
	for _, w := range windows {
		for _, id := range w {
			binary.LittleEndian.PutUint32(b[:], uint32(id))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

package convert

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// countdownCtx is a context that reports itself cancelled after its Err has
// answered nil n times: a cancellation that arrives in the middle of work.
type countdownCtx struct {
	context.Context
	left atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestQuantizeChunksCancel (issue 11 item 10): a slow Q2_0 search (many
// candidates) notices cancellation between chunks of one span instead of
// finishing the span: after the first chunk nothing more is encoded.
func TestQuantizeChunksCancel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 32*4096)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	opt := &quant.QuantizeOptions{Q2Mode: quant.Q2Search, Q2Candidates: 4096}
	size, _ := quant.RowBytes(quant.Q2_0, int64(len(x)))
	dst := make([]byte, size)
	ctx := &countdownCtx{Context: context.Background()}
	ctx.left.Store(1)
	err := quantizeChunks(ctx, quant.Q2_0, x, dst, opt)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled after one chunk: %v, want context.Canceled", err)
	}
	if bytes.Count(dst, []byte{0}) < len(dst)/2 {
		t.Errorf("the span was encoded on after cancellation (%d of %d bytes written)", len(dst)-bytes.Count(dst, []byte{0}), len(dst))
	}
}

// TestQuantizeChunksSameBytes: chunking does not change the encoding, with
// and without importance weights, for Q2_0's search and for Q8_0.
func TestQuantizeChunksSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rowLen = 256
	x := make([]float32, rowLen*600) // more than one chunk at every setting
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	imp := make([]float32, rowLen)
	for i := range imp {
		imp[i] = rng.Float32() + 0.01
	}
	for _, c := range []struct {
		t   quant.Type
		opt *quant.QuantizeOptions
	}{
		{quant.Q2_0, &quant.QuantizeOptions{Q2Mode: quant.Q2Search, Q2Candidates: 64}},
		{quant.Q2_0, &quant.QuantizeOptions{Q2Mode: quant.Q2Search, Q2Candidates: 64, Importance: imp, RowLen: rowLen}},
		{quant.Q2_0, nil},
		{quant.Q8_0, nil},
	} {
		size, _ := quant.RowBytes(c.t, int64(len(x)))
		whole, chunked := make([]byte, size), make([]byte, size)
		if err := quantize(c.t, x, whole, c.opt); err != nil {
			t.Fatal(err)
		}
		if err := quantizeChunks(context.Background(), c.t, x, chunked, c.opt); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(whole, chunked) {
			t.Errorf("%s %+v: chunked encoding differs from the whole span's", c.t, c.opt)
		}
	}
}

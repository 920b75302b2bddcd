package evalq

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/osutil"
)

// ReadIDs reads a file of little-endian int32 token ids.
func ReadIDs(path string) ([]int32, error) {
	b, err := osutil.ReadFile(context.Background(), path, osutil.MaxTextBytes)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of int32 token ids (byte %d starts a partial id)", path, len(b), len(b)/4*4)
	}
	ids := make([]int32, len(b)/4)
	for i := range ids {
		ids[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return ids, nil
}

// Windows cuts ids into consecutive windows of ctx tokens, at most max of them
// (max <= 0: all). A tail shorter than ctx is dropped, as llama-perplexity
// drops it. Each window is evaluated on its own from position 0.
func Windows(ids []int32, ctx, max int) ([][]int32, error) {
	if ctx < 2 {
		return nil, fmt.Errorf("context of %d tokens: need at least 2 (one to predict from, one to predict)", ctx)
	}
	n := len(ids) / ctx
	if max > 0 && max < n {
		n = max
	}
	if n == 0 {
		return nil, fmt.Errorf("%d tokens do not fill one window of %d", len(ids), ctx)
	}
	w := make([][]int32, n)
	for i := range w {
		w[i] = ids[i*ctx : (i+1)*ctx : (i+1)*ctx]
	}
	return w, nil
}

// CheckVocab fails on the first id outside [0, vocab), naming where it is.
func CheckVocab(name string, ids []int32, vocab int) error {
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("%s: token id %d at index %d (byte %d) is outside the vocabulary of %d", name, id, i, 4*i, vocab)
		}
	}
	return nil
}

// ReadModelIDs reads a file of token ids for model m: at least one id, each
// inside m's vocabulary (a prompt, or calibration or evaluation tokens).
func ReadModelIDs(path string, m *engine.Model) ([]int32, error) {
	ids, err := ReadIDs(path)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: no token ids (the file is empty)", path)
	}
	if err := CheckVocab(path, ids, m.Config.Vocab); err != nil {
		return nil, err
	}
	return ids, nil
}

// Tokens is the token input of profile and eval: the ids of a text file
// (Text, tokenized with the model's tokenizer) or of a file of token ids
// (IDs); exactly one is set.
type Tokens struct{ Text, IDs string }

// Source is the file the tokens come from.
func (t Tokens) Source() string {
	if t.IDs != "" {
		return t.IDs
	}
	return t.Text
}

// Windows reads the tokens for model m and cuts them into at most max
// windows of ctx tokens (max <= 0: all). Text is tokenized raw: no BOS,
// special-token names taken literally, the same ids a file of ids of the
// tokenized text would hold.
func (t Tokens) Windows(m *engine.Model, ctx, max int) ([][]int32, error) {
	if (t.Text == "") == (t.IDs == "") {
		return nil, fmt.Errorf("want exactly one of a text file and a token-id file")
	}
	if ctx > m.Config.Context {
		return nil, fmt.Errorf("windows of %d tokens exceed the model's context length %d", ctx, m.Config.Context)
	}
	var toks []int32
	if t.IDs != "" {
		var err error
		if toks, err = ReadModelIDs(t.IDs, m); err != nil {
			return nil, err
		}
	} else {
		b, err := osutil.ReadFile(context.Background(), t.Text, osutil.MaxTextBytes)
		if err != nil {
			return nil, err
		}
		tok, err := m.Tokenizer()
		if err != nil {
			return nil, err
		}
		toks = tok.Encode(string(b), false, false)
	}
	w, err := Windows(toks, ctx, max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Source(), err)
	}
	return w, nil
}

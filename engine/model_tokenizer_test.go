package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
)

// A tokenizer with a token beyond token_embd's rows is refused at load, with
// the file named, instead of failing later on a prompt that uses the token.
func TestTokenizerLargerThanEmbeddingRefused(t *testing.T) {
	src, err := gguf.Open(testutil.TinyModel(t, "model-iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	kv := append([]gguf.KV(nil), src.KV...)
	for i := range kv {
		switch kv[i].Key {
		case "tokenizer.ggml.tokens":
			toks := kv[i].Value.Any().([]string)
			kv[i].Value = gguf.MustArray(append(append([]string(nil), toks...), "<|extra|>"))
		case "tokenizer.ggml.token_type":
			types := kv[i].Value.Any().([]int32)
			kv[i].Value = gguf.MustArray(append(append([]int32(nil), types...), 4))
		}
	}
	out := filepath.Join(t.TempDir(), "bigvocab.gguf")
	w, err := gguf.Create(out, kv, src.Specs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		if err := w.CopyTensor(src.Tensors[i].Name, src.SectionReader(&src.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	m, err := Open(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Tokenizer()
	if err == nil || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), "4097") {
		t.Fatalf("want a refusal naming %s and the 4097 tokens, got %v", out, err)
	}
	// The unchanged model loads its tokenizer.
	m0, err := Open(testutil.TinyModel(t, "model-iq3s.gguf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m0.Close()
	if _, err := m0.Tokenizer(); err != nil {
		t.Fatal(err)
	}
}

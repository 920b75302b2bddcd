package engine

import "fmt"

// Tokenizer loads the model's tokenizer and checks that every token it can
// produce has a row in token_embd, so that a prompt can never name a token
// the model cannot embed.
func (m *Model) Tokenizer() (*Tokenizer, error) {
	tok, err := NewTokenizer(m.File)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() > m.Config.Vocab {
		return nil, fmt.Errorf("%s: the tokenizer has %d tokens but token_embd.weight has rows for %d", m.File.Path, tok.VocabSize(), m.Config.Vocab)
	}
	return tok, nil
}

package engine

import "unicode/utf8"

// TextStream turns generated ids into text as they come. A byte-level token
// may end inside a UTF-8 character (one emoji is often two or three
// tokens), so bytes that could still become a valid character wait for the
// next token instead of being printed as broken text. Everything else,
// invalid bytes included, passes through unchanged: the concatenation of all
// Push results and Flush is exactly Decode of the ids.
type TextStream struct {
	t       *Tokenizer
	pending []byte
}

// NewTextStream starts a stream over t's vocabulary.
func (t *Tokenizer) NewTextStream() *TextStream { return &TextStream{t: t} }

// Push adds one token and returns the text that is now complete.
func (s *TextStream) Push(id int32) string {
	s.pending = s.t.AppendTokenBytes(s.pending, id)
	cut := len(s.pending) - incompleteTail(s.pending)
	out := string(s.pending[:cut])
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return out
}

// Flush returns whatever is held back (an unfinished character at the end
// of generation) and empties the stream.
func (s *TextStream) Flush() string {
	out := string(s.pending)
	s.pending = s.pending[:0]
	return out
}

// incompleteTail is the length of a UTF-8 sequence at the end of b that has
// a valid start but misses continuation bytes; 0 if b ends complete or
// with bytes that can never become valid.
func incompleteTail(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

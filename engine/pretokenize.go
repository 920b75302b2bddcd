package engine

import (
	"unicode"
	"unicode/utf8"
)

// Pre-tokenization splits text into words before BPE runs on each word on
// its own, so merges never cross a word boundary. The models' tokenizers
// define the split by a regular expression with a negative lookahead
// (`\s+(?!\S)`), which Go's regexp cannot express; the scanners below
// implement each expression's leftmost-first alternation by hand, over the
// same Unicode classes the Oniguruma engine of HF tokenizers uses:
// \p{L} (unicode.IsLetter), \p{N} (unicode.IsNumber) and \s (the Unicode
// White_Space property, which is unicode.IsSpace).
//
// gpt-2:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// qwen2 (digits = 1) and llama3 (digits = 3):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// qwen35 (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35, the Qwen3.5 tokenizer):
// qwen2 with combining marks (\p{M}, unicode.Mark) joining the letter runs
// and kept out of the "other" runs:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
//	 ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// llama.cpp spells the contractions of qwen2 and qwen35 with ASCII classes
// ('[sS]...) where tokenizer.json has (?i:...); the two differ only on
// U+017F LONG S after an apostrophe, where this follows tokenizer.json.
//
// A byte that is not part of valid UTF-8 counts as one character of the
// "other" class ([^\s\p{L}\p{N}]), so any byte string splits into words
// that concatenate back to it.

// preStyle selects one of the pre-tokenizer expressions above.
type preStyle uint8

const (
	preGPT2 preStyle = iota
	preQwen2
	preLlama3
	preQwen35
)

// charClass partitions characters the way every expression above does.
type charClass uint8

const (
	classOther charClass = iota // [^\s\p{L}\p{N}], and invalid UTF-8 bytes
	classLetter
	classNumber
	classSpace
	classMark // \p{M}; only qwen35 tells marks apart (preCharAtMarks)
)

var preASCIIClass = func() (t [utf8.RuneSelf]charClass) {
	for c := 0; c < utf8.RuneSelf; c++ {
		r := rune(c)
		switch {
		case unicode.IsLetter(r):
			t[c] = classLetter
		case unicode.IsNumber(r):
			t[c] = classNumber
		case unicode.IsSpace(r):
			t[c] = classSpace
		}
	}
	return t
}()

// preCharAt decodes the character at s[i]: its rune (utf8.RuneError for an
// invalid byte), its width in bytes and its class.
func preCharAt(s string, i int) (rune, int, charClass) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1, preASCIIClass[c]
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return r, 1, classOther
	}
	switch {
	case unicode.IsLetter(r):
		return r, w, classLetter
	case unicode.IsNumber(r):
		return r, w, classNumber
	case unicode.IsSpace(r):
		return r, w, classSpace
	}
	return r, w, classOther
}

// preCharAtMarks is preCharAt under qwen35's classes, where combining marks
// are a class of their own instead of "other". ASCII holds no marks.
func preCharAtMarks(s string, i int) (rune, int, charClass) {
	r, w, cls := preCharAt(s, i)
	if cls == classOther && r >= utf8.RuneSelf && unicode.Is(unicode.Mark, r) {
		cls = classMark
	}
	return r, w, cls
}

// preClassAt is preCharAt without the rune; at the end of s it reports ok false.
func preClassAt(s string, i int) (cls charClass, ok bool) {
	if i >= len(s) {
		return 0, false
	}
	_, _, cls = preCharAt(s, i)
	return cls, true
}

// preRunOf returns the end of the run of characters of class cls starting at i.
func preRunOf(s string, i int, cls charClass) int {
	for i < len(s) {
		_, w, c := preCharAt(s, i)
		if c != cls {
			break
		}
		i += w
	}
	return i
}

func preIsCRLF(r rune) bool { return r == '\r' || r == '\n' }

// preCRLFRun returns the end of the run of \r and \n starting at i.
func preCRLFRun(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// preSpaceTail matches the whitespace alternatives at i, where a whitespace
// character starts: `\s*[\r\n]+` (when withCRLF), then `\s+(?!\S)`, then
// `\s+`.
func preSpaceTail(s string, i int, withCRLF bool) int {
	// Scan the whole whitespace run, noting where its last character and its
	// last \r or \n start.
	end, lastStart, lastCRLFEnd := i, i, -1
	for end < len(s) {
		r, w, c := preCharAt(s, end)
		if c != classSpace {
			break
		}
		lastStart = end
		end += w
		if preIsCRLF(r) {
			lastCRLFEnd = end
		}
	}
	if withCRLF && lastCRLFEnd > 0 {
		// \s* backtracks from the full run to the last line break, which
		// [\r\n]+ then takes.
		return lastCRLFEnd
	}
	if end == len(s) || lastStart == i {
		// At the end of the text the lookahead holds for the whole run; a
		// single space before a non-space falls through to \s+.
		return end
	}
	// The lookahead fails right before the non-space; backtracking one
	// character leaves whitespace after the match.
	return lastStart
}

// preContractionEnd matches 's|'t|'re|'ve|'m|'ll|'d at i (where s[i] is an apostrophe) and
// returns the end of the match, or -1. foldCase applies the Unicode simple
// case folding of the (?i:...) group.
func preContractionEnd(s string, i int, foldCase bool) int {
	j := i + 1
	if j >= len(s) {
		return -1
	}
	r1, w1 := utf8.DecodeRuneInString(s[j:])
	eq := func(r, want rune) bool {
		if r == want {
			return true
		}
		return foldCase && preFoldsTo(r, want)
	}
	for _, one := range []rune{'s', 't'} {
		if eq(r1, one) {
			return j + w1
		}
	}
	k := j + w1
	var r2 rune = -1
	w2 := 0
	if k < len(s) {
		r2, w2 = utf8.DecodeRuneInString(s[k:])
	}
	two := func(a, b rune) bool { return eq(r1, a) && r2 >= 0 && eq(r2, b) }
	switch {
	case two('r', 'e'), two('v', 'e'):
		return k + w2
	case eq(r1, 'm'):
		return j + w1
	case two('l', 'l'):
		return k + w2
	case eq(r1, 'd'):
		return j + w1
	}
	return -1
}

// preFoldsTo reports whether r is in the simple case-folding orbit of want
// (for 's' that is 'S' and U+017F LATIN SMALL LETTER LONG S).
func preFoldsTo(r, want rune) bool {
	if r == utf8.RuneError {
		return false
	}
	for f := unicode.SimpleFold(want); f != want; f = unicode.SimpleFold(f) {
		if f == r {
			return true
		}
	}
	return false
}

// nextWord returns the end of the pre-token that starts at s[i] (i < len(s)).
// Every call consumes at least one byte.
func (p preStyle) nextWord(s string, i int) int {
	switch p {
	case preGPT2:
		return nextWordGPT2(s, i)
	case preQwen35:
		return nextWordQwen35(s, i)
	}
	digits := 1
	if p == preLlama3 {
		digits = 3
	}
	return nextWordQwen2(s, i, digits)
}

func nextWordGPT2(s string, i int) int {
	r, w, cls := preCharAt(s, i)
	if r == '\'' {
		if e := preContractionEnd(s, i, false); e > 0 {
			return e
		}
	}
	if r == ' ' {
		// " ?X+" for X in letters, numbers, other: the optional space
		// belongs to the run that follows it.
		if next, ok := preClassAt(s, i+1); ok && next != classSpace {
			return preRunOf(s, i+1, next)
		}
	}
	if cls != classSpace {
		return preRunOf(s, i+w, cls)
	}
	return preSpaceTail(s, i, false)
}

func nextWordQwen2(s string, i, digits int) int {
	r, w, cls := preCharAt(s, i)
	if r == '\'' {
		if e := preContractionEnd(s, i, true); e > 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if cls == classLetter {
		return preRunOf(s, i+w, classLetter)
	}
	if cls != classNumber && !preIsCRLF(r) {
		if next, ok := preClassAt(s, i+w); ok && next == classLetter {
			return preRunOf(s, i+w, classLetter)
		}
	}
	// \p{N}{1,digits}
	if cls == classNumber {
		end := i + w
		for n := 1; n < digits && end < len(s); n++ {
			_, w2, c2 := preCharAt(s, end)
			if c2 != classNumber {
				break
			}
			end += w2
		}
		return end
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	if cls == classOther {
		return preCRLFRun(s, preRunOf(s, i+w, classOther))
	}
	if r == ' ' {
		if next, ok := preClassAt(s, i+1); ok && next == classOther {
			return preCRLFRun(s, preRunOf(s, i+1, classOther))
		}
	}
	return preSpaceTail(s, i, true)
}

// preWordRunMarks returns the end of the run of letters and marks
// ([\p{L}\p{M}]*) starting at i.
func preWordRunMarks(s string, i int) int {
	for i < len(s) {
		_, w, c := preCharAtMarks(s, i)
		if c != classLetter && c != classMark {
			break
		}
		i += w
	}
	return i
}

// preOtherRunMarks returns the end of the run of [^\s\p{L}\p{M}\p{N}]
// starting at i.
func preOtherRunMarks(s string, i int) int {
	for i < len(s) {
		_, w, c := preCharAtMarks(s, i)
		if c != classOther {
			break
		}
		i += w
	}
	return i
}

func nextWordQwen35(s string, i int) int {
	r, w, cls := preCharAtMarks(s, i)
	if r == '\'' {
		if e := preContractionEnd(s, i, true); e > 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+: a mark may be the optional
	// leading character too, which gives the same match as taking it as the
	// first of the run.
	if cls == classLetter || cls == classMark {
		return preWordRunMarks(s, i+w)
	}
	if cls != classNumber && !preIsCRLF(r) && i+w < len(s) {
		if _, _, next := preCharAtMarks(s, i+w); next == classLetter || next == classMark {
			return preWordRunMarks(s, i+w)
		}
	}
	// \p{N}
	if cls == classNumber {
		return i + w
	}
	// ` ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*`
	if cls == classOther {
		return preCRLFRun(s, preOtherRunMarks(s, i+w))
	}
	if r == ' ' && i+1 < len(s) {
		if _, _, next := preCharAtMarks(s, i+1); next == classOther {
			return preCRLFRun(s, preOtherRunMarks(s, i+1))
		}
	}
	return preSpaceTail(s, i, true)
}

// splitWords returns the pre-tokens of s in order; they concatenate to s.
func (p preStyle) splitWords(s string) []string {
	var words []string
	for i := 0; i < len(s); {
		e := p.nextWord(s, i)
		words = append(words, s[i:e])
		i = e
	}
	return words
}

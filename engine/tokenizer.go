package engine

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/stratactl/stratactl/gguf"
)

// TokenType is a token's kind as GGUF's tokenizer.ggml.token_type stores it
// (llama.cpp's llama_token_type).
type TokenType int32

const (
	TokenUndefined   TokenType = 0
	TokenNormal      TokenType = 1
	TokenUnknown     TokenType = 2
	TokenControl     TokenType = 3
	TokenUserDefined TokenType = 4
	TokenUnused      TokenType = 5
	TokenByte        TokenType = 6
)

// GGUF keys the tokenizer reads.
const (
	tokKeyModel  = "tokenizer.ggml.model"
	tokKeyPre    = "tokenizer.ggml.pre"
	tokKeyTokens = "tokenizer.ggml.tokens"
	tokKeyTypes  = "tokenizer.ggml.token_type"
	tokKeyMerges = "tokenizer.ggml.merges"
	tokKeyBOS    = "tokenizer.ggml.bos_token_id"
	tokKeyEOS    = "tokenizer.ggml.eos_token_id"
	tokKeyEOT    = "tokenizer.ggml.eot_token_id"
	tokKeyEOM    = "tokenizer.ggml.eom_token_id"
	tokKeyAddBOS = "tokenizer.ggml.add_bos_token"
	tokKeyAddEOS = "tokenizer.ggml.add_eos_token"
)

// preTokenizers maps tokenizer.ggml.pre values to the expression they stand
// for (the names llama.cpp's llama-vocab.cpp gives the same expression).
// Unknown names are refused rather than guessed: a wrong pre-tokenizer
// still produces valid ids, just different ones from the model's training,
// and that only shows up as worse output.
var preTokenizers = map[string]preStyle{
	"gpt-2": preGPT2, "phi-2": preGPT2, "mpt": preGPT2, "olmo": preGPT2, "jais": preGPT2,
	"qwen2": preQwen2, "deepseek-r1-qwen": preQwen2,
	"llama3": preLlama3, "llama-v3": preLlama3, "llama-bpe": preLlama3,
	"qwen35": preQwen35,
}

// SupportedPreTokenizers lists the accepted tokenizer.ggml.pre values.
func SupportedPreTokenizers() []string {
	names := make([]string, 0, len(preTokenizers))
	for n := range preTokenizers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// eogTexts are control-token texts that end generation besides the EOS id,
// as llama.cpp detects them (chat models end a turn with these).
var eogTexts = map[string]bool{
	"<|eot_id|>": true, "<|im_end|>": true, "<|end|>": true, "<end_of_turn>": true,
	"<|endoftext|>": true, "<|eom_id|>": true, "<EOT>": true, "_<EOT>": true,
	"<|end_of_text|>": true, "<end_of_utterance>": true,
}

// Vocab is everything a Tokenizer is built from; NewTokenizer fills it from
// GGUF metadata, tests and tools may fill it directly.
type Vocab struct {
	Name   string   // for error messages (the GGUF file name)
	Pre    string   // tokenizer.ggml.pre
	Tokens []string // tokenizer.ggml.tokens; normal tokens in GPT-2 byte-to-unicode form
	Types  []int32  // tokenizer.ggml.token_type; nil means all normal
	Merges []string // tokenizer.ggml.merges, "left right", in rank order
	BOS    int32    // -1: none
	EOS    int32    // -1: none
	EOT    int32    // -1: none; an extra end-of-generation id
	EOM    int32    // -1: none; an extra end-of-generation id
	AddBOS bool
	AddEOS bool
}

// Tokenizer is a byte-level BPE tokenizer (tokenizer.ggml.model "gpt2").
// It is immutable after construction and safe for concurrent use.
type Tokenizer struct {
	pre   preStyle
	types []TokenType
	// Decoded bytes of every token: piece(id) = pieces[pieceOff[id]:pieceOff[id+1]].
	pieces   []byte
	pieceOff []uint32
	// byteToken[b] is the token of the single byte b.
	byteToken [256]int32
	// merges maps a pair of adjacent token ids (left<<32 | right) to the
	// merge's rank<<32 | merged id.
	merges map[uint64]uint64
	// textToID is only kept for ignoreMerges (llama3), which looks a whole
	// word up in the vocabulary before merging.
	textToID     map[string]int32
	ignoreMerges bool
	// Tokens matched whole in the text before pre-tokenization, by first
	// byte, longest first. Control tokens only match with parseSpecial.
	special [256][]specialToken
	// anyUserDefined says whether matching is needed without parseSpecial.
	anyUserDefined bool
	bos, eos       int32
	addBOS, addEOS bool
	eog            []bool
}

type specialToken struct {
	text    string
	id      int32
	control bool // control or unknown: only matched when parsing specials
}

// NewTokenizer builds the tokenizer described by a GGUF file's metadata.
func NewTokenizer(f *gguf.File) (*Tokenizer, error) {
	return NewTokenizerFromMetadata(&f.Metadata)
}

// NewTokenizerFromMetadata builds the tokenizer from tokenizer.ggml.* keys.
// A model whose tokenizer is not byte-level BPE, or whose pre-tokenizer is
// not one this package implements, is refused with an error naming the key
// and its value.
func NewTokenizerFromMetadata(md *gguf.Metadata) (*Tokenizer, error) {
	model, err := md.String(tokKeyModel)
	if err != nil {
		return nil, err
	}
	if model != "gpt2" {
		return nil, fmt.Errorf("%s: %s = %q is not supported: only byte-level BPE (\"gpt2\") is implemented", md.File, tokKeyModel, model)
	}
	v := Vocab{Name: md.File, BOS: -1, EOS: -1, EOT: -1, EOM: -1}
	if v.Pre, err = md.String(tokKeyPre); err != nil {
		return nil, err
	}
	if v.Tokens, err = md.Strings(tokKeyTokens); err != nil {
		return nil, err
	}
	if md.Has(tokKeyTypes) {
		if v.Types, err = md.Int32s(tokKeyTypes); err != nil {
			return nil, err
		}
	}
	if v.Merges, err = md.Strings(tokKeyMerges); err != nil {
		return nil, err
	}
	for _, id := range []struct {
		key string
		dst *int32
	}{{tokKeyBOS, &v.BOS}, {tokKeyEOS, &v.EOS}, {tokKeyEOT, &v.EOT}, {tokKeyEOM, &v.EOM}} {
		if !md.Has(id.key) {
			continue
		}
		u, err := md.Uint32(id.key)
		if err != nil {
			return nil, err
		}
		if uint64(u) >= uint64(len(v.Tokens)) {
			return nil, fmt.Errorf("%s: %s = %d is outside the vocabulary of %d tokens", md.File, id.key, u, len(v.Tokens))
		}
		*id.dst = int32(u)
	}
	// llama.cpp's defaults when the keys are absent: llama3-style
	// vocabularies add BOS, the others add nothing.
	v.AddBOS = preTokenizers[v.Pre] == preLlama3
	for _, b := range []struct {
		key string
		dst *bool
	}{{tokKeyAddBOS, &v.AddBOS}, {tokKeyAddEOS, &v.AddEOS}} {
		if !md.Has(b.key) {
			continue
		}
		if *b.dst, err = md.Bool(b.key); err != nil {
			return nil, err
		}
	}
	return NewTokenizerFromVocab(v)
}

// NewTokenizerFromVocab builds a tokenizer from explicit arrays.
func NewTokenizerFromVocab(v Vocab) (*Tokenizer, error) {
	name := v.Name
	if name == "" {
		name = "vocabulary"
	}
	pre, ok := preTokenizers[v.Pre]
	if !ok {
		return nil, fmt.Errorf("%s: %s = %q is not a supported pre-tokenizer (supported: %s)",
			name, tokKeyPre, v.Pre, strings.Join(SupportedPreTokenizers(), ", "))
	}
	n := len(v.Tokens)
	if n == 0 || n > 1<<30 {
		return nil, fmt.Errorf("%s: %s holds %d tokens", name, tokKeyTokens, n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("%s: %s has %d entries for %d tokens", name, tokKeyTypes, len(v.Types), n)
	}
	for _, id := range []struct {
		key string
		v   int32
	}{{tokKeyBOS, v.BOS}, {tokKeyEOS, v.EOS}, {tokKeyEOT, v.EOT}, {tokKeyEOM, v.EOM}} {
		if id.v < -1 || id.v >= int32(n) {
			return nil, fmt.Errorf("%s: %s = %d is outside the vocabulary of %d tokens", name, id.key, id.v, n)
		}
	}
	t := &Tokenizer{
		pre:          pre,
		ignoreMerges: pre == preLlama3,
		types:        make([]TokenType, n),
		pieceOff:     make([]uint32, n+1),
		bos:          v.BOS,
		eos:          v.EOS,
		addBOS:       v.AddBOS && v.BOS >= 0,
		addEOS:       v.AddEOS && v.EOS >= 0,
		eog:          make([]bool, n),
	}
	textToID := make(map[string]int32, n)
	for i, text := range v.Tokens {
		if prev, dup := textToID[text]; dup {
			return nil, fmt.Errorf("%s: %s[%d] = %q repeats token %d", name, tokKeyTokens, i, text, prev)
		}
		textToID[text] = int32(i)
		typ := TokenNormal
		if v.Types != nil {
			typ = TokenType(v.Types[i])
			if typ < TokenUndefined || typ > TokenByte {
				return nil, fmt.Errorf("%s: %s[%d] = %d is not a token type (0..6)", name, tokKeyTypes, i, typ)
			}
		}
		t.types[i] = typ
		t.pieces = appendPiece(t.pieces, text, typ)
		if len(t.pieces) > 1<<32-1 {
			return nil, fmt.Errorf("%s: %s too large", name, tokKeyTokens)
		}
		t.pieceOff[i+1] = uint32(len(t.pieces))
		if text != "" && (typ == TokenControl || typ == TokenUnknown || typ == TokenUserDefined) {
			sp := specialToken{text: text, id: int32(i), control: typ != TokenUserDefined}
			t.special[text[0]] = append(t.special[text[0]], sp)
			if !sp.control {
				t.anyUserDefined = true
			}
		}
		if eogTexts[text] {
			// llama.cpp treats these as end of generation whatever their
			// stored type.
			t.eog[i] = true
		}
	}
	for b := range t.special {
		// Longest first, so the first match at a position is the longest.
		sort.SliceStable(t.special[b], func(i, j int) bool { return len(t.special[b][i].text) > len(t.special[b][j].text) })
	}
	for _, id := range []int32{v.EOS, v.EOT, v.EOM} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for b := 0; b < 256; b++ {
		id, ok := textToID[string(byteRune[b])]
		if !ok {
			return nil, fmt.Errorf("%s: %s lacks the token of byte 0x%02x (%q), which byte-level BPE needs to encode every text",
				name, tokKeyTokens, b, string(byteRune[b]))
		}
		t.byteToken[b] = id
	}
	t.merges = make(map[uint64]uint64, len(v.Merges))
	for rank, m := range v.Merges {
		sp := -1
		if len(m) > 1 {
			// The left part is never empty, so a space at 0 is part of it.
			if k := strings.IndexByte(m[1:], ' '); k >= 0 {
				sp = k + 1
			}
		}
		if sp < 0 {
			return nil, fmt.Errorf("%s: %s[%d] = %q is not \"left right\"", name, tokKeyMerges, rank, m)
		}
		left, right := m[:sp], m[sp+1:]
		l, okL := textToID[left]
		r, okR := textToID[right]
		res, okRes := textToID[left+right]
		if !okL || !okR || !okRes {
			return nil, fmt.Errorf("%s: %s[%d] = %q names a token missing from %s", name, tokKeyMerges, rank, m, tokKeyTokens)
		}
		key := uint64(uint32(l))<<32 | uint64(uint32(r))
		if _, dup := t.merges[key]; dup {
			continue // the first (lowest) rank wins, as in llama.cpp
		}
		t.merges[key] = uint64(rank)<<32 | uint64(uint32(res))
	}
	if t.ignoreMerges {
		t.textToID = textToID
	}
	return t, nil
}

// appendPiece appends the bytes a token stands for. Normal and byte tokens
// are stored in GPT-2's byte-to-unicode form and map back to raw bytes;
// control and user-defined tokens are stored as their raw text. A normal
// token holding characters outside that mapping cannot come from byte-level
// BPE; it is kept as raw text rather than refused.
func appendPiece(dst []byte, text string, typ TokenType) []byte {
	if typ != TokenNormal && typ != TokenByte && typ != TokenUndefined {
		return append(dst, text...)
	}
	start := len(dst)
	for _, r := range text {
		b, ok := runeByte(r)
		if !ok {
			return append(dst[:start], text...)
		}
		dst = append(dst, b)
	}
	return dst
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.types) }

// BOS is the beginning-of-sequence id, or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int32 { return t.eos }

// AddsBOS says whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddsBOS() bool { return t.addBOS }

// IsEOG reports whether id ends generation: EOS, EOT, EOM, or a token whose
// text marks the end of a turn (<|im_end|>, <|endoftext|>, ...).
func (t *Tokenizer) IsEOG(id int32) bool {
	return id >= 0 && int(id) < len(t.eog) && t.eog[id]
}

// Type is a token's type (TokenUndefined for an id outside the vocabulary).
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TokenUndefined
	}
	return t.types[id]
}

// IsControl reports whether id is a control token (one a chat front end
// usually hides).
func (t *Tokenizer) IsControl(id int32) bool { return t.Type(id) == TokenControl }

func (t *Tokenizer) piece(id int32) []byte {
	if id < 0 || int(id) >= len(t.types) {
		return nil
	}
	return t.pieces[t.pieceOff[id]:t.pieceOff[id+1]:t.pieceOff[id+1]]
}

// TokenBytes returns a copy of the raw bytes of a token (control tokens give
// their text; an id outside the vocabulary gives nothing). A token may hold
// part of a UTF-8 character: a streaming printer has to join the bytes of
// consecutive tokens before it can cut the text at character boundaries.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	return append([]byte(nil), t.piece(id)...)
}

// AppendTokenBytes appends a token's raw bytes to dst.
func (t *Tokenizer) AppendTokenBytes(dst []byte, id int32) []byte {
	return append(dst, t.piece(id)...)
}

// Decode concatenates the raw bytes of ids. Decode(Encode(s, false, ...))
// is s byte for byte, for any s (also invalid UTF-8). Control tokens give
// their text; ids outside the vocabulary give nothing.
func (t *Tokenizer) Decode(ids []int32) string {
	n := 0
	for _, id := range ids {
		n += len(t.piece(id))
	}
	buf := make([]byte, 0, n)
	for _, id := range ids {
		buf = append(buf, t.piece(id)...)
	}
	return string(buf)
}

// Encode turns text into token ids. addSpecial adds BOS/EOS as the model's
// metadata asks (add_bos_token / add_eos_token). User-defined tokens are
// always matched whole in the text; control tokens (<|im_start|>, ...) only
// when parseSpecial is set, otherwise their text is encoded as plain bytes.
// Where special tokens overlap, the leftmost and then the longest match
// wins (as HF tokenizers' added-vocabulary split does).
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	e := bpeEncoder{t: t}
	if parseSpecial || t.anyUserDefined {
		start := 0
		for i := 0; i < len(text); {
			sp, ok := t.matchSpecial(text[i:], parseSpecial)
			if !ok {
				i++
				continue
			}
			out = e.encodeText(out, text[start:i])
			out = append(out, sp.id)
			i += len(sp.text)
			start = i
		}
		out = e.encodeText(out, text[start:])
	} else {
		out = e.encodeText(out, text)
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out
}

func (t *Tokenizer) matchSpecial(s string, parseSpecial bool) (specialToken, bool) {
	for _, sp := range t.special[s[0]] {
		if (parseSpecial || !sp.control) && strings.HasPrefix(s, sp.text) {
			return sp, true
		}
	}
	return specialToken{}, false
}

// GPT-2's byte-to-unicode table: printable Latin-1 bytes stand for
// themselves, the others (controls, space, DEL, NBSP, soft hyphen) are
// shifted to U+0100 and up in byte order, so that every byte is a visible
// character in the vocabulary files.
var byteRune, runeToByte = func() (br [256]rune, rb map[rune]byte) {
	rb = make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			br[b] = rune(b)
		} else {
			br[b] = next
			next++
		}
		rb[br[b]] = byte(b)
	}
	return br, rb
}()

func runeByte(r rune) (byte, bool) {
	if r == utf8.RuneError {
		return 0, false
	}
	b, ok := runeToByte[r]
	return b, ok
}

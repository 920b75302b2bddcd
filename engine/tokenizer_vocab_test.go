package engine

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
)

// tinyVocab reads the tiny model's tokenizer arrays, for building variants.
func tinyVocab(t testing.TB) Vocab {
	t.Helper()
	f, err := gguf.Open(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := Vocab{Name: "model-bf16.gguf", BOS: -1, EOS: 0, EOT: -1, EOM: -1}
	if v.Pre, err = f.String(tokKeyPre); err != nil {
		t.Fatal(err)
	}
	if v.Tokens, err = f.Strings(tokKeyTokens); err != nil {
		t.Fatal(err)
	}
	if v.Types, err = f.Int32s(tokKeyTypes); err != nil {
		t.Fatal(err)
	}
	if v.Merges, err = f.Strings(tokKeyMerges); err != nil {
		t.Fatal(err)
	}
	return v
}

// tokenizer.json (HF tokenizers) is an independent copy of the vocabulary:
// the GGUF arrays must agree with it, and its special tokens must be
// control tokens that Encode matches whole.
func TestTokenizerAgreesWithHFTokenizerJSON(t *testing.T) {
	b, err := os.ReadFile(testutil.TinyModel(t, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var hf struct {
		AddedTokens []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		PreTokenizer struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
			UseRegex       bool   `json:"use_regex"`
		} `json:"pre_tokenizer"`
		Model struct {
			Type   string            `json:"type"`
			Vocab  map[string]int32  `json:"vocab"`
			Merges []json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &hf); err != nil {
		t.Fatal(err)
	}
	if hf.Model.Type != "BPE" || hf.PreTokenizer.Type != "ByteLevel" || !hf.PreTokenizer.UseRegex || hf.PreTokenizer.AddPrefixSpace {
		t.Fatalf("tokenizer.json is not plain byte-level BPE with the GPT-2 regex: model %q pre %+v", hf.Model.Type, hf.PreTokenizer)
	}
	v := tinyVocab(t)
	if len(hf.Model.Vocab) != len(v.Tokens) {
		t.Fatalf("tokenizer.json has %d tokens, the GGUF %d", len(hf.Model.Vocab), len(v.Tokens))
	}
	for text, id := range hf.Model.Vocab {
		if id < 0 || int(id) >= len(v.Tokens) || v.Tokens[id] != text {
			t.Fatalf("tokenizer.json token %d = %q; GGUF has %q", id, text, v.Tokens[min(max(id, 0), int32(len(v.Tokens)-1))])
		}
	}
	if len(hf.Model.Merges) != len(v.Merges) {
		t.Fatalf("tokenizer.json has %d merges, the GGUF %d", len(hf.Model.Merges), len(v.Merges))
	}
	for i, raw := range hf.Model.Merges {
		// Newer tokenizers write merges as [left, right], older as "left right".
		var pair []string
		var joined string
		if err := json.Unmarshal(raw, &pair); err == nil && len(pair) == 2 {
			joined = pair[0] + " " + pair[1]
		} else if err := json.Unmarshal(raw, &joined); err != nil {
			t.Fatalf("tokenizer.json merge %d: %s", i, raw)
		}
		if joined != v.Merges[i] {
			t.Fatalf("merge %d: tokenizer.json %q, GGUF %q", i, joined, v.Merges[i])
		}
	}
	tok := tinyTokenizer(t)
	var specials []string
	for _, a := range hf.AddedTokens {
		if !a.Special {
			continue
		}
		specials = append(specials, a.Content)
		if tok.Type(a.ID) != TokenControl || string(tok.TokenBytes(a.ID)) != a.Content {
			t.Errorf("special token %d %q: GGUF type %d bytes %q", a.ID, a.Content, tok.Type(a.ID), tok.TokenBytes(a.ID))
		}
		if got := tok.Encode(a.Content, false, true); !slices.Equal(got, []int32{a.ID}) {
			t.Errorf("Encode(%q, parseSpecial) = %v, want [%d]", a.Content, got, a.ID)
		}
		plain := tok.Encode(a.Content, false, false)
		if len(plain) < 2 || slices.Contains(plain, a.ID) || tok.Decode(plain) != a.Content {
			t.Errorf("Encode(%q) without parseSpecial = %v: want its text as plain tokens", a.Content, plain)
		}
	}
	if want := []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}; !slices.Equal(specials, want) {
		t.Fatalf("tokenizer.json special tokens %q, want %q", specials, want)
	}
	chat := "<|im_start|>user\nWhat's 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|><|endoftext|>"
	ids := tok.Encode(chat, false, true)
	if tok.Decode(ids) != chat {
		t.Fatalf("chat round trip: %q", tok.Decode(ids))
	}
	var got []int32
	for _, id := range ids {
		if tok.IsControl(id) {
			got = append(got, id)
		}
	}
	if want := []int32{1, 2, 1, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("control tokens in chat encoding = %v, want %v (ids %v)", got, want, ids)
	}
	// The text between special tokens is encoded as if on its own.
	inner := tok.Encode("user\nWhat's 2+2?", false, false)
	if !slices.Equal(ids[1:1+len(inner)], inner) {
		t.Fatalf("text after <|im_start|> encoded as %v, alone as %v", ids[1:1+len(inner)], inner)
	}
	if !tok.IsEOG(0) || !tok.IsEOG(2) || tok.IsEOG(1) || tok.IsEOG(726) {
		t.Fatalf("IsEOG: <|endoftext|> %v <|im_end|> %v <|im_start|> %v 726 %v", tok.IsEOG(0), tok.IsEOG(2), tok.IsEOG(1), tok.IsEOG(726))
	}
	if tok.BOS() != 0 || tok.EOS() != 0 || tok.AddsBOS() || tok.VocabSize() != 4096 {
		t.Fatalf("BOS %d EOS %d AddsBOS %v VocabSize %d", tok.BOS(), tok.EOS(), tok.AddsBOS(), tok.VocabSize())
	}
}

// syntheticVocab is 3 control tokens, the 256 byte tokens and the given
// merges (whose results are added as tokens).
func syntheticVocab(pre string, merges ...string) Vocab {
	v := Vocab{Name: "synthetic", Pre: pre, BOS: 0, EOS: 1, EOT: -1, EOM: -1}
	v.Tokens = []string{"<s>", "</s>", "<|ctl|>"}
	v.Types = []int32{3, 3, 3}
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, string(byteRune[b]))
		v.Types = append(v.Types, 1)
	}
	for _, m := range merges {
		v.Merges = append(v.Merges, m)
		v.Tokens = append(v.Tokens, strings.Replace(m, " ", "", 1))
		v.Types = append(v.Types, 1)
	}
	return v
}

func mustVocabTokenizer(t *testing.T, v Vocab) *Tokenizer {
	t.Helper()
	tok, err := NewTokenizerFromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// vocabIDs maps token texts (byte-to-unicode form) to ids of a synthetic vocab.
func vocabIDs(t *testing.T, v Vocab, texts ...string) []int32 {
	t.Helper()
	var ids []int32
	for _, s := range texts {
		i := slices.Index(v.Tokens, s)
		if i < 0 {
			t.Fatalf("no token %q", s)
		}
		ids = append(ids, int32(i))
	}
	return ids
}

// The same merges give different ids under different pre-tokenizers, since
// merges never cross the word boundaries each one draws.
func TestTokenizerPreTokenizerChangesIDs(t *testing.T) {
	merges := []string{"1 2", "12 3", "Ġ 1", "' S", "'S u", "x 1", "Ġ a", "Ġa b", "a b"}
	text := "x123 'Su ab"
	cases := []struct {
		pre  string
		want []string
	}{
		// gpt-2: "x" "123" " '" "Su" " ab"; 'S is not a contraction (case-sensitive).
		{"gpt-2", []string{"x", "123", "Ġ", "'", "S", "u", "Ġab"}},
		// qwen2: "x" "1" "2" "3" " '" "Su" " ab": one digit per word, so "1 2" never applies.
		{"qwen2", []string{"x", "1", "2", "3", "Ġ", "'", "S", "u", "Ġab"}},
		// llama3: "x" "123" " '" "Su" " ab".
		{"llama3", []string{"x", "123", "Ġ", "'", "S", "u", "Ġab"}},
	}
	for _, c := range cases {
		v := syntheticVocab(c.pre, merges...)
		tok := mustVocabTokenizer(t, v)
		got := tok.Encode(text, false, false)
		if want := vocabIDs(t, v, c.want...); !slices.Equal(got, want) {
			t.Errorf("%s: Encode(%q) = %v, want %v %q", c.pre, text, got, want, c.want)
		}
		if tok.Decode(got) != text {
			t.Errorf("%s: round trip gives %q", c.pre, tok.Decode(got))
		}
	}
	// qwen2's case-insensitive contraction: "'S" is its own word, so "'S u"
	// cannot apply, while "' S" does.
	v := syntheticVocab("qwen2", merges...)
	if got, want := mustVocabTokenizer(t, v).Encode("'Su", false, false), vocabIDs(t, v, "'S", "u"); !slices.Equal(got, want) {
		t.Errorf("qwen2 Encode(\"'Su\") = %v, want %v", got, want)
	}
	// gpt-2's contractions are case-sensitive, and other characters never
	// join letters: "'" and "Su" are separate words.
	v = syntheticVocab("gpt-2", merges...)
	if got, want := mustVocabTokenizer(t, v).Encode("'Su", false, false), vocabIDs(t, v, "'", "S", "u"); !slices.Equal(got, want) {
		t.Errorf("gpt-2 Encode(\"'Su\") = %v, want %v", got, want)
	}
}

// Merge order: lowest rank first, and among equal pairs the leftmost.
func TestTokenizerMergeOrder(t *testing.T) {
	// "a a" before "b a": in "aba", pairs are (a,b) and (b,a); only "b a" and
	// "a ba" exist, so the result is "a"+"ba" -> "aba".
	v := syntheticVocab("gpt-2", "b a", "a ba", "a a")
	tok := mustVocabTokenizer(t, v)
	if got, want := tok.Encode("aba", false, false), vocabIDs(t, v, "aba"); !slices.Equal(got, want) {
		t.Errorf("Encode(aba) = %v, want %v", got, want)
	}
	// "aaa" with "a a": the leftmost pair merges first -> "aa" "a".
	if got, want := tok.Encode("aaa", false, false), vocabIDs(t, v, "aa", "a"); !slices.Equal(got, want) {
		t.Errorf("Encode(aaa) = %v, want %v", got, want)
	}
	// A lower-ranked merge wins over a leftmost one: in "abc" with ranks
	// "b c" < "a b", the result is "a" "bc".
	v = syntheticVocab("gpt-2", "b c", "a b")
	if got, want := mustVocabTokenizer(t, v).Encode("abc", false, false), vocabIDs(t, v, "a", "bc"); !slices.Equal(got, want) {
		t.Errorf("Encode(abc) = %v, want %v", got, want)
	}
	// llama3 takes a word that is a token whole, even without a merge path.
	v = syntheticVocab("llama3")
	v.Tokens = append(v.Tokens, "hello")
	v.Types = append(v.Types, 1)
	if got, want := mustVocabTokenizer(t, v).Encode("hello", false, false), []int32{int32(len(v.Tokens) - 1)}; !slices.Equal(got, want) {
		t.Errorf("llama3 Encode(hello) = %v, want %v", got, want)
	}
	v.Pre = "gpt-2"
	if got := mustVocabTokenizer(t, v).Encode("hello", false, false); len(got) != 5 {
		t.Errorf("gpt-2 Encode(hello) without merges = %v, want 5 byte tokens", got)
	}
}

func TestTokenizerSpecialTokens(t *testing.T) {
	v := syntheticVocab("gpt-2")
	for _, s := range []struct {
		text string
		typ  int32
	}{{"<tool>", 4}, {"ab", 4}, {"abc", 4}, {"bcd", 4}, {"<|ctl|>x", 3}} {
		v.Tokens = append(v.Tokens, s.text)
		v.Types = append(v.Types, s.typ)
	}
	v.AddBOS, v.AddEOS = true, true
	tok := mustVocabTokenizer(t, v)
	id := func(s string) int32 { return int32(slices.Index(v.Tokens, s)) }
	bytesOf := func(s string) []int32 {
		var ids []int32
		for i := 0; i < len(s); i++ {
			ids = append(ids, tok.byteToken[s[i]])
		}
		return ids
	}
	cases := []struct {
		text             string
		addSpecial, pars bool
		want             []int32
	}{
		// User-defined tokens match even without parseSpecial.
		{"<tool>", false, false, []int32{id("<tool>")}},
		// Control tokens only with parseSpecial.
		{"<|ctl|>", false, false, bytesOf("<|ctl|>")},
		{"<|ctl|>", false, true, []int32{2}},
		// Longest at the same position: "<|ctl|>x" over "<|ctl|>".
		{"<|ctl|>xy", false, true, append([]int32{id("<|ctl|>x")}, bytesOf("y")...)},
		// Leftmost first: "ab" at 0 beats "bcd" at 1; then "abc" is longer than "ab".
		{"abcd", false, false, append([]int32{id("abc")}, bytesOf("d")...)},
		{"zbcd", false, false, append(bytesOf("z"), id("bcd"))},
		// BOS and EOS as the vocabulary asks.
		{"q", true, false, []int32{0, tok.byteToken['q'], 1}},
		{"", true, false, []int32{0, 1}},
		{"", false, false, nil},
	}
	for _, c := range cases {
		got := tok.Encode(c.text, c.addSpecial, c.pars)
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %v, %v) = %v, want %v", c.text, c.addSpecial, c.pars, got, c.want)
		}
	}
	if got := tok.Decode([]int32{0, id("<tool>"), -5, 1 << 30, 1}); got != "<s><tool></s>" {
		t.Errorf("Decode with out-of-range ids = %q", got)
	}
	if tok.TokenBytes(-1) != nil && len(tok.TokenBytes(-1)) != 0 {
		t.Errorf("TokenBytes(-1) = %q", tok.TokenBytes(-1))
	}
}

func TestTokenizerRefusesBadVocabularies(t *testing.T) {
	md := func(kv ...gguf.KV) *gguf.Metadata { return &gguf.Metadata{File: "bad.gguf", KV: kv} }
	v := syntheticVocab("gpt-2")
	base := []gguf.KV{
		{Key: tokKeyTokens, Value: gguf.MustArray(v.Tokens)},
		{Key: tokKeyTypes, Value: gguf.MustArray(v.Types)},
		{Key: tokKeyMerges, Value: gguf.MustArray([]string{})},
	}
	with := func(extra ...gguf.KV) []gguf.KV { return append(slices.Clone(base), extra...) }
	model := gguf.KV{Key: tokKeyModel, Value: gguf.String("gpt2")}
	pre := gguf.KV{Key: tokKeyPre, Value: gguf.String("gpt-2")}

	if _, err := NewTokenizerFromMetadata(md(with(model, pre)...)); err != nil {
		t.Fatalf("valid metadata refused: %v", err)
	}
	cases := []struct {
		name string
		kv   []gguf.KV
		want []string // substrings of the error
	}{
		{"spm model", with(gguf.KV{Key: tokKeyModel, Value: gguf.String("llama")}, pre), []string{"bad.gguf", tokKeyModel, `"llama"`}},
		{"unknown pre", with(model, gguf.KV{Key: tokKeyPre, Value: gguf.String("deepseek-llm")}), []string{"bad.gguf", tokKeyPre, `"deepseek-llm"`, "qwen2"}},
		{"missing pre", with(model), []string{tokKeyPre, "missing"}},
		{"bos out of range", with(model, pre, gguf.KV{Key: tokKeyBOS, Value: gguf.Uint32(9999)}), []string{tokKeyBOS, "9999"}},
		{"add_bos not bool", with(model, pre, gguf.KV{Key: tokKeyAddBOS, Value: gguf.Uint32(1)}), []string{tokKeyAddBOS}},
	}
	for _, c := range cases {
		_, err := NewTokenizerFromMetadata(md(c.kv...))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
	var ke *gguf.KeyError
	if _, err := NewTokenizerFromMetadata(md(with(model)...)); !errors.As(err, &ke) {
		t.Errorf("missing pre: error %v is not a *gguf.KeyError", err)
	}

	vocabCases := []struct {
		name string
		edit func(v *Vocab)
		want string
	}{
		{"missing byte", func(v *Vocab) { v.Tokens[3+'A'] = "AA" }, "byte 0x41"},
		{"duplicate", func(v *Vocab) { v.Tokens[2] = v.Tokens[3] }, "repeats token 2"},
		{"merge without space", func(v *Vocab) { v.Merges = []string{"ab"} }, `merges[0] = "ab"`},
		{"merge of unknown tokens", func(v *Vocab) { v.Merges = []string{"a b"} }, `merges[0] = "a b" names a token missing`},
		{"bad type", func(v *Vocab) { v.Types[5] = 9 }, "token_type[5] = 9"},
		{"types length", func(v *Vocab) { v.Types = v.Types[:10] }, "10 entries"},
		{"eos out of range", func(v *Vocab) { v.EOS = 100000 }, "eos_token_id = 100000"},
	}
	for _, c := range vocabCases {
		v := syntheticVocab("gpt-2")
		c.edit(&v)
		_, err := NewTokenizerFromVocab(v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func TestTextStream(t *testing.T) {
	tok := tinyTokenizer(t)
	texts := []string{
		"日本語のテキスト😀👍🏽 ok", "def main(", "e\u0301\u00a0\u3000x",
		"broken \xe2\x82 and \xff\xfe bytes \xf0\x9f", "\xed\xa0\x80 surrogate",
	}
	for _, text := range texts {
		ids := tok.Encode(text, false, false)
		s := tok.NewTextStream()
		var all string
		for _, id := range ids {
			piece := s.Push(id)
			if utf8.ValidString(text) && !utf8.ValidString(piece) {
				t.Errorf("%q: streamed piece %q is not valid UTF-8", text, piece)
			}
			all += piece
		}
		all += s.Flush()
		if all != text {
			t.Errorf("stream of %q gave %q", text, all)
		}
	}
	// The tiny vocabulary has no token for 😀's 4 bytes: it spans tokens,
	// so the stream must really hold bytes back.
	ids := tok.Encode("😀", false, false)
	if len(ids) < 2 {
		t.Fatalf("😀 is %d token(s); the test needs a character split over tokens", len(ids))
	}
	s := tok.NewTextStream()
	if got := s.Push(ids[0]); got != "" {
		t.Errorf("first part of 😀 streamed as %q, want it held back", got)
	}
}

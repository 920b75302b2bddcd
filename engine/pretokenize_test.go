package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The hand-written scanners must split exactly as the documented regular
// expressions do when a real backtracking engine runs them: the golden
// file holds those splits, made by the `regex` module (see
// testdata/tokenizer/gen_pretokenize.py).
func TestPretokenizeMatchesRegexGolden(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "tokenizer", "pretokenize_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Text   string              `json:"text"`
			Splits map[string][]string `json:"splits"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	styles := map[string]preStyle{"gpt-2": preGPT2, "qwen2": preQwen2, "llama3": preLlama3, "qwen35": preQwen35}
	checked, perStyle := 0, map[string]int{}
	for _, c := range golden.Cases {
		for name, want := range c.Splits {
			style, ok := styles[name]
			if !ok {
				t.Fatalf("golden file names unknown pre-tokenizer %q", name)
			}
			got := style.splitWords(c.Text)
			if len(want) == 0 {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s split of %q:\n got  %q\n want %q", name, c.Text, got, want)
			}
			checked++
			perStyle[name]++
		}
	}
	if checked < 4000 || perStyle["qwen35"] < 3000 {
		t.Fatalf("only %d golden splits checked (%v); the golden file is truncated", checked, perStyle)
	}
}

// Hand-derived qwen2 cases, each reasoned from the expression
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func TestPretokenizeQwen2Semantics(t *testing.T) {
	cases := []struct {
		text string
		want []string
		why  string
	}{
		{"12345", []string{"1", "2", "3", "4", "5"}, `\p{N} takes one digit at a time`},
		{"x 2024!", []string{"x", " ", "2", "0", "2", "4", "!"}, "a space before a digit is not absorbed: only letters and other characters take a leading character"},
		{"Ⅻ²", []string{"Ⅻ", "²"}, `Nl and No are \p{N} too`},
		{"DON'T We'Re", []string{"DON", "'T", " We", "'Re"}, "contractions are case-insensitive"},
		{"'Sun", []string{"'S", "un"}, "(?i): 'S is a contraction, so it does not lead the letters after it"},
		{"'LLama 'VEry", []string{"'LL", "ama", " '", "VEry"}, "two-letter contractions fold too; after a space the apostrophe goes with the space"},
		{"'ſx", []string{"'ſ", "x"}, "(?i) folds U+017F LONG S to s"},
		{"'sun", []string{"'s", "un"}, "the contraction alternative comes first, even inside a word"},
		{"'x", []string{"'x"}, `a non-contraction apostrophe is the optional [^\r\n\p{L}\p{N}] before letters`},
		{"(self", []string{"(self"}, "punctuation directly before letters joins them"},
		{"\tfoo", []string{"\tfoo"}, "a tab is not CR/LF, so it may lead a word"},
		{"\nfoo", []string{"\n", "foo"}, "CR/LF never lead a word"},
		{"a\r\n\r\nb", []string{"a", "\r\n\r\n", "b"}, `\s*[\r\n]+ takes whitespace up to the last line break`},
		{"a \n  b", []string{"a", " \n", " ", " b"}, `\s*[\r\n]+ stops after the line break; \s+(?!\S) leaves one space for " b"`},
		{"x  ", []string{"x", "  "}, "trailing whitespace is one word"},
		{"a   b", []string{"a", "  ", " b"}, `\s+(?!\S) leaves the last space to the word`},
		{"a\t!", []string{"a", "\t", "!"}, `a lone tab before punctuation falls to \s+ (" ?" only takes a space)`},
		{"a !!\n\nb", []string{"a", " !!\n\n", "b"}, `" ?[^\s\p{L}\p{N}]+[\r\n]*" keeps the line breaks after punctuation`},
		{"a ! b", []string{"a", " !", " b"}, "a space leads punctuation"},
		{"日本語テキスト", []string{"日本語テキスト"}, "CJK is \\p{L}"},
		{"e\u0301", []string{"e", "\u0301"}, "combining marks are not \\p{L}"},
		{"\xffabc", []string{"\xffabc"}, "an invalid byte counts as an other character"},
		{"ab\xff\xfe12", []string{"ab", "\xff\xfe", "1", "2"}, "invalid bytes run together as other characters"},
	}
	for _, c := range cases {
		if got := preQwen2.splitWords(c.text); !slices.Equal(got, c.want) {
			t.Errorf("qwen2 split of %q = %q, want %q (%s)", c.text, got, c.want, c.why)
		}
	}
	// llama3 differs only in taking up to three digits.
	if got, want := preLlama3.splitWords("1234567 x12"), []string{"123", "456", "7", " x", "12"}; !slices.Equal(got, want) {
		t.Errorf("llama3 split = %q, want %q", got, want)
	}
	// gpt-2: case-sensitive contractions, whole number runs, the space joins.
	if got, want := preGPT2.splitWords("DON'T don't 12345 (self"), []string{"DON", "'", "T", " don", "'t", " 12345", " (", "self"}; !slices.Equal(got, want) {
		t.Errorf("gpt-2 split = %q, want %q", got, want)
	}
}

// Hand-derived qwen35 cases: qwen2's expression with \p{M} beside \p{L} in
// the word runs and out of the "other" runs.
func TestPretokenizeQwen35Semantics(t *testing.T) {
	cases := []struct {
		text       string
		want, qwen string // qwen35's split and qwen2's, words joined by "|"
		why        string
	}{
		{"e\u0301", "e\u0301", "e|\u0301", "a combining mark stays with its letter"},
		{"नमस्ते", "नमस्ते", "नमस|्त|े", "Devanagari vowel signs and virama are marks"},
		{"\u0301\u0301ab", "\u0301\u0301ab", "\u0301\u0301|ab", "marks may start a word run"},
		{"a \u0301b", "a| \u0301b", "a| \u0301|b", "a space may lead a run that starts with a mark"},
		{"!!\u0301x", "!!|\u0301x", "!!\u0301|x", "marks are not \"other\": the punctuation run stops before one"},
		{"!\u0301", "!\u0301", "!\u0301", "one non-letter may lead a mark run, as it leads letters"},
		{"1\u0301", "1|\u0301", "1|\u0301", "digits never lead a run"},
		{"\n\u0301", "\n|\u0301", "\n|\u0301", "neither do line breaks"},
		{"x\u200d\u0301", "x|\u200d\u0301", "x|\u200d\u0301", "a zero-width joiner (Cf) is other, and leads the mark"},
		{"12 don't", "1|2| don|'t", "1|2| don|'t", "without marks qwen35 splits as qwen2"},
	}
	for _, c := range cases {
		if got := strings.Join(preQwen35.splitWords(c.text), "|"); got != c.want {
			t.Errorf("qwen35 split of %q = %q, want %q (%s)", c.text, got, c.want, c.why)
		}
		if got := strings.Join(preQwen2.splitWords(c.text), "|"); got != c.qwen {
			t.Errorf("qwen2 split of %q = %q, want %q (%s)", c.text, got, c.qwen, c.why)
		}
	}
}

// Words always concatenate back to the input and are never empty.
func TestPretokenizeCoversInput(t *testing.T) {
	inputs := []string{"", "\xff", "\xc3", "a\xc3", "\xe2\x82", " \xf0\x9f\x98", strings.Repeat(" ", 100), "'", "' ", "'\xff"}
	for _, s := range inputs {
		for _, p := range []preStyle{preGPT2, preQwen2, preLlama3, preQwen35} {
			words := p.splitWords(s)
			for _, w := range words {
				if w == "" {
					t.Fatalf("style %d: empty word in split of %q", p, s)
				}
			}
			if strings.Join(words, "") != s {
				t.Fatalf("style %d: split of %q does not concatenate back: %q", p, s, words)
			}
		}
	}
}

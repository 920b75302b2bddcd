package engine

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stratactl/stratactl/internal/testutil"
)

// naiveBPE is the textbook algorithm, quadratic and obviously right: merge
// the lowest-ranked adjacent pair (leftmost among equals) until none is left.
func naiveBPE(t *Tokenizer, word string) []int32 {
	ids := make([]int32, len(word))
	for i := 0; i < len(word); i++ {
		ids[i] = t.byteToken[word[i]]
	}
	for {
		best, bestRank := -1, uint64(1<<63)
		for i := 0; i+1 < len(ids); i++ {
			m, ok := t.merges[uint64(uint32(ids[i]))<<32|uint64(uint32(ids[i+1]))]
			if ok && m>>32 < bestRank {
				best, bestRank = i, m>>32
			}
		}
		if best < 0 {
			return ids
		}
		m := t.merges[uint64(uint32(ids[best]))<<32|uint64(uint32(ids[best+1]))]
		ids[best] = int32(uint32(m))
		ids = slices.Delete(ids, best+1, best+2)
	}
}

var (
	variantsOnce sync.Once
	variants     []*Tokenizer
)

// tinyVariants is the tiny model's vocabulary under every pre-tokenizer
// style, so the fuzz target covers every scanner on a real vocabulary.
func tinyVariants(t testing.TB) []*Tokenizer {
	t.Helper()
	tinyTokenizer(t)
	v := tinyVocab(t)
	variantsOnce.Do(func() {
		for _, pre := range []string{"gpt-2", "qwen2", "llama3", "qwen35"} {
			v.Pre = pre
			tok, err := NewTokenizerFromVocab(v)
			if err != nil {
				t.Fatal(err)
			}
			variants = append(variants, tok)
		}
	})
	return variants
}

func checkRoundTrip(t *testing.T, tok *Tokenizer, s string) {
	for _, parseSpecial := range []bool{false, true} {
		ids := tok.Encode(s, false, parseSpecial)
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("Encode(%q) gave id %d outside the vocabulary", s, id)
			}
		}
		if got := tok.Decode(ids); got != s {
			t.Fatalf("pre %d parseSpecial %v: Decode(Encode(%q)) = %q (ids %v)", tok.pre, parseSpecial, s, got, ids)
		}
	}
	// The heap-based merge must agree with the textbook one on every word
	// (llama3's whole-word lookup aside).
	if !tok.ignoreMerges {
		var e bpeEncoder
		e.t = tok
		for i := 0; i < len(s); {
			end := tok.pre.nextWord(s, i)
			w := s[i:end]
			if got, want := e.merge(nil, w), naiveBPE(tok, w); !slices.Equal(got, want) {
				t.Fatalf("pre %d: merge(%q) = %v, textbook BPE gives %v", tok.pre, w, got, want)
			}
			i = end
		}
	}
}

func roundTripSeeds(t testing.TB) []string {
	seeds := []string{
		"", "\x00", "\xff", "\xc3\x28", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"<|im_start|>", "<|im_start|", "<|endoftext|><|endoftext|>", "<<|im_end|>>",
		"def main(", "    return x\n\n\n", "'s'S'll", "\r\n\t \u00a0\u3000", "日本語😀\u0301",
		string([]byte{0, 1, 2, 0x7f, 0x80, 0xa0, 0xad, 0xc0, 0xfe}),
	}
	b, err := os.ReadFile(filepath.Join("testdata", "tokenizer", "pretokenize_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Text string `json:"text"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	for _, c := range golden.Cases {
		seeds = append(seeds, c.Text)
	}
	return seeds
}

// FuzzTokenizerRoundTrip: any byte string encodes to in-range ids that
// decode back to it exactly, under every pre-tokenizer, with and without
// special-token parsing, and the merge loop agrees with textbook BPE.
// The default test run checks the seeds only; fuzz with
//
//	go test ./engine -run '^$' -fuzz FuzzTokenizerRoundTrip -fuzztime 60s
func FuzzTokenizerRoundTrip(f *testing.F) {
	for _, s := range roundTripSeeds(f) {
		f.Add(s)
	}
	toks := tinyVariants(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			checkRoundTrip(t, tok, s)
		}
	})
}

// Random byte strings and random valid text, deterministic seed: a quick
// version of the fuzz target for the default run.
func TestTokenizerRoundTripRandom(t *testing.T) {
	toks := tinyVariants(t)
	rng := rand.New(rand.NewPCG(5, 2026))
	alphabet := []rune("aZ09 '\t\n\r.,!(){}<>|_-éßſK日😀\u0301\u00a0\u3000Ⅻ²")
	for i := 0; i < 300; i++ {
		n := rng.IntN(40)
		var s []byte
		if i%2 == 0 {
			for j := 0; j < n; j++ {
				s = append(s, byte(rng.IntN(256)))
			}
		} else {
			for j := 0; j < n; j++ {
				s = utf8.AppendRune(s, alphabet[rng.IntN(len(alphabet))])
			}
		}
		for _, tok := range toks {
			checkRoundTrip(t, tok, string(s))
		}
	}
}

// BenchmarkEncodeHeldout: go test ./engine -run '^$' -bench EncodeHeldout
func BenchmarkEncodeHeldout(b *testing.B) {
	tok := tinyTokenizer(b)
	text, err := os.ReadFile(testutil.TinyModel(b, "heldout_eval.txt"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(text)
	b.SetBytes(int64(len(s)))
	var n int
	for b.Loop() {
		n = len(tok.Encode(s, false, false))
	}
	b.ReportMetric(float64(n), "tokens")
}

// BenchmarkNewTokenizer: building the tokenizer from the tiny model's
// arrays (4096 tokens, 3837 merges).
func BenchmarkNewTokenizer(b *testing.B) {
	v := tinyVocab(b)
	for b.Loop() {
		if _, err := NewTokenizerFromVocab(v); err != nil {
			b.Fatal(err)
		}
	}
}

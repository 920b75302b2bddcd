package engine

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
)

var (
	tinyTokOnce sync.Once
	tinyTok     *Tokenizer
	tinyTokErr  error
)

// tinyTokenizer loads the tokenizer of the tiny fixture model once.
func tinyTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	path := testutil.TinyModel(t, "model-bf16.gguf")
	tinyTokOnce.Do(func() {
		f, err := gguf.Open(path)
		if err != nil {
			tinyTokErr = err
			return
		}
		defer f.Close()
		tinyTok, tinyTokErr = NewTokenizer(f)
	})
	if tinyTokErr != nil {
		t.Fatal(tinyTokErr)
	}
	return tinyTok
}

func readRefIDs(t testing.TB, path string) []int32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%4 != 0 {
		t.Fatalf("%s: %d bytes is not a whole number of int32", path, len(b))
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func firstIDDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// tokenizerFixtures are the fixture models whose refs hold token ids made by
// their own tokenizer (transformers' for both): the qwen3moe one and the
// qwen35moe one, each loaded from its own GGUF.
var tokenizerFixtures = []string{"tiny-qwen3moe", "tiny-qwen35moe"}

var fixtureToks sync.Map // fixture name -> *Tokenizer

// fixtureTokenizer loads the tokenizer of a fixture model's model-bf16.gguf once.
func fixtureTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if name == "tiny-qwen3moe" {
		return tinyTokenizer(t)
	}
	if tok, ok := fixtureToks.Load(name); ok {
		return tok.(*Tokenizer)
	}
	f, err := gguf.Open(testutil.Path(t, "models", name, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := NewTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	fixtureToks.Store(name, tok)
	return tok
}

// The held-out text, tokenized as one string with no BOS, must give the
// reference ids behind the perplexity windows and the eval sequences.
func TestTokenizerHeldoutMatchesReference(t *testing.T) {
	for _, name := range tokenizerFixtures {
		t.Run(name, func(t *testing.T) { checkHeldoutIDs(t, name) })
	}
}

func checkHeldoutIDs(t *testing.T, name string) {
	tok := fixtureTokenizer(t, name)
	file := func(elem ...string) string { return testutil.Path(t, append([]string{"models", name}, elem...)...) }
	text, err := os.ReadFile(file("heldout_eval.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(string(text), true, false)
	if got := tok.Decode(ids); got != string(text) {
		t.Fatalf("decode(encode(heldout)) differs from the text (%d vs %d bytes)", len(got), len(text))
	}

	ppl := readRefIDs(t, file("refs", "ppl_tokens.i32.bin"))
	if len(ids) < len(ppl) {
		t.Fatalf("heldout gives %d tokens, fewer than the %d reference ids", len(ids), len(ppl))
	}
	if d := firstIDDiff(ids[:len(ppl)], ppl); d >= 0 {
		lo := max(0, d-3)
		t.Fatalf("ppl_tokens differ at token %d: got %v want %v (decoded got %q want %q)",
			d, ids[lo:d+4], ppl[lo:d+4], tok.Decode(ids[lo:d+4]), tok.Decode(ppl[lo:d+4]))
	}

	// The reference ids decode to the text they came from.
	if !strings.HasPrefix(string(text), tok.Decode(ppl)) {
		t.Fatalf("Decode(ppl_tokens) is not a prefix of the held-out text")
	}

	eval := readRefIDs(t, file("refs", "eval_tokens.i32.bin"))
	offsets := []int{20000, 29000, 38000, 47000}
	const seqLen = 64
	if len(eval) != len(offsets)*seqLen {
		t.Fatalf("eval_tokens holds %d ids, want %d", len(eval), len(offsets)*seqLen)
	}
	for s, off := range offsets {
		want := eval[s*seqLen : (s+1)*seqLen]
		if off+seqLen > len(ids) {
			t.Fatalf("heldout gives %d tokens, eval sequence %d needs %d", len(ids), s, off+seqLen)
		}
		if d := firstIDDiff(ids[off:off+seqLen], want); d >= 0 {
			t.Errorf("eval sequence %d (offset %d) differs at %d: got %d want %d", s, off, d, ids[off+d], want[d])
		}
		if got, at := tok.Decode(want), len(tok.Decode(ids[:off])); !strings.HasPrefix(string(text[at:]), got) {
			t.Errorf("eval sequence %d decodes to %q, not the text at byte %d", s, got, at)
		}
	}
	t.Logf("heldout: %d bytes -> %d tokens", len(text), len(ids))
}

// The greedy reference's prompt encodes to its ids, and its generated ids
// decode to its text.
func TestTokenizerGreedyReference(t *testing.T) {
	for _, name := range tokenizerFixtures {
		t.Run(name, func(t *testing.T) { checkGreedyText(t, name) })
	}
}

func checkGreedyText(t *testing.T, name string) {
	tok := fixtureTokenizer(t, name)
	b, err := os.ReadFile(testutil.Path(t, "models", name, "refs", "greedy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Prompt        string  `json:"prompt"`
		PromptIDs     []int32 `json:"prompt_ids"`
		GeneratedIDs  []int32 `json:"generated_ids"`
		GeneratedText string  `json:"generated_text"`
		FullText      string  `json:"full_text"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode(ref.Prompt, true, true); firstIDDiff(got, ref.PromptIDs) >= 0 {
		t.Errorf("Encode(%q) = %v, want %v", ref.Prompt, got, ref.PromptIDs)
	}
	if got := tok.Decode(ref.GeneratedIDs); got != ref.GeneratedText {
		t.Errorf("Decode(generated) = %q, want %q", got, ref.GeneratedText)
	}
	all := append(append([]int32(nil), ref.PromptIDs...), ref.GeneratedIDs...)
	if got := tok.Decode(all); got != ref.FullText {
		t.Errorf("Decode(prompt+generated) = %q, want %q", got, ref.FullText)
	}
	var streamed []byte
	for _, id := range ref.GeneratedIDs {
		streamed = append(streamed, tok.TokenBytes(id)...)
	}
	if string(streamed) != ref.GeneratedText {
		t.Errorf("TokenBytes concatenated = %q, want %q", streamed, ref.GeneratedText)
	}
}

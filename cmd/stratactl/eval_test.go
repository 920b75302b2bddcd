package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestEvalTextMatchesIDs: the held-out text, tokenized by eval, gives the
// windows of refs/ppl_tokens.i32.bin (its first 64 × 256 tokens), so both
// sources give the same figures. A 16 KiB prefix of the text holds the first
// two windows.
func TestEvalTextMatchesIDs(t *testing.T) {
	text, err := os.ReadFile(testutil.TinyModel(t, "heldout_eval.txt"))
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(t.TempDir(), "heldout-prefix.txt")
	if err := os.WriteFile(prefix, text[:16<<10], 0o644); err != nil {
		t.Fatal(err)
	}
	cand, ref := testutil.TinyModel(t, "model-iq4nl.gguf"), testutil.TinyModel(t, "model-bf16.gguf")
	fromText := decode[evalq.Report](t, stratactl(t, "eval", cand, "--ref", ref, "--text", prefix, "--ctx", "256", "--chunks", "2", "--json"))
	fromIDs := decode[evalq.Report](t, stratactl(t, "eval", cand, "--ref", ref, "--ids", testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin"), "--ctx", "256", "--chunks", "2", "--json"))
	if fromText.Tokens != 510 || fromText.PPL != fromIDs.PPL || fromText.KLDMean != fromIDs.KLDMean || fromText.Top1Agreement != fromIDs.Top1Agreement {
		t.Errorf("--text: %d positions ppl %v kld %v top-1 %v; --ids: %d ppl %v kld %v top-1 %v",
			fromText.Tokens, fromText.PPL, fromText.KLDMean, fromText.Top1Agreement, fromIDs.Tokens, fromIDs.PPL, fromIDs.KLDMean, fromIDs.Top1Agreement)
	}
	if fromIDs.KLDMean <= 0 || fromIDs.Top1Agreement >= 1 || fromIDs.PPL <= fromIDs.PPLRef*0.9 {
		t.Errorf("IQ4_NL against BF16 should differ a little: %+v", fromIDs.Result)
	}
	if len(fromIDs.KLDPercentiles) != 11 || len(fromIDs.DeltaPPercentiles) != 13 {
		t.Errorf("%d KLD and %d Δp percentiles", len(fromIDs.KLDPercentiles), len(fromIDs.DeltaPPercentiles))
	}
	// The human report carries the same figures.
	out := string(stratactl(t, "eval", cand, "--ref", ref, "--ids", testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin"), "--ctx", "256", "--chunks", "1"))
	for _, want := range []string{"Mean    KLD", "99.9%", "Same top p", "RMS Δp", "Median"} {
		if !contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestEvalSecondHalf: --score second-half scores llama-perplexity's
// positions (128..254 of a 256-token window) and says so; its figures are
// those of the same positions under evalq (checked there against scoring
// every position).
func TestEvalSecondHalf(t *testing.T) {
	cand, ref := testutil.TinyModel(t, "model-iq4nl.gguf"), testutil.TinyModel(t, "model-bf16.gguf")
	ids := testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin")
	r := decode[evalq.Report](t, stratactl(t, "eval", cand, "--ref", ref, "--ids", ids, "--ctx", "256", "--chunks", "1", "--score", "second-half", "--json"))
	if r.Tokens != 127 || r.Windows != 1 || r.Score != "second-half" || r.FirstPos != 128 {
		t.Errorf("second half: %d positions, %d windows, score %q from %d", r.Tokens, r.Windows, r.Score, r.FirstPos)
	}
	if r.KLDMean <= 0 || r.Top1Agreement >= 1 {
		t.Errorf("IQ4_NL against BF16 should differ a little: %+v", r.Result)
	}
	out := string(stratactl(t, "eval", cand, "--ref", ref, "--ids", ids, "--ctx", "256", "--chunks", "1", "--score", "second-half"))
	if !contains(out, "127 positions scored (128..254 of each window") {
		t.Errorf("report does not say which positions it scored:\n%s", out)
	}
}

func TestEvalRefuses(t *testing.T) {
	m := testutil.TinyModel(t, "model-bf16.gguf")
	ids := testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin")
	stratactlFails(t, "eval", m, "--ids", ids)                              // no --ref
	stratactlFails(t, "eval", m, "--ref", m)                                // no windows
	stratactlFails(t, "eval", m, "--ref", m, "--ids", ids, "--text", ids)   // both
	stratactlFails(t, "eval", m, "--ref", m, "--ids", ids, "--ctx", "4096") // beyond the context
	stratactlFails(t, "eval", m, "--ref", m, "--ids", ids, "--ctx", "1")    // nothing to predict
	stratactlFails(t, "eval", m, "--ref", filepath.Join(t.TempDir(), "none.gguf"), "--ids", ids)
	stratactlFails(t, "eval", m, "--ref", m, "--ids", ids, "--score", "half")                      // unknown scoring
	stratactlFails(t, "eval", m, "--ref", m, "--ids", ids, "--ctx", "2", "--score", "second-half") // nothing left to score
	bad := filepath.Join(t.TempDir(), "bad.bin")
	os.WriteFile(bad, []byte{0, 0, 0, 0, 0xff, 0xff, 0, 0}, 0o644) // id 65535 > vocab
	if msg := stratactlFails(t, "eval", m, "--ref", m, "--ids", bad, "--ctx", "2"); !contains(msg, "byte 4") {
		t.Errorf("error does not say where: %s", msg)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestProfileTextMatchesIDs: profile --text and --ids of the
// same tokens write the same profile.
func TestProfileTextMatchesIDs(t *testing.T) {
	text, err := os.ReadFile(testutil.TinyModel(t, "heldout_eval.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prefix := filepath.Join(dir, "heldout-prefix.txt")
	if err := os.WriteFile(prefix, text[:8<<10], 0o644); err != nil {
		t.Fatal(err)
	}
	model := testutil.TinyModel(t, "model-bf16.gguf")
	a, b := filepath.Join(dir, "a.strp"), filepath.Join(dir, "b.strp")
	stratactl(t, "profile", model, "--text", prefix, "--ctx", "256", "--max-tokens", "256", "-o", a)
	stratactl(t, "profile", model, "--ids", testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin"), "--ctx", "256", "--max-tokens", "256", "-o", b)
	if !bytesEqual(mustRead(t, a), mustRead(t, b)) {
		t.Error("--text and --ids of the same tokens give different profiles")
	}
	stratactlFails(t, "profile", model, "--text", prefix, "--ctx", "256", "--max-tokens", "100", "-o", a) // less than a window
	stratactlFails(t, "profile", model, "--ctx", "256", "-o", a)                                          // no calibration
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

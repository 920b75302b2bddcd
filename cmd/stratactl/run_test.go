package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

type greedyJSON struct {
	Prompt        string  `json:"prompt"`
	PromptIDs     []int32 `json:"prompt_ids"`
	GeneratedIDs  []int32 `json:"generated_ids"`
	GeneratedText string  `json:"generated_text"`
}

func loadGreedy(t *testing.T, elem ...string) greedyJSON {
	t.Helper()
	b, err := os.ReadFile(testutil.TinyModel(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	var g greedyJSON
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func runJSON(t *testing.T, args ...string) engine.RunReport {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), append([]string{"--json"}, args...)); code != 0 {
		t.Fatalf("run %v: exit %d: %s", args, code, errb.String())
	}
	var rep engine.RunReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out.String())
	}
	return rep
}

func writeIDs(t *testing.T, ids []int32) string {
	t.Helper()
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
	}
	p := filepath.Join(t.TempDir(), "prompt.i32")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunGreedyReference(t *testing.T) {
	ref := loadGreedy(t, "refs", "greedy.json")
	model := testutil.TinyModel(t, "model-bf16.gguf")
	logits := filepath.Join(t.TempDir(), "logits.f32")
	rep := runJSON(t, "run", model, "--ids", writeIDs(t, ref.PromptIDs), "-n", "32", "--temp", "0", "--logits", logits)
	if !equalIDs(rep.GeneratedIDs, ref.GeneratedIDs) {
		t.Fatalf("generated %v, want %v", rep.GeneratedIDs, ref.GeneratedIDs)
	}
	if rep.Text != ref.GeneratedText {
		t.Fatalf("text %q, want %q", rep.Text, ref.GeneratedText)
	}
	if rep.PrefillTokensPerS <= 0 || rep.DecodeTokensPerS <= 0 || rep.DecodeSteps != 31 {
		t.Fatalf("figures %+v", rep)
	}
	// Rows: 3 prompt positions, then 31 decode steps; row 2+i predicts
	// generated token i, as greedy_logits row i does.
	b, err := os.ReadFile(logits)
	if err != nil {
		t.Fatal(err)
	}
	const V = 4096
	if len(b) != (3+31)*V*4 || rep.LogitsRows != 34 {
		t.Fatalf("logits file of %d bytes, %d rows", len(b), rep.LogitsRows)
	}
	rb, err := os.ReadFile(testutil.TinyModel(t, "refs", "greedy_logits.f32.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var maxDiff, maxRef float64
	for i := 0; i < 32*V; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(b[(2*V+i)*4:]))
		want := math.Float32frombits(binary.LittleEndian.Uint32(rb[i*4:]))
		maxDiff = math.Max(maxDiff, math.Abs(float64(got-want)))
		maxRef = math.Max(maxRef, math.Abs(float64(want)))
	}
	if maxDiff > 1e-3*maxRef {
		t.Fatalf("logits differ from greedy_logits by %g (largest %g)", maxDiff, maxRef)
	}
}

func TestRunPromptTextAndSampling(t *testing.T) {
	ref := loadGreedy(t, "refs", "greedy.json")
	model := testutil.TinyModel(t, "model-iq4nl.gguf")
	rep := runJSON(t, "run", model, "--prompt", ref.Prompt, "-n", "4")
	if !equalIDs(rep.PromptIDs, ref.PromptIDs) {
		t.Fatalf("prompt ids %v, want %v", rep.PromptIDs, ref.PromptIDs)
	}
	a := runJSON(t, "run", model, "--prompt", ref.Prompt, "-n", "12", "--temp", "0.8", "--top-p", "0.9", "--seed", "7")
	b := runJSON(t, "run", model, "--prompt", ref.Prompt, "-n", "12", "--temp", "0.8", "--top-p", "0.9", "--seed", "7", "-j", "1")
	if !equalIDs(a.GeneratedIDs, b.GeneratedIDs) {
		t.Fatalf("same seed, different tokens: %v vs %v", a.GeneratedIDs, b.GeneratedIDs)
	}
	// Streamed text is the decoded text.
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), []string{"run", model, "--prompt", ref.Prompt, "-n", "12", "--temp", "0.8", "--top-p", "0.9", "--seed", "7"}); code != 0 {
		t.Fatal(errb.String())
	}
	if got := strings.TrimSuffix(out.String(), "\n"); got != a.Text {
		t.Fatalf("streamed %q, JSON text %q", got, a.Text)
	}
	if !strings.Contains(errb.String(), "tokens/s") {
		t.Fatalf("no summary: %s", errb.String())
	}
}

func TestRunPack(t *testing.T) {
	src := testutil.TinyModel(t, "model-iq3s.gguf")
	dir := t.TempDir()
	enginetest.BuildPack(t, src, dir)
	ref := loadGreedy(t, "refs-iq3s", "greedy.json")
	ids := writeIDs(t, ref.PromptIDs)
	full := runJSON(t, "run", dir, "--ids", ids, "-n", "32")
	quarter := runJSON(t, "run", dir, "--ids", ids, "-n", "32", "--arena-mb", "0.6")
	for _, rep := range []engine.RunReport{full, quarter} {
		if !equalIDs(rep.GeneratedIDs, ref.GeneratedIDs) {
			t.Fatalf("generated %v, want %v", rep.GeneratedIDs, ref.GeneratedIDs)
		}
		if rep.Stream == nil {
			t.Fatal("no stream figures for a pack")
		}
	}
	if full.Stream.HitRate != 1 || full.Stream.MissesPerToken != 0 {
		t.Fatalf("full arena: %+v", full.Stream)
	}
	if quarter.Stream.ArenaSlots >= quarter.Stream.TotalSlots || quarter.Stream.MissesPerToken == 0 {
		t.Fatalf("small arena: %+v", quarter.Stream)
	}
	bonus := runJSON(t, "run", dir, "--ids", ids, "-n", "8", "--arena-mb", "0.6", "--cache-bonus", "0")
	if !equalIDs(bonus.GeneratedIDs, ref.GeneratedIDs[:8]) || bonus.CacheBonus == nil {
		t.Fatalf("cache bonus 0: %v", bonus.GeneratedIDs)
	}
}

func TestRunRejects(t *testing.T) {
	model := testutil.TinyModel(t, "model-iq4nl.gguf")
	bad := filepath.Join(t.TempDir(), "bad.i32")
	os.WriteFile(bad, []byte{1, 2, 3}, 0o644)
	big := writeIDs(t, []int32{5, 99999})
	out := filepath.Join(t.TempDir(), "logits.f32")
	for _, args := range [][]string{
		{"run", model},
		{"run", model, "--prompt", "x", "--ids", big},
		{"run", model, "--ids", bad},
		{"run", model, "--ids", big, "--logits", out},
		{"run", filepath.Join(t.TempDir(), "missing.gguf"), "--prompt", "x"},
		{"run", model, "--prompt", "x", "-n", "0"},
		{"run", model, "--prompt", "x", "--cache-bonus", "1"},
	} {
		var o, e bytes.Buffer
		if code := run(context.Background(), cli.Test(&o, &e), args); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run left a logits file")
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRunModes: run defaults to fast mode, --exact selects exact mode, the
// report names the mode that ran, and the prompt logits written are the
// engine's fast mode's, bit for bit, which are not exact mode's.
func TestRunModes(t *testing.T) {
	ref := loadGreedy(t, "refs", "greedy.json")
	model := testutil.TinyModel(t, "model-iq4nl.gguf")
	prompt := writeIDs(t, ref.PromptIDs)
	var rows [2][]byte
	for i, args := range [][]string{nil, {"--exact"}} {
		logits := filepath.Join(t.TempDir(), "logits.f32")
		rep := runJSON(t, append([]string{"run", model, "--ids", prompt, "-n", "2", "--logits", logits}, args...)...)
		if want := []string{"fast", "exact"}[i]; rep.Mode != want {
			t.Fatalf("run %v reports mode %q, want %q", args, rep.Mode, want)
		}
		b, err := os.ReadFile(logits)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = b
	}
	m, err := engine.Open(model, engine.Options{Mode: engine.Fast})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want, err := m.NewSession().Forward(ref.PromptIDs, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows[0]) < 4*len(want) {
		t.Fatalf("fast logits file of %d bytes, want at least %d", len(rows[0]), 4*len(want))
	}
	for i, w := range want {
		if got := binary.LittleEndian.Uint32(rows[0][4*i:]); got != math.Float32bits(w) {
			t.Fatalf("fast logit %d: %g, engine's fast mode %g", i, math.Float32frombits(got), w)
		}
	}
	if bytes.Equal(rows[0][:4*len(want)], rows[1][:4*len(want)]) {
		t.Fatal("--exact wrote fast mode's prompt logits")
	}
}

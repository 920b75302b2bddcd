package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

// The README's main command: the whole pipeline on the embedded model, and
// with --model on the qwen35moe fixture (gated delta nets, shared experts).
// Every step must succeed and every figure of the summary must be present in
// its command's --json output (a renamed field fails the demo, never prints 0).
func TestDemoPipeline(t *testing.T) {
	root := testutil.ModuleRoot(t)
	for _, c := range []struct{ name, model, kept string }{
		{"qwen3moe", filepath.Join(root, "testdata", "tiny-qwen3moe-iq3s.gguf"), "16 of 32 experts"},
		{"qwen35moe", testutil.Path(t, "models", "tiny-qwen35moe", "model-bf16.gguf"), "32 of 64 experts"},
	} {
		t.Run(c.name, func(t *testing.T) { checkDemo(t, root, c.name, c.model, c.kept) })
	}
}

func checkDemo(t *testing.T, root, arch, model, kept string) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	env := cli.Test(&stdout, &stderr)
	code := run(context.Background(), env, []string{"demo", "--json",
		"--model", model,
		"--calib", filepath.Join(root, "testdata", "calib.txt"),
		"--heldout", filepath.Join(root, "testdata", "heldout.txt"),
		"--ctx", "128", "--tokens", "8", "-o", out})
	if code != 0 {
		t.Fatalf("demo exit %d: %s", code, stderr.String())
	}
	var res struct {
		Output string
		Steps  []demoStep
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	want := []string{"inspect", "profile", "prune", "pack", "verify", "run", "eval"}
	if len(res.Steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(res.Steps), len(want))
	}
	for i, s := range res.Steps {
		if s.Name != want[i] || !strings.HasPrefix(s.Command, "stratactl "+want[i]) || s.Summary == "" {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	if !strings.HasPrefix(res.Steps[4].Summary, "OK") {
		t.Errorf("verify: %s", res.Steps[4].Summary)
	}
	if !strings.HasPrefix(res.Steps[0].Summary, arch+":") || !strings.Contains(res.Steps[2].Summary, kept) {
		t.Errorf("inspect %q; prune should keep half the experts (%s): %s", res.Steps[0].Summary, kept, res.Steps[2].Summary)
	}
}

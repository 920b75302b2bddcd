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

// The README's main command: the whole pipeline on the embedded model. Every
// step must succeed and every figure of the summary must be present in its
// command's --json output (a renamed field fails the demo, never prints 0).
func TestDemoPipeline(t *testing.T) {
	root := testutil.ModuleRoot(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	env := cli.Test(&stdout, &stderr)
	code := run(context.Background(), env, []string{"demo", "--json",
		"--model", filepath.Join(root, "testdata", "tiny-qwen3moe-iq3s.gguf"),
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
	if !strings.Contains(res.Steps[2].Summary, "16 of 32 experts") {
		t.Errorf("prune should keep half of the 32 experts: %s", res.Steps[2].Summary)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
)

// TestBenchPrefill: bench prefill's report on a small synthetic pack, in
// both modes: the flops per token are the shapes' closed form, every
// figure is measured (positive), the fractions are the rates over the
// bounds, the mode is the one asked, and the pack's folder is removed from
// --dir, leaving the user's files.
func TestBenchPrefill(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(mine, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"fast", "exact"} {
		args := []string{"--json", "bench", "prefill", "--dir", dir, "--layers", "2", "--embd", "256", "--ff", "128",
			"--experts", "8", "--used", "2", "--vocab", "512", "--heads", "4", "--heads-kv", "2", "--head-dim", "64",
			"--prompt", "24", "--repeats", "2", "--seconds", "0.01"}
		if mode == "exact" {
			args = append(args, "--exact")
		}
		var out, errb bytes.Buffer
		if code := run(context.Background(), cli.Test(&out, &errb), args); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		var rep bench.PrefillReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if rep.Mode != mode || rep.Prompt != 24 || len(rep.Seconds) != 2 {
			t.Fatalf("%s: mode %q, %d tokens, runs %v", mode, rep.Mode, rep.Prompt, rep.Seconds)
		}
		// Per layer: q (256 heads x 64 = 256 rows of 256), k and v (128
		// rows each), o (256 x 256), the router (8 x 256), and 2 experts'
		// gate, up (128 x 256) and down (256 x 128); 2 flops each.
		perLayer := 256*256 + 2*128*256 + 256*256 + 8*256 + 2*3*128*256
		if want := float64(2 * 2 * perLayer); rep.FlopsPerToken != want {
			t.Errorf("%s: %g flops per token, want %g", mode, rep.FlopsPerToken, want)
		}
		if len(rep.Rates) == 0 || rep.BoundWall <= 0 || rep.BoundCPU <= 0 || rep.TokensPerS <= 0 {
			t.Fatalf("%s: report %+v", mode, rep)
		}
		for _, r := range rep.Rates {
			if r.GFlopsCPU <= 0 || r.GFlopsWall <= 0 {
				t.Errorf("%s: rate %+v", mode, r)
			}
		}
		if rep.FractionWall != rep.TokensPerS/rep.BoundWall {
			t.Errorf("%s: fraction %g, tokens/s %g over bound %g", mode, rep.FractionWall, rep.TokensPerS, rep.BoundWall)
		}
	}
	left, _ := os.ReadDir(dir)
	if b, err := os.ReadFile(mine); err != nil || string(b) != "keep me" || len(left) != 1 {
		t.Fatalf("bench prefill left %d entries in --dir or changed the user's file (%v)", len(left), err)
	}
}

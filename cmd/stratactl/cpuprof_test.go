package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestBenchCPUProfile: a benchmark run with --cpuprofile leaves a gzipped
// profile (the pprof format) at the path and nothing else in its folder; a
// run that fails leaves no file at all.
func TestBenchCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	base := []string{"bench", "q2rules", "--json", "--no-speed", "--gaussian-blocks", "64",
		"--fixtures", testutil.Path(t, "fixtures", "ggml"), "--cpuprofile", prof}
	var out, errb bytes.Buffer
	args := append(base, "--model", testutil.TinyModel(t, "model-bf16.gguf"))
	if code := run(context.Background(), cli.Test(&out, &errb), args); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile is not gzip (pprof): %v", err)
	}
	body, err := io.ReadAll(zr)
	f.Close()
	if err != nil || len(body) == 0 {
		t.Fatalf("profile body: %d bytes, %v", len(body), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the folder, want only the profile", len(ents))
	}

	failed := filepath.Join(dir, "failed.prof")
	args = append(base[:len(base)-1], failed, "--model", "/nonexistent/model.gguf")
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), cli.Test(&out, &errb), args); code == 0 {
		t.Fatal("a run on a missing model exited 0")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("a failed run left %d entries, want only the first profile", len(ents))
	}
}

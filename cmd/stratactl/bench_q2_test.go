package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

func TestBenchQ2Rules(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"bench", "q2rules", "--json", "--no-speed", "--gaussian-blocks", "2048",
		"--fixtures", testutil.Path(t, "fixtures", "ggml"),
		"--model", testutil.TinyModel(t, "model-bf16.gguf"),
		"--imatrix", testutil.TinyModel(t, "imatrix.gguf")}
	if code := run(context.Background(), cli.Test(&out, &errb), args); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep bench.Q2RulesReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var experts, fixtures int
	for _, r := range rep.Rows {
		if !(r.RelSearch < r.RelField && r.RelField < r.RelGGML) {
			t.Errorf("%s: ggml %.4f field %.4f search %.4f, want search < field < ggml", r.Data, r.RelGGML, r.RelField, r.RelSearch)
		}
		if strings.HasPrefix(r.Data, "experts") {
			experts++
			if r.WRelSearch == nil || !(*r.WRelSearchImatrix < *r.WRelSearch) {
				t.Errorf("%s: imatrix search does not lower the weighted error", r.Data)
			}
		}
		if strings.HasPrefix(r.Data, "fixture") {
			fixtures += len(r.Files)
		}
	}
	if experts != 3 || fixtures != 28 || len(rep.Speed) != 0 {
		t.Errorf("%d expert rows (want 3), %d fixture files (want 28), %d speed rows", experts, fixtures, len(rep.Speed))
	}
}

func TestBenchQ2RulesBadInput(t *testing.T) {
	for name, extra := range map[string][]string{
		"missing imatrix": {"--imatrix", "/nonexistent/imatrix.gguf"},
		"no experts":      {"--model", testutil.Path(t, "fixtures", "ggml", "Q8_0.gguf")},
		"no fixtures":     {"--fixtures", t.TempDir()},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"bench", "q2rules", "--no-speed", "--gaussian-blocks", "16",
			"--fixtures", testutil.Path(t, "fixtures", "ggml"), "--model", testutil.TinyModel(t, "model-bf16.gguf")}, extra...)
		if code := run(context.Background(), cli.Test(&out, &errb), args); code == 0 {
			t.Errorf("%s: exit 0", name)
		} else if errb.Len() == 0 {
			t.Errorf("%s: no error message", name)
		}
	}
}

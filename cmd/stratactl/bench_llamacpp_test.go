package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

// fakeLlamaBench writes a shell script that answers as llama-bench does
// (-o json: an array of one pp and one tg record), with its rates taken in
// turn from pp and tg, one call each; it exits 3 if its arguments are not
// the ones bench llamacpp must pass, and with failExit (and a message on
// stderr) if failExit is not 0.
func fakeLlamaBench(t *testing.T, model string, pp, tg []float64, failExit int) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	if failExit != 0 {
		b.WriteString("echo 'error: failed to load model' >&2\nexit " + strconv.Itoa(failExit) + "\n")
	}
	b.WriteString(`[ "$*" = "-m ` + model + ` -p 16 -n 8 -t 1 -r 1 -o json" ] || { echo "args: $*" >&2; exit 3; }` + "\n")
	b.WriteString(`n=$(cat "` + dir + `/calls" 2>/dev/null || echo 0); echo $((n+1)) > "` + dir + `/calls"` + "\n")
	b.WriteString("case $n in\n")
	for i := range pp {
		rec := func(np, ng int, ts float64) string {
			v, _ := json.Marshal(map[string]any{"build_commit": "34af94cd", "model_type": "qwen3moe ?B IQ3_S",
				"n_prompt": np, "n_gen": ng, "avg_ts": ts})
			return string(v)
		}
		b.WriteString(strconv.Itoa(i) + ") echo '[" + rec(16, 0, pp[i]) + "," + rec(0, 8, tg[i]) + "]' ;;\n")
	}
	b.WriteString("esac\n")
	exe := filepath.Join(dir, "llama-bench")
	if err := os.WriteFile(exe, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestBenchLlamaCpp: bench llamacpp calls llama-bench once per pair with
// the test's shape and thread count, keeps its rates in call order, and
// reports the medians of each side and the median of the pairs' ratios
// (computed here from the reported rates); our side's rates are measured
// (positive). A llama-bench that fails is an error naming the model and
// carrying its message.
func TestBenchLlamaCpp(t *testing.T) {
	model := filepath.Join(testutil.ModuleRoot(t), "testdata", "tiny-qwen3moe-iq3s.gguf")
	pp, tg := []float64{100, 300, 200}, []float64{50, 10, 30}
	exe := fakeLlamaBench(t, model, pp, tg, 0)
	var out, errb bytes.Buffer
	args := []string{"--json", "bench", "llamacpp", "--llama-bench", exe, "-j", "1", "--prompt", "16", "--gen", "8", "--pairs", "3", model}
	if code := run(context.Background(), cli.Test(&out, &errb), args); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep bench.LlamaReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Rows) != 1 || rep.Pairs != 3 || rep.Prompt != 16 || rep.Gen != 8 {
		t.Fatalf("report %+v", rep)
	}
	r := rep.Rows[0]
	if r.Threads != 1 || r.LlamaBuild != "34af94cd" || !slices.Equal(r.LlamaPrefill, pp) || !slices.Equal(r.LlamaDecode, tg) {
		t.Fatalf("row %+v", r)
	}
	if r.MedLlamaPP != 200 || r.MedLlamaTG != 30 {
		t.Errorf("llama.cpp medians %g, %g; want 200, 30", r.MedLlamaPP, r.MedLlamaTG)
	}
	if len(r.OursPrefill) != 3 || len(r.OursDecode) != 3 {
		t.Fatalf("ours %v, %v", r.OursPrefill, r.OursDecode)
	}
	med3 := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[1] }
	var rp, rd []float64
	for i := range 3 {
		if r.OursPrefill[i] <= 0 || r.OursDecode[i] <= 0 {
			t.Fatalf("ours %v, %v", r.OursPrefill, r.OursDecode)
		}
		rp = append(rp, r.OursPrefill[i]/pp[i])
		rd = append(rd, r.OursDecode[i]/tg[i])
	}
	if r.RatioPrefill != med3(rp) || r.RatioDecode != med3(rd) || r.MedOursPP != med3(r.OursPrefill) || r.MedOursTG != med3(r.OursDecode) {
		t.Errorf("ratios %g, %g (want %g, %g), medians %g, %g", r.RatioPrefill, r.RatioDecode, med3(rp), med3(rd), r.MedOursPP, r.MedOursTG)
	}

	// The text report prints the same medians (a new llama-bench: the
	// first one's calls are used up).
	out.Reset()
	args[4] = fakeLlamaBench(t, model, pp, tg, 0)
	if code := run(context.Background(), cli.Test(&out, &errb), args[1:]); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "200.0") || !strings.Contains(out.String(), "30.0") {
		t.Errorf("text report:\n%s", out.String())
	}

	bad := fakeLlamaBench(t, model, pp, tg, 2)
	errb.Reset()
	args[4] = bad
	code := run(context.Background(), cli.Test(&out, &errb), args)
	if code == 0 || !strings.Contains(errb.String(), model) || !strings.Contains(errb.String(), "failed to load model") {
		t.Fatalf("failing llama-bench: exit %d, %q", code, errb.String())
	}
}

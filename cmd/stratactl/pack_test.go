package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/strata"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), cli.Test(&out, &errb), args)
	return code, out.String(), errb.String()
}

func TestPackVerifyCommands(t *testing.T) {
	dir := t.TempDir()
	syn := filepath.Join(dir, "syn.gguf")
	if code, _, errs := runCmd(t, "synth", "-o", syn, "--layers", "2", "--experts", "4", "--embd", "128", "--ff", "256", "--type", "iq3_s", "--json"); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, errs)
	}
	pack := filepath.Join(dir, "pack")
	code, out, errs := runCmd(t, "pack", syn, "-o", pack, "--json", "-j", "2")
	if code != 0 {
		t.Fatalf("pack: exit %d: %s", code, errs)
	}
	var man strata.Manifest
	if err := json.Unmarshal([]byte(out), &man); err != nil {
		t.Fatalf("pack --json: %v\n%s", err, out)
	}
	if man.Model.Expert != 4 || len(man.Layers) != 2 || man.Parameters.Type != "Q2_0" {
		t.Fatalf("manifest %+v", man)
	}
	if code, out, errs = runCmd(t, "verify", pack, "--source", syn); code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "OK") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
	// One flipped payload byte: exit 1, and the report names the slot.
	xp := filepath.Join(pack, strata.ExpertsFile)
	b, _ := os.ReadFile(xp)
	off := 16384 + 3*int(man.Model.SlotBytes) + 100
	b[off] ^= 1
	os.WriteFile(xp, b, 0o644)
	code, out, _ = runCmd(t, "verify", pack, "--json")
	if code != 1 {
		t.Fatalf("verify of a damaged pack: exit %d", code)
	}
	var rep convert.VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Failures {
		found = found || (f.Layer == 0 && f.Expert == 3 && f.Check == "experts.slots")
	}
	if rep.OK || !found {
		t.Fatalf("damage not located: %+v", rep.Failures)
	}
	code, out, _ = runCmd(t, "verify", pack, "--source", syn)
	if code != 1 || !strings.Contains(out, "FAILED") || !strings.Contains(out, fmt.Sprintf("byte %d: layer 0 expert 3 part gate", off)) {
		t.Fatalf("text report: exit %d\n%s", code, out)
	}
	// An existing output is refused with exit 1 and a message.
	if code, _, errs = runCmd(t, "pack", syn, "-o", pack); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("pack over an existing folder: exit %d %s", code, errs)
	}
}

func TestQuantizeCommand(t *testing.T) {
	in := testutil.TinyModel(t, "model-iq4nl.gguf")
	out := filepath.Join(t.TempDir(), "q8.gguf")
	code, stdout, errs := runCmd(t, "quantize", in, "-o", out, "--type", "q8_0", "--tensors", `blk\.0\.ffn_`, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res convert.QuantizeResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	// blk.0.ffn_norm is 1-D and ffn_gate_inp is F32 2-D: it is converted too.
	if res.Converted != 4 {
		t.Fatalf("converted %d tensors: %+v", res.Converted, res.Tensors)
	}
	if code, _, errs = runCmd(t, "quantize", in, "-o", out+"2", "--type", "q9_9"); code != 1 || !strings.Contains(errs, "unknown ggml type") {
		t.Fatalf("bad type: exit %d %s", code, errs)
	}
	if code, _, _ = runCmd(t, "verify", out, "--source", in); code != 0 {
		t.Fatalf("verify of the quantized file failed")
	}
}

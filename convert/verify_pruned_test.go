package convert

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// TestVerifyPackOfPrunedAgainstEither packs a pruned tiny-qwen3moe (16 of
// 32 experts) with the original model's importance matrix and verifies the
// pack against both models: against the pruned GGUF, the file the manifest
// records; against the original, whose hash it is not, through keep.strp's
// original ids, saying which file the pack was made from. The truth the
// comparison stands on: the pack's experts file is byte for byte the one
// `pack ORIGINAL --keep-map` with those ids writes. Against the original,
// verify still finds a damaged slot; against another model of the same
// expert count (the IQ4_NL file: same dense tensors, other experts) it
// fails on the experts, and against a model of neither count it refuses,
// naming the pruned file and both choices.
func TestVerifyPackOfPrunedAgainstEither(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	model, pruned, keep := prunedTiny(t, dir)
	imat := testutil.TinyModel(t, "imatrix.gguf")
	pack := filepath.Join(dir, "pack")
	if _, err := Pack(ctx, PackConfig{In: pruned, OutDir: pack, Type: quant.Q2_0, Imatrix: imat, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	kp := writeKeepFile(t, dir, "keep16.strp", keep)
	direct := filepath.Join(dir, "pack-direct")
	if _, err := Pack(ctx, PackConfig{In: model, OutDir: direct, Type: quant.Q2_0, Keep: kp, Imatrix: imat, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	experts := readAll(t, filepath.Join(pack, strata.ExpertsFile))
	if !bytes.Equal(experts, readAll(t, filepath.Join(direct, strata.ExpertsFile))) {
		t.Fatalf("the pack of the pruned GGUF and the pack of the original through the same experts differ in %s", strata.ExpertsFile)
	}

	verify := func(source string) *VerifyReport {
		t.Helper()
		r, err := Verify(ctx, VerifyConfig{Path: pack, Source: source, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := verify(pruned)
	if !r.OK || r.SourceMadeFrom != "" || r.Slots != 64 || len(r.Layers) != 4 {
		t.Errorf("verify --source the pruned GGUF: ok %v, made from %q, %d slots, %d layers compared: %+v", r.OK, r.SourceMadeFrom, r.Slots, len(r.Layers), r.Failures)
	}
	r = verify(model)
	abs, _ := filepath.Abs(pruned)
	if !r.OK || r.SourceMadeFrom != abs || r.Slots != 64 || len(r.Layers) != 4 {
		t.Errorf("verify --source the original: ok %v, made from %q (want %q), %d slots, %d layers compared: %+v", r.OK, r.SourceMadeFrom, abs, r.Slots, len(r.Layers), r.Failures)
	}
	for _, c := range r.Checks {
		if c.Name == "manifest" && !strings.Contains(c.Detail, abs) {
			t.Errorf("the manifest check does not name the file the pack was made from: %q", c.Detail)
		}
	}
	other := verify(testutil.TinyModel(t, "model-iq4nl.gguf"))
	if other.OK || !hasFailure(other, "experts.slots", "") {
		t.Errorf("verify --source another model of 32 experts: ok %v, failures %+v; want the experts to differ", other.OK, other.Failures)
	}
	neither := verify(testutil.Path(t, "models", "tiny-qwen35moe", "model-bf16.gguf"))
	if neither.OK || !hasFailure(neither, "manifest", abs) || !hasFailure(neither, "manifest", "or the original model it was pruned from (32 experts") {
		t.Errorf("verify --source a model of 64 experts: %+v; want a manifest failure naming %s and the original's 32 experts", neither.Failures, abs)
	}

	// A damaged byte in slot 5 (layer 0, expert 5): found against the
	// original, at that slot.
	x, err := strata.OpenExperts(filepath.Join(pack, strata.ExpertsFile))
	if err != nil {
		t.Fatal(err)
	}
	off := x.Table[5].Offset + 100
	x.Close()
	experts[off] ^= 0x10
	if err := os.WriteFile(filepath.Join(pack, strata.ExpertsFile), experts, 0o644); err != nil {
		t.Fatal(err)
	}
	r = verify(model)
	found := false
	for _, f := range r.Failures {
		if f.Check == "experts.slots" && f.Layer == int(keep.Layers[0]) && f.Expert == 5 {
			found = true
		}
	}
	if r.OK || !found {
		t.Errorf("verify --source the original of a pack with slot 5 damaged: %+v; want a finding at layer %d expert 5", r.Failures, keep.Layers[0])
	}
}

func hasFailure(r *VerifyReport, check, msg string) bool {
	for _, f := range r.Failures {
		if f.Check == check && strings.Contains(f.String(), msg) {
			return true
		}
	}
	return false
}

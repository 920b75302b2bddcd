package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testmodels"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/prune"
	"github.com/stratactl/stratactl/strata"
)

// TestMTPAndFusedPipeline: on the qwen35moe fixture rewritten with fused
// gate_up experts and an MTP block, inspect says both, profile and the keep
// map list the same layers (the MTP block in neither) whether prune drops
// the block or carries it, and the pack decodes the tokens of the plain
// fixture with a quarter of its experts resident.
func TestMTPAndFusedPipeline(t *testing.T) {
	dir := t.TempDir()
	plain := testmodels.Qwen35(t)
	model := testmodels.Write(t, plain, dir, testmodels.Variant{Fuse: true, MTP: true})
	ins := decode[gguf.InspectReport](t, stratactl(t, "inspect", model, "--json"))
	if ins.MoE.Layers != 4 || !ins.MoE.FusedGateUp || !slices.Equal(ins.MoE.MTPBlocks, []int{4}) {
		t.Errorf("inspect: %+v", ins.MoE)
	}
	prof := filepath.Join(dir, "profile.strp")
	stratactl(t, "profile", model, "--ids", testutil.Path(t, "models", "tiny-qwen35moe", "calib_tokens.i32.bin"), "--ctx", "256", "--max-tokens", "512", "-o", prof)
	p, err := strata.ReadKeep(prof)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint32{0, 1, 2, 3}
	if !slices.Equal(p.Layers, want) {
		t.Errorf("profile layers %v, want %v", p.Layers, want)
	}
	for _, carry := range []bool{false, true} {
		out := filepath.Join(dir, map[bool]string{false: "dropped.gguf", true: "carried.gguf"}[carry])
		args := []string{"prune", model, "--profile", prof, "--keep", "32", "-o", out, "--json"}
		if carry {
			args = append(args, "--carry-mtp")
		}
		r := decode[prune.Report](t, stratactl(t, args...))
		if r.MTP == nil || r.MTP.Carried != carry || !slices.Equal(r.MTP.Blocks, []int{4}) {
			t.Errorf("prune carry %v: mtp %+v", carry, r.MTP)
		}
		k, err := strata.ReadKeep(r.KeepMap)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(k.Layers, p.Layers) {
			t.Errorf("prune carry %v: keep map layers %v, profile's %v", carry, k.Layers, p.Layers)
		}
	}
	pack := filepath.Join(dir, "pack")
	stratactl(t, "pack", model, "--keep-map", filepath.Join(dir, "dropped.keep.strp"), "-o", pack)
	ref := filepath.Join(dir, "ref-pack")
	stratactl(t, "pack", plain, "--keep-map", filepath.Join(dir, "dropped.keep.strp"), "-o", ref)
	type runOut struct {
		IDs []int32 `json:"generated_ids"`
	}
	got := decode[runOut](t, stratactl(t, "run", pack, "--prompt", "def main(", "-n", "12", "--arena-mb", "0.5", "--json"))
	exp := decode[runOut](t, stratactl(t, "run", ref, "--prompt", "def main(", "-n", "12", "--json"))
	if len(got.IDs) != 12 || !slices.Equal(got.IDs, exp.IDs) {
		t.Errorf("the fused MTP model's pack decodes %v, the plain model's %v", got.IDs, exp.IDs)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/prune"
	"github.com/stratactl/stratactl/strata"
)

// stratactl runs the command line in-process and returns stdout, failing the
// test on a non-zero exit.
func stratactl(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), args); code != 0 {
		t.Fatalf("stratactl %v: exit %d: %s", args, code, errb.String())
	}
	return out.Bytes()
}

// stratactlFails runs a command line that must fail and returns its stderr.
func stratactlFails(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), args); code == 0 {
		t.Fatalf("stratactl %v succeeded, want an error", args)
	}
	return errb.String()
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return v
}

// TestProfilePruneEval runs the three verbs as a user would: profile two
// calibration windows, prune to 16 experts by frequency, re-apply the keep
// map, and evaluate the pruned model against itself.
func TestProfilePruneEval(t *testing.T) {
	dir := t.TempDir()
	model := testutil.TinyModel(t, "model-bf16.gguf")
	calib := testutil.TinyModel(t, "calib_tokens.i32.bin")
	prof := filepath.Join(dir, "profile.strp")
	rep := decode[profile.Report](t, stratactl(t, "profile", model, "--ids", calib, "--ctx", "256", "--max-tokens", "600", "-o", prof, "--json"))
	if rep.Tokens != 512 || rep.Windows != 2 || rep.NExpert != 32 || len(rep.Layers) != 4 {
		t.Fatalf("profile report %+v", rep)
	}
	pk, err := strata.ReadKeep(prof)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := profile.FromKeep(pk, prof)
	if err != nil {
		t.Fatal(err)
	}
	for l := range stats.Blocks {
		var sum int64
		for _, c := range stats.Count[l] {
			sum += c
		}
		if sum != 512*4 {
			t.Errorf("layer %d: %d routed slots, want 512 tokens × 4", l, sum)
		}
	}
	// The same profile with one matmul thread is the same file.
	prof1 := filepath.Join(dir, "profile-j1.strp")
	stratactl(t, "profile", model, "--ids", calib, "--ctx", "256", "--max-tokens", "600", "-o", prof1, "-j", "1")
	if a, b := mustRead(t, prof), mustRead(t, prof1); !bytes.Equal(a, b) {
		t.Error("profile differs between thread counts")
	}

	pruned := filepath.Join(dir, "pruned.gguf")
	pr := decode[prune.Report](t, stratactl(t, "prune", model, "--profile", prof, "--keep", "16", "--by", "frequency", "-o", pruned, "--json"))
	if pr.KeepMap != filepath.Join(dir, "pruned.keep.strp") || pr.NKeep != 16 || pr.NExpert != 32 {
		t.Fatalf("prune report %+v", pr)
	}
	// Independently: the 16 most used experts of each layer, ties to the
	// lower id.
	for l := range stats.Blocks {
		ids := make([]int, 32)
		for i := range ids {
			ids[i] = i
		}
		sort.SliceStable(ids, func(a, b int) bool { return stats.Count[l][ids[a]] > stats.Count[l][ids[b]] })
		want := slices.Clone(ids[:16])
		slices.Sort(want)
		got := make([]int, len(pr.Keep[l]))
		for i, e := range pr.Keep[l] {
			got[i] = int(e)
		}
		if !slices.Equal(got, want) {
			t.Errorf("layer %d keeps %v, want %v", l, pr.Keep[l], want)
		}
	}
	km, err := strata.ReadKeep(pr.KeepMap)
	if err != nil {
		t.Fatal(err)
	}
	if km.NKeep() != 16 || km.NRank() != 16 || km.Stats == nil {
		t.Errorf("keep map keeps %d, ranks %d, stats %v", km.NKeep(), km.NRank(), km.Stats != nil)
	}
	f, err := gguf.Open(pruned)
	if err != nil {
		t.Fatal(err)
	}
	moe, err := f.MoE()
	if err != nil || moe.Experts != 16 || moe.ExpertsUsed != 4 {
		t.Errorf("pruned model: %v experts, %v used, err %v", moe.Experts, moe.ExpertsUsed, err)
	}
	f.Close()

	// Applying the written keep map gives the same tensors.
	again := filepath.Join(dir, "again.gguf")
	stratactl(t, "prune", model, "--keep-map", pr.KeepMap, "-o", again)
	if a, b := dataSection(t, pruned), dataSection(t, again); !bytes.Equal(a, b) {
		t.Error("--keep-map with the written keep map gives different tensors")
	}
	// With the profile as well, it reports what the kept experts serve: by
	// frequency, at least half of the routed slots.
	rr := decode[prune.Report](t, stratactl(t, "prune", model, "--keep-map", pr.KeepMap, "--profile", prof, "-o", again, "--json"))
	if len(rr.Retained) != 4 || rr.RetainedMean == nil || rr.RetainedMean.Count < 0.5 || rr.RetainedMean.Count > 1 {
		t.Errorf("retained %+v mean %+v", rr.Retained, rr.RetainedMean)
	}

	// A model against itself: KLD 0 and agreement 1 exactly.
	ev := decode[evalq.Report](t, stratactl(t, "eval", pruned, "--ref", pruned, "--ids", testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin"), "--ctx", "128", "--chunks", "1", "--exact", "--json"))
	if ev.Tokens != 127 || ev.KLDMean != 0 || ev.KLDMedian != 0 || ev.Top1Agreement != 1 || ev.PPL != ev.PPLRef {
		t.Errorf("self evaluation %+v", ev.Result)
	}
}

func TestPruneRefuses(t *testing.T) {
	dir := t.TempDir()
	model := testutil.TinyModel(t, "model-bf16.gguf")
	s := profile.NewStats([]int{0, 1, 2, 3}, 32)
	for l := range 4 {
		for e := range 32 {
			s.Count[l][e] = int64(e + 1)
			s.EAN[l][e] = float64(e + 1)
		}
	}
	prof := filepath.Join(dir, "p.strp")
	if err := strata.WriteKeep(prof, s.Keep()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.gguf")
	stratactlFails(t, "prune", model, "--profile", prof, "--keep", "3", "-o", out)  // below expert_used_count
	stratactlFails(t, "prune", model, "--profile", prof, "--keep", "33", "-o", out) // more than there are
	stratactlFails(t, "prune", model, "--profile", prof, "-o", out)                 // no --keep
	stratactlFails(t, "prune", model, "--profile", prof, "--keep", "8", "--by", "x", "-o", out)
	stratactlFails(t, "prune", model, "--keep-map", prof, "--keep", "8", "-o", out) // both ways
	stratactlFails(t, "prune", model, "-o", out)                                    // neither
	os.WriteFile(filepath.Join(dir, "bad.strp"), []byte("STRPxxxx"), 0o644)
	if msg := stratactlFails(t, "prune", model, "--keep-map", filepath.Join(dir, "bad.strp"), "-o", out); !bytes.Contains([]byte(msg), []byte("bad.strp")) {
		t.Errorf("error does not name the file: %s", msg)
	}
	// A profile of other layers.
	other := profile.NewStats([]int{0, 1}, 32)
	if err := strata.WriteKeep(prof, other.Keep()); err != nil {
		t.Fatal(err)
	}
	stratactlFails(t, "prune", model, "--profile", prof, "--keep", "8", "-o", out)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "p.strp" && e.Name() != "bad.strp" {
			t.Errorf("refused prune left %s behind", e.Name())
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dataSection(t *testing.T, path string) []byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, f.Size-f.DataOffset)
	if _, err := f.ReaderAt().ReadAt(b, f.DataOffset); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPrunedModelWithTheToolchain: inspect reads K experts back from a
// pruned GGUF; a pack made from it verifies; and pruning then packing gives
// the same expert slots as packing with the keep map (pack --keep), so the two
// routes agree on what a keep map means.
func TestPrunedModelWithTheToolchain(t *testing.T) {
	dir := t.TempDir()
	model := testutil.TinyModel(t, "model-bf16.gguf")
	s := profile.NewStats([]int{0, 1, 2, 3}, 32)
	for l := range 4 {
		for e := range 32 {
			// A different order per layer.
			s.Count[l][e] = int64((e*(5+2*l))%32 + 1)
			s.EAN[l][e] = float64(s.Count[l][e])
		}
	}
	prof := filepath.Join(dir, "p.strp")
	if err := strata.WriteKeep(prof, s.Keep()); err != nil {
		t.Fatal(err)
	}
	pruned := filepath.Join(dir, "pruned.gguf")
	pr := decode[prune.Report](t, stratactl(t, "prune", model, "--profile", prof, "--keep", "8", "-o", pruned, "--json"))

	var ins struct {
		MoE struct {
			Experts     int `json:"experts"`
			ExpertsUsed int `json:"experts_used"`
			Layers      int `json:"layers"`
		} `json:"moe"`
	}
	if err := json.Unmarshal(stratactl(t, "inspect", pruned, "--json"), &ins); err != nil {
		t.Fatal(err)
	}
	if ins.MoE.Experts != 8 || ins.MoE.ExpertsUsed != 4 || ins.MoE.Layers != 4 {
		t.Errorf("inspect sees %+v, want 8 experts, 4 used, 4 layers", ins.MoE)
	}

	packA, packB := filepath.Join(dir, "packA"), filepath.Join(dir, "packB")
	stratactl(t, "pack", pruned, "-o", packA)
	stratactl(t, "pack", model, "--keep-map", pr.KeepMap, "-o", packB)
	for _, p := range []string{packA, packB} {
		var v struct {
			OK bool `json:"ok"`
		}
		if err := json.Unmarshal(stratactl(t, "verify", p, "--json"), &v); err != nil || !v.OK {
			t.Errorf("verify %s: ok %v, err %v", p, v.OK, err)
		}
	}
	if a, b := mustRead(t, filepath.Join(packA, "model.experts")), mustRead(t, filepath.Join(packB, "model.experts")); !bytes.Equal(a, b) {
		t.Error("prune then pack and pack --keep give different expert slots")
	}
	// The pack computes what the pruned GGUF quantized to Q2_0 computes.
	q2 := filepath.Join(dir, "pruned-q2.gguf")
	stratactl(t, "quantize", pruned, "--type", "q2_0", "-o", q2)
	ev := decode[evalq.Report](t, stratactl(t, "eval", packB, "--ref", q2, "--ids", testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin"), "--ctx", "128", "--chunks", "1", "--exact", "--json"))
	if ev.KLDMean != 0 || ev.Top1Agreement != 1 || ev.PPL != ev.PPLRef {
		t.Errorf("pack --keep against prune + quantize: %+v", ev.Result)
	}
}

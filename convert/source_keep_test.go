package convert

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/prune"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// TestPackOfPrunedKeepsSourceIDs prunes tiny-qwen3moe 32 -> 16 experts (a
// different set per layer) and packs the pruned GGUF, whole and through a
// keep map of its own: each pack's keep.strp and strata.source.n_expert
// describe the original model, its experts file is byte-identical to the
// pack made from the original with the equivalent keep map, and verify
// --source the pruned GGUF passes.
func TestPackOfPrunedKeepsSourceIDs(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	model, pruned, keep := prunedTiny(t, dir)
	kp := writeKeepFile(t, dir, "k16.strp", keep)
	pf, pm := openMoEFile(t, pruned)
	rec, err := strata.SourceKeep(pf, pm)
	pf.Close()
	if err != nil || rec == nil || rec.NExpert != 32 || !slices.EqualFunc(rec.Keep, keep.Keep, slices.Equal) {
		t.Fatalf("the pruned GGUF records %+v (err %v), want the keep map %v", rec, err, keep.Keep)
	}

	// A keep map of the pruned model (8 of its 16) and what it is over the
	// original experts.
	local := strata.IdentityKeep(keep.Layers, 16)
	local.Rank = nil
	want := &strata.Keep{NExpert: 32, Layers: keep.Layers}
	for l := range local.Keep {
		var ids, orig []uint32
		for i := 0; i < 16; i += 2 {
			ids = append(ids, uint32(i+l%2))
			orig = append(orig, keep.Keep[l][i+l%2])
		}
		local.Keep[l] = ids
		want.Keep = append(want.Keep, orig)
	}
	lp := writeKeepFile(t, dir, "local8.strp", local)
	wp := writeKeepFile(t, dir, "orig8.strp", want)

	for _, c := range []struct {
		name            string
		pruneKeep, keep string // the pack of the pruned GGUF, and of the original
		wantKeep        *strata.Keep
	}{{"whole", "", kp, keep}, {"keep-map", lp, wp, want}} {
		a, b := filepath.Join(dir, c.name+"-pruned-pack"), filepath.Join(dir, c.name+"-pack")
		if _, err := Pack(ctx, PackConfig{In: pruned, OutDir: a, Type: quant.Q2_0, Keep: c.pruneKeep, Jobs: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := Pack(ctx, PackConfig{In: model, OutDir: b, Type: quant.Q2_0, Keep: c.keep, Jobs: 2}); err != nil {
			t.Fatal(err)
		}
		k, err := strata.ReadKeep(filepath.Join(a, strata.KeepFile))
		if err != nil {
			t.Fatal(err)
		}
		if k.NExpert != 32 || !slices.Equal(k.Layers, c.wantKeep.Layers) || !slices.EqualFunc(k.Keep, c.wantKeep.Keep, slices.Equal) {
			t.Errorf("%s: keep.strp keeps %v of %d, want %v of 32", c.name, k.Keep, k.NExpert, c.wantKeep.Keep)
		}
		mf, err := gguf.Open(filepath.Join(a, strata.ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		n, err := mf.Uint32(strata.KeySourceNExpert)
		mf.Close()
		if err != nil || n != 32 {
			t.Errorf("%s: %s = %d (%v), want 32", c.name, strata.KeySourceNExpert, n, err)
		}
		if !bytes.Equal(readAll(t, filepath.Join(a, strata.ExpertsFile)), readAll(t, filepath.Join(b, strata.ExpertsFile))) {
			t.Errorf("%s: the pack of the pruned GGUF and the pack of the original through the same experts differ in %s", c.name, strata.ExpertsFile)
		}
		for _, v := range []VerifyConfig{{Path: a}, {Path: a, Source: pruned}} {
			r, err := Verify(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			if !r.OK {
				t.Errorf("%s: verify %s --source %q: %+v", c.name, v.Path, v.Source, r.Failures)
			}
		}
	}

	// Pruning the pruned GGUF records the original experts too.
	pruned2 := filepath.Join(dir, "pruned2.gguf")
	pf, _ = openMoEFile(t, pruned)
	_, err = prune.Write(ctx, pf, local, pruned2, prune.Options{})
	pf.Close()
	if err != nil {
		t.Fatal(err)
	}
	pf2, pm2 := openMoEFile(t, pruned2)
	defer pf2.Close()
	if rec, err := strata.SourceKeep(pf2, pm2); err != nil || rec == nil || rec.NExpert != 32 || !slices.EqualFunc(rec.Keep, want.Keep, slices.Equal) {
		t.Errorf("the twice-pruned GGUF records %+v (err %v), want %v of 32", rec, err, want.Keep)
	}
}

func writeKeepFile(t *testing.T, dir, name string, k *strata.Keep) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := strata.WriteKeep(p, k); err != nil {
		t.Fatal(err)
	}
	return p
}

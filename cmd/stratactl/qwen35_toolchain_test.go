package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/internal/testmodels"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/prune"
	"github.com/stratactl/stratactl/strata"
)

// TestQwen35Toolchain runs issue 12's pipeline on the qwen35moe fixture as a
// user would: profile, prune 64 -> 32 experts by each criterion (every
// layer's keep set the 32 best by that criterion's statistic, computed here
// from the profile, ties to the lower id), pack to Q2_0 without a keep map
// and with one, verify each pack against its source, run each with a
// quarter of its slots in the arena and with all (the same tokens and logit
// bits), and evaluate both packs against the BF16 model.
func TestQwen35Toolchain(t *testing.T) {
	dir := t.TempDir()
	model := testmodels.Qwen35(t)
	M := func(elem ...string) string {
		return testutil.Path(t, append([]string{"models", "tiny-qwen35moe"}, elem...)...)
	}
	prof := filepath.Join(dir, "profile.strp")
	stratactl(t, "profile", model, "--ids", M("calib_tokens.i32.bin"), "--ctx", "256", "--max-tokens", "512", "--exact", "-o", prof)
	pk, err := strata.ReadKeep(prof)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := profile.FromKeep(pk, prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Blocks) != 4 || stats.NExpert != 64 {
		t.Fatalf("profile of %d layers x %d experts", len(stats.Blocks), stats.NExpert)
	}
	score := map[prune.Criterion]func(l, e int) float64{
		prune.REAP:      stats.REAP,
		prune.Frequency: func(l, e int) float64 { return float64(stats.Count[l][e]) },
		prune.EAN:       func(l, e int) float64 { return stats.EAN[l][e] },
	}
	keepMaps := map[prune.Criterion]string{}
	for _, c := range prune.Criteria {
		out := filepath.Join(dir, string(c)+"32.gguf")
		r := decode[prune.Report](t, stratactl(t, "prune", model, "--profile", prof, "--keep", "32", "--by", string(c), "-o", out, "--json"))
		for l := range stats.Blocks {
			ids := make([]int, 64)
			for i := range ids {
				ids[i] = i
			}
			sort.SliceStable(ids, func(a, b int) bool { return score[c](l, ids[a]) > score[c](l, ids[b]) })
			want := slices.Clone(ids[:32])
			slices.Sort(want)
			got := make([]int, len(r.Keep[l]))
			for i, e := range r.Keep[l] {
				got[i] = int(e)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: layer %d keeps %v, want %v", c, l, got, want)
			}
		}
		var ins struct {
			MoE struct {
				Experts     int `json:"experts"`
				ExpertsUsed int `json:"experts_used"`
			} `json:"moe"`
		}
		if err := json.Unmarshal(stratactl(t, "inspect", out, "--json"), &ins); err != nil || ins.MoE.Experts != 32 || ins.MoE.ExpertsUsed != 6 {
			t.Errorf("%s: the pruned model has %d experts, %d used (err %v)", c, ins.MoE.Experts, ins.MoE.ExpertsUsed, err)
		}
		keepMaps[c] = r.KeepMap
	}

	klds := map[string]float64{}
	for _, pc := range []struct {
		name string
		args []string
		keep int
	}{
		{"all experts", nil, 64},
		{"frequency 32", []string{"--keep-map", keepMaps[prune.Frequency]}, 32},
	} {
		pack := filepath.Join(dir, "pack-"+strconv.Itoa(pc.keep))
		man := decode[strata.Manifest](t, stratactl(t, append([]string{"pack", model, "-o", pack, "--json"}, pc.args...)...))
		if man.Model.Expert != pc.keep || man.Parameters.Type != "Q2_0" {
			t.Fatalf("%s: pack of %d experts of %s", pc.name, man.Model.Expert, man.Parameters.Type)
		}
		var v struct {
			OK bool `json:"ok"`
		}
		if err := json.Unmarshal(stratactl(t, append([]string{"verify", pack, "--source", model, "--json"}, pc.args...)...), &v); err != nil || !v.OK {
			t.Errorf("%s: verify --source: ok %v, err %v", pc.name, v.OK, err)
		}
		slots := len(man.Layers) * pc.keep
		quarter := float64(slots/4) * float64(man.Model.SlotBytes) / (1 << 20)
		decodeRun := func(arenaMB float64) (engine.RunReport, []byte) {
			lf := filepath.Join(dir, "logits-"+strconv.Itoa(pc.keep)+"-"+strconv.FormatFloat(arenaMB, 'g', -1, 64))
			r := decode[engine.RunReport](t, stratactl(t, "run", pack, "--prompt", "def main(", "-n", "16", "--exact",
				"--arena-mb", strconv.FormatFloat(arenaMB, 'g', -1, 64), "--logits", lf, "--json"))
			b, err := os.ReadFile(lf)
			if err != nil {
				t.Fatal(err)
			}
			return r, b
		}
		all, allLogits := decodeRun(0)
		part, partLogits := decodeRun(quarter)
		if s := part.Stream; s == nil || s.ArenaSlots != slots/4 || s.TotalSlots != slots || s.Counters.Misses == 0 {
			t.Fatalf("%s: quarter arena run: %+v", pc.name, part.Stream)
		}
		if s := all.Stream; s == nil || s.ArenaSlots != s.TotalSlots || s.Counters.Misses != 0 {
			t.Fatalf("%s: all-resident run: %+v", pc.name, all.Stream)
		}
		if len(all.GeneratedIDs) != 16 || !slices.Equal(part.GeneratedIDs, all.GeneratedIDs) {
			t.Errorf("%s: a quarter arena decodes %v, all resident %v", pc.name, part.GeneratedIDs, all.GeneratedIDs)
		}
		if len(allLogits) == 0 || !bytes.Equal(partLogits, allLogits) {
			t.Errorf("%s: logits through a quarter arena differ from all resident", pc.name)
		}
		ev := decode[evalq.Report](t, stratactl(t, "eval", pack, "--ref", model, "--ids", M("refs", "ppl_tokens.i32.bin"),
			"--ctx", "256", "--chunks", "1", "--exact", "--json"))
		if ev.Tokens != 255 || !(ev.KLDMean > 0) || math.IsInf(ev.KLDMean, 0) || !(ev.Top1Agreement > 0 && ev.Top1Agreement < 1) {
			t.Errorf("%s: eval against BF16: %+v", pc.name, ev.Result)
		}
		klds[pc.name] = ev.KLDMean
	}
	// Halving the experts on top of Q2_0 costs more than Q2_0 alone (as in
	// docs/QUALITY.md's table over all 64 windows).
	if !(klds["frequency 32"] > klds["all experts"]) {
		t.Errorf("mean KLD against BF16: Q2_0 %g, frequency 32 + Q2_0 %g", klds["all experts"], klds["frequency 32"])
	}
	t.Logf("mean KLD against BF16 over one window: %v", klds)
}

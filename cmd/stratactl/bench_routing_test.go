package main

import (
	"strconv"
	"testing"

	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestBenchRouting: each row is what eval through the store gives for the
// same arena and routing, and the row without a bonus matches the
// all-resident pack exactly.
func TestBenchRouting(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	ids := testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin")
	rep := decode[evalq.RoutingReport](t, stratactl(t, "bench", "routing", dir, "--ids", ids, "--ctx", "40", "--chunks", "2",
		"--arenas", "0.25", "--bonuses", "1.5", "--exact-picks", "1", "--json"))
	if len(rep.Rows) != 2 || rep.Tokens != 80 {
		t.Fatalf("%d rows over %d tokens: %+v", len(rep.Rows), rep.Tokens, rep)
	}
	plain, bonus := rep.Rows[0], rep.Rows[1]
	if plain.Bonus != nil || plain.KLDMean != 0 || plain.Top1 != 1 || plain.ArenaSlots != rep.TotalSlots/4 {
		t.Errorf("no bonus: %+v", plain)
	}
	if bonus.Bonus == nil || *bonus.Bonus != 1.5 || *bonus.ExactPicks != 1 || bonus.KLDMean <= 0 {
		t.Errorf("bonus: %+v", bonus)
	}
	for _, r := range rep.Rows {
		args := []string{"eval", dir, "--ref", dir, "--ids", ids, "--ctx", "40", "--chunks", "2", "--exact", "--json",
			"--arena-mb", strconv.FormatFloat(r.ArenaMB, 'g', -1, 64)}
		if r.Bonus != nil {
			args = append(args, "--cache-bonus", "1.5", "--exact-picks", "1")
		}
		ev := decode[evalq.Report](t, stratactl(t, args...))
		if ev.KLDMean != r.KLDMean || ev.Top1Agreement != r.Top1 || ev.Stream.HitRate != r.HitRate ||
			*ev.Stream.BeladyHitRate != r.BeladyHit || ev.Stream.MissesPerToken != r.MissesPerT || ev.Stream.ArenaSlots != r.ArenaSlots {
			t.Errorf("row %+v; eval gives KLD %v top-1 %v hit rate %v Belady %v misses %v in %d slots", r,
				ev.KLDMean, ev.Top1Agreement, ev.Stream.HitRate, *ev.Stream.BeladyHitRate, ev.Stream.MissesPerToken, ev.Stream.ArenaSlots)
		}
	}
	for _, bad := range [][]string{
		{"bench", "routing", dir, "--ids", ids, "--arenas", "0"},
		{"bench", "routing", dir, "--ids", ids, "--arenas", "1.5"},
		{"bench", "routing", dir, "--ids", ids, "--exact-picks", "-1"},
		{"bench", "routing", testutil.TinyModel(t, "model-iq3s.gguf"), "--ids", ids},
	} {
		stratactlFails(t, bad...)
	}
}

package main

import (
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestEvalThroughStore: a pack evaluated through a small arena, token by
// token, against the same pack all resident: with no bonus the logits are
// the same bits (KLD exactly 0, every top-1 agrees) and only the store's
// figures differ; with a bonus the candidate routes differently (KLD > 0);
// the trace replays to the reported counters.
func TestEvalThroughStore(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	ids := testutil.TinyModel(t, "refs", "ppl_tokens.i32.bin")
	trace := filepath.Join(t.TempDir(), "eval.strc")
	args := []string{"eval", dir, "--ref", dir, "--ids", ids, "--ctx", "48", "--chunks", "3", "--arena-mb", "0.6", "--exact", "--json"}
	plain := decode[evalq.Report](t, stratactl(t, append(args, "--trace", trace)...))
	st := plain.Stream
	if st == nil || st.BeladyHitRate == nil || st.ArenaSlots >= st.TotalSlots || st.Tokens != 3*48 {
		t.Fatalf("stream figures %+v", st)
	}
	if plain.KLDMean != 0 || plain.KLDPercentiles[len(plain.KLDPercentiles)-1].Value != 0 || plain.Top1Agreement != 1 || plain.PPL != plain.PPLRef {
		t.Errorf("no bonus through a %d-slot arena: KLD %v, top-1 %v, PPL %v vs %v", st.ArenaSlots, plain.KLDMean, plain.Top1Agreement, plain.PPL, plain.PPLRef)
	}
	if st.HitRate <= 0 || st.HitRate >= 1 || st.MissesPerToken <= 0 || *st.BeladyHitRate < st.HitRate-0.2 {
		t.Errorf("hit rate %v, Belady %v, misses/token %v", st.HitRate, *st.BeladyHitRate, st.MissesPerToken)
	}
	tr, err := cachesim.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	c := st.Counters
	if tr.Live != (cachesim.Counts{Demands: c.Demands, Hits: c.Hits, Misses: c.Misses, ReadAheadHits: c.ReadAheadHits, Guesses: c.Guesses, Reads: c.Reads}) || tr.Tokens != 3*48 {
		t.Errorf("trace counters %+v over %d tokens, eval reported %+v", tr.Live, tr.Tokens, c)
	}
	if own, _ := cachesim.Replay(tr, cachesim.Store, cachesim.Options{}); own != tr.Live {
		t.Errorf("store replay %+v, live %+v", own, tr.Live)
	}
	bonus := decode[evalq.Report](t, stratactl(t, append(args, "--cache-bonus", "1.5", "--exact-picks", "1")...))
	if bonus.KLDMean <= 0 || bonus.CacheBonus == nil || *bonus.ExactPicks != 1 || bonus.Stream == nil {
		t.Errorf("bonus 1.5 after 1 exact pick: KLD %v, report %+v", bonus.KLDMean, bonus.Stream)
	}
	t.Logf("no bonus: hit rate %.3f (MIN %.3f); bonus 1.5: KLD %.5f, top-1 %.3f, hit rate %.3f (MIN %.3f)",
		st.HitRate, *st.BeladyHitRate, bonus.KLDMean, bonus.Top1Agreement, bonus.Stream.HitRate, *bonus.Stream.BeladyHitRate)
	// Bonus 0 through the store changes no pick on this model either.
	zero := decode[evalq.Report](t, stratactl(t, append(args, "--cache-bonus", "0")...))
	if zero.KLDMean != 0 {
		t.Errorf("bonus 0: KLD %v", zero.KLDMean)
	}
	gguf := testutil.TinyModel(t, "model-iq3s.gguf")
	for _, bad := range [][]string{
		{"eval", gguf, "--ref", dir, "--ids", ids, "--ctx", "48", "--chunks", "1", "--arena-mb", "1"},
		{"eval", dir, "--ref", dir, "--ids", ids, "--ctx", "48", "--chunks", "1", "--arena-mb", "-1"},
		{"eval", dir, "--ref", dir, "--ids", ids, "--ctx", "48", "--chunks", "1", "--cache-bonus", "1", "--exact-picks", "-1"},
		{"eval", dir, "--ref", dir, "--ids", ids, "--ctx", "48", "--chunks", "1", "--arena-mb", "0.0001"},
	} {
		stratactlFails(t, bad...)
	}
}

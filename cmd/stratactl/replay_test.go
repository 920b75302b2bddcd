package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestRunTraceReplay: run --trace writes the decode phase's demands; replay
// reproduces run's own counters from it (under the store's rule), and run
// --json's Belady hit rate
// is replay's MIN with read-ahead.
func TestRunTraceReplay(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	ids := writeIDs(t, loadGreedy(t, "refs-iq3s", "greedy.json").PromptIDs)
	trace := filepath.Join(t.TempDir(), "decode.strc")
	rep := runJSON(t, "run", dir, "--ids", ids, "-n", "24", "--arena-mb", "0.6", "--trace", trace)
	st := rep.Stream
	if st == nil || st.BeladyHitRate == nil {
		t.Fatalf("no Belady hit rate: %+v", st)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), []string{"--json", "replay", trace}); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errb.String())
	}
	var r cachesim.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	c := st.Counters
	want := cachesim.Counts{Demands: c.Demands, Hits: c.Hits, Misses: c.Misses, ReadAheadHits: c.ReadAheadHits, Guesses: c.Guesses, Reads: c.Reads}
	if !r.LiveMatches || r.Live.Counts != want || r.Tokens != int64(rep.DecodeSteps) || r.Slots != st.ArenaSlots {
		t.Fatalf("replay %+v, run counted %+v over %d tokens", r, want, rep.DecodeSteps)
	}
	var lru, min *cachesim.Run
	for i := range r.Runs {
		if r.Runs[i].ReadAhead && r.Runs[i].Policy == "store" {
			lru = &r.Runs[i]
		}
		if r.Runs[i].ReadAhead && r.Runs[i].Policy == "min" {
			min = &r.Runs[i]
		}
	}
	if lru == nil || min == nil || lru.Counts != want || min.HitRate != *st.BeladyHitRate || st.HitRate != lru.HitRate {
		t.Fatalf("replay runs %+v, run hit rate %v, Belady %v", r.Runs, st.HitRate, *st.BeladyHitRate)
	}
	// A smaller arena replays too; a larger one than the experts is refused.
	out.Reset()
	if code := run(context.Background(), cli.Test(&out, &errb), []string{"replay", trace, "--slots", "6"}); code != 0 || !strings.Contains(out.String(), "min") {
		t.Fatalf("replay --slots 6: exit %d: %s %s", code, out.String(), errb.String())
	}
	for _, args := range [][]string{{"replay", trace, "--slots", "100000"}, {"replay", dir}, {"run", testutil.TinyModel(t, "model-iq3s.gguf"), "--ids", ids, "--trace", trace + "2"}} {
		if code := run(context.Background(), cli.Test(&out, &errb), args); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
}

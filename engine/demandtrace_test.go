package engine

import (
	"bytes"
	"testing"

	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestTraceReplaysExactly: the replay of a recorded trace under the store's
// rule (cachesim.Store) gives the
// live store's counters exactly, at a quarter and at a tenth of the
// experts, with and without read-ahead and cache-aware routing, over a
// batched prompt (where a Get may start its own read) and single-token
// decode; the trace bytes do not depend on the readers or threads, and MIN
// never misses more than the store's rule or LRU without read-ahead.
func TestTraceReplaysExactly(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:40]
	m0, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb := float64(m0.Stream().SlotBytes()) / (1 << 20)
	total := m0.Stream().Report(StreamCounters{}, StreamCounters{}, 0).TotalSlots
	m0.Close()
	record := func(slots, readers, threads int, noRA bool, routing Routing) ([]byte, *cachesim.Trace) {
		m, err := Open(dir, Options{Threads: threads, Stream: StreamOptions{ArenaMB: sb * float64(slots), Readers: readers, NoReadAhead: noRA}})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ps := m.Stream()
		ps.StartTrace()
		s := m.NewSession()
		s.Routing = routing
		s.MaxBatch = 16
		res, err := s.Generate(t.Context(), tokens, GenerateOptions{MaxTokens: 24})
		if err != nil {
			t.Fatal(err)
		}
		tr := ps.StopTrace(len(tokens) + res.DecodeSteps)
		var b bytes.Buffer
		if _, err := tr.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes(), tr
	}
	claims := 0
	for _, tc := range []struct {
		name    string
		slots   int
		noRA    bool
		routing Routing
	}{
		{"quarter", total / 4, false, Routing{}},
		{"tenth", total / 10, false, Routing{}},
		{"quarter, no read-ahead", total / 4, true, Routing{}},
		{"quarter, bonus 0.85 after 2", total / 4, false, Routing{CacheAware: true, Bonus: 0.85, Exact: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b1, tr := record(tc.slots, 4, 0, tc.noRA, tc.routing)
			b2, _ := record(tc.slots, 1, 1, tc.noRA, tc.routing)
			if !bytes.Equal(b1, b2) {
				t.Errorf("the trace differs between 4 readers and 1 reader, 1 thread")
			}
			if tr.Live.Misses == 0 || tr.Live.Hits == 0 {
				t.Fatalf("live counters %+v: the arena should both hit and miss", tr.Live)
			}
			if tc.noRA == (tr.Live.Guesses > 0) {
				t.Fatalf("live counters %+v with read-ahead %v", tr.Live, !tc.noRA)
			}
			for _, r := range tr.Records {
				if r.Op == cachesim.OpClaim {
					claims++
				}
			}
			parsed, err := cachesim.Parse(b1, "trace")
			if err != nil {
				t.Fatal(err)
			}
			lru, err := cachesim.Replay(parsed, cachesim.Store, cachesim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if lru != tr.Live {
				t.Fatalf("store replay %+v, live %+v", lru, tr.Live)
			}
			min, _ := cachesim.Replay(parsed, cachesim.MIN, cachesim.Options{NoReadAhead: true})
			lruNo, _ := cachesim.Replay(parsed, cachesim.LRU, cachesim.Options{NoReadAhead: true})
			ownNo, _ := cachesim.Replay(parsed, cachesim.Store, cachesim.Options{NoReadAhead: true})
			if min.Misses > lruNo.Misses || min.Misses > ownNo.Misses || min.Demands != lru.Demands {
				t.Errorf("MIN %+v, LRU %+v, the store's rule %+v without read-ahead", min, lruNo, ownNo)
			}
			t.Logf("%d slots of %d: live %+v; with read-ahead: MIN hit rate %.3f, LRU %.3f; without: store %.3f, LRU %.3f, MIN %.3f",
				tc.slots, total, tr.Live, mustHitRate(t, parsed, cachesim.MIN, false), mustHitRate(t, parsed, cachesim.LRU, false), ownNo.HitRate(), lruNo.HitRate(), min.HitRate())
		})
	}
	if claims == 0 {
		t.Errorf("no Get started its own read: the batched prompt should have made some at a tenth of the arena")
	}
}

func mustHitRate(t *testing.T, tr *cachesim.Trace, p cachesim.Policy, noRA bool) float64 {
	c, err := cachesim.Replay(tr, p, cachesim.Options{NoReadAhead: noRA})
	if err != nil {
		t.Fatal(err)
	}
	return c.HitRate()
}

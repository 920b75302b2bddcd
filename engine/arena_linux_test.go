package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// rssAnon is this process's resident anonymous memory in bytes.
func rssAnon(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("RssAnon line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssAnon in /proc/self/status")
	return 0
}

// heapObjects is the Go heap's live and not yet swept objects, in bytes.
func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestArenaOutsideHeap pins the store's memory accounting: the arena is
// resident while the store is open, is not part of the Go heap (so the
// collector's heap goal, twice the live heap, is not doubled by it: on the
// heap, a 12 GB arena let a second 12 GB arena be made before the first was
// collected, and bench decode at the field shape was killed for memory),
// and Close gives it back at once, with no collection.
func TestArenaOutsideHeap(t *testing.T) {
	sp := SynthSpec{Layers: 2, Embd: 1024, Heads: 4, HeadsKV: 2, HeadDim: 64, Experts: 16, ExpertsUsed: 2,
		ExpertFF: 512, Vocab: 300, DenseType: quant.Q8_0, ExpertType: quant.Q8_0, Seed: 5}
	dir := filepath.Join(t.TempDir(), "pack")
	if err := WriteSyntheticPack(dir, sp); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	heap0, rss0 := heapObjects(), rssAnon(t)
	m, err := Open(dir, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	ps := m.Stream()
	if _, err := m.NewSession().Forward([]int32{1, 2, 3}, false); err != nil {
		t.Fatal(err)
	}
	rep := ps.Report(StreamCounters{}, ps.Counters(), 1)
	if rep.ArenaSlots != rep.TotalSlots {
		t.Fatalf("resident arena holds %d of %d slots", rep.ArenaSlots, rep.TotalSlots)
	}
	arena := int64(rep.ArenaSlots) * rep.SlotBytes
	runtime.GC()
	heap1, rss1 := heapObjects(), rssAnon(t)
	t.Logf("arena %d bytes; Go heap +%d, anonymous RSS +%d", arena, heap1-heap0, rss1-rss0)
	if rss1-rss0 < arena*3/4 {
		t.Fatalf("anonymous RSS grew %d bytes with an arena of %d filled", rss1-rss0, arena)
	}
	if heap1-heap0 > arena/4 {
		t.Fatalf("the Go heap grew %d bytes with an arena of %d: the arena is on the heap", heap1-heap0, arena)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if rss2 := rssAnon(t); rss1-rss2 < arena*3/4 {
		t.Fatalf("Close gave back %d bytes of anonymous RSS, the arena is %d", rss1-rss2, arena)
	}
	if _, err := ps.Get(0, 0); err == nil {
		t.Fatal("Get after Close returned an expert")
	}
}

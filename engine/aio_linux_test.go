//go:build linux && (amd64 || arm64)

package engine

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestAIOFaults: a streamed decode whose native AIO reads fail, land short
// or cannot be submitted still reads every expert right (the greedy
// tokens of the reference): failed and short reads are read again with a
// blocking read, and a refused submit hands the store to the reader
// goroutines, which the report says.
func TestAIOFaults(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq4nl.gguf"), dir)
	ref := readGreedy(t, testutil.TinyModel(t, "refs-iq4nl", "greedy.json"))
	for _, c := range []struct {
		name   string
		result func(int64) int64
		submit func(*aioCtx) ([]int, error)
		note   string
	}{
		{name: "failed reads", result: func(int64) int64 { return -int64(syscall.EIO) }},
		{name: "short reads", result: func(res int64) int64 { return max(0, res-512) }},
		{name: "refused submit", submit: func(a *aioCtx) ([]int, error) {
			var refused []int
			for _, cb := range a.ptrs {
				refused = append(refused, int(cb.data))
			}
			a.ptrs = a.ptrs[:0]
			return refused, syscall.EAGAIN
		}, note: "native AIO refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			aioResultFault, aioSubmitFault = c.result, c.submit
			defer func() { aioResultFault, aioSubmitFault = nil, nil }()
			m, err := Open(dir, Options{Mode: Exact, Stream: StreamOptions{ArenaMB: 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ps := m.Stream()
			if !ps.direct {
				t.Skipf("no direct reads here: %s", ps.directNote)
			}
			ids, _ := greedy(t, m, ref.PromptIDs, 8)
			for i := range ids {
				if ids[i] != ref.GeneratedIDs[i] {
					t.Fatalf("step %d: %d, want %d", i, ids[i], ref.GeneratedIDs[i])
				}
			}
			ps.mu.Lock()
			aioOn, readers := ps.aioDepth > 0, ps.readersStarted
			ps.mu.Unlock()
			_, note := ps.Direct()
			if c.note != "" && (aioOn || !readers || !strings.Contains(note, c.note)) {
				t.Fatalf("AIO on %v, readers started %v, note %q; want readers and a note saying %q", aioOn, readers, note, c.note)
			}
			if c.note == "" && (!aioOn || readers || note != "") {
				t.Fatalf("AIO on %v, readers started %v, note %q; want AIO still on", aioOn, readers, note)
			}
			if c := ps.Counters(); c.Reads == 0 {
				t.Fatal("nothing was read")
			}
		})
	}
}

// TestAIOCloseAfterRefusedSubmit: a store closed while the read of a
// refused submit is still under way on its own goroutine closes (the
// reaper, parked with nothing in flight by AIO, is woken when that read
// ends), time after time.
func TestAIOCloseAfterRefusedSubmit(t *testing.T) {
	defer func() { aioSubmitFault = nil }()
	used := m0Used(t)
	for range 20 {
		aioSubmitFault = nil
		m, order := openSmallArenaWith(t, used+4, StreamOptions{})
		ps := m.Stream()
		wantReadMode(t, ps, StreamOptions{})
		aioSubmitFault = func(a *aioCtx) ([]int, error) {
			var refused []int
			for _, cb := range a.ptrs {
				refused = append(refused, int(cb.data))
			}
			a.ptrs = a.ptrs[:0]
			return refused, syscall.EAGAIN
		}
		l := order[0][0]
		m.Experts.Need(l, []int{absent(t, m, l)})
		done := make(chan error, 1)
		go func() { done <- ps.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Close never returned after a refused submit")
		}
	}
}

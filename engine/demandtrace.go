package engine

import (
	"fmt"
	"slices"
	"sort"

	"github.com/stratactl/stratactl/cachesim"
)

// traceRec collects a PackStore's calls as a cachesim trace; its methods
// run with the store's mutex held.
type traceRec struct {
	t    *cachesim.Trace
	from StreamCounters
	keys []int32
}

func (r *traceRec) add(op cachesim.Op, layer int, ids []int) {
	E := int32(r.t.Experts)
	r.keys = r.keys[:0]
	for _, e := range ids {
		r.keys = append(r.keys, int32(layer)*E+int32(e))
	}
	r.t.Append(op, r.keys)
}

// claimed records a Get that started the read of key itself, with the
// experts pinned at that moment.
func (r *traceRec) claimed(s *PackStore, key int) {
	r.keys = append(r.keys[:0], int32(key))
	var pinned []int32
	for i := range s.slots {
		if sl := &s.slots[i]; sl.pins > 0 && sl.key >= 0 {
			pinned = append(pinned, int32(sl.key))
		}
	}
	slices.Sort(pinned)
	r.t.Append(cachesim.OpClaim, append(r.keys, pinned...))
}

// StartTrace starts recording the store's demands (cachesim's trace): the
// arena's content now is the trace's start. The trace grows by a few
// bytes per expert demanded until StopTrace. Replays are exact for one
// session at a time, which is how run and eval use a store.
func (s *PackStore) StartTrace() {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &cachesim.Trace{Layers: s.cfg.Layers, Experts: s.cfg.Experts, Slots: len(s.slots), ReadAhead: s.readAhead}
	var order []int
	for i := range s.slots {
		// A trace starts with no expectation pending (between batches
		// every guessed layer has had its Need; this makes it so after a
		// failed one too).
		s.slots[i].want = false
		if s.slots[i].key >= 0 && s.slots[i].state != slotFailed {
			order = append(order, i)
		}
	}
	// The first to be evicted first (plain LRU replays start from this
	// order).
	keep := func(k int) int64 { return cachesim.Keep(s.keyLast[k], s.keyUses[k], s.useWeight) }
	sort.Slice(order, func(a, b int) bool {
		ka, kb := s.slots[order[a]].key, s.slots[order[b]].key
		return cachesim.Before(ka, keep(ka), kb, keep(kb))
	})
	for _, i := range order {
		t.Initial = append(t.Initial, cachesim.Slot{Key: int32(s.slots[i].key), Guess: s.slots[i].guess})
	}
	t.Tick, t.UseWeight = s.tick, s.useWeight
	t.Last = append([]int64(nil), s.keyLast...)
	t.Uses = append([]int64(nil), s.keyUses...)
	s.rec = &traceRec{t: t, from: s.counters}
}

// StopTrace ends the recording and returns the trace, with the live
// counters since StartTrace and tokens as the tokens it covers; nil when
// no trace was started.
func (s *PackStore) StopTrace(tokens int) *cachesim.Trace {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return nil
	}
	t := s.rec.t
	d := s.counters.sub(s.rec.from)
	t.Live = cachesim.Counts{Demands: d.Demands, Hits: d.Hits, Misses: d.Misses, ReadAheadHits: d.ReadAheadHits, Guesses: d.Guesses, Reads: d.Reads}
	t.Tokens = int64(tokens)
	s.rec = nil
	return t
}

// AddReplay sets the report's Belady figure from the trace of the same
// tokens: MIN at the store's arena size, with read-ahead when the store
// reads ahead. It fails when the replay of the store's own rule does not
// give the store's counters, which would make the comparison meaningless.
func (r *StreamReport) AddReplay(t *cachesim.Trace) error {
	own, err := cachesim.Replay(t, cachesim.Store, cachesim.Options{})
	if err != nil {
		return err
	}
	if own != t.Live {
		return fmt.Errorf("the replay of the expert trace gives %+v, the store counted %+v", own, t.Live)
	}
	min, err := cachesim.Replay(t, cachesim.MIN, cachesim.Options{})
	if err != nil {
		return err
	}
	h := min.HitRate()
	r.BeladyHitRate = &h
	return nil
}

// EndTrace ends the trace StartTrace began (at counters from) and returns
// the store's figures over the tokens since, with the Belady hit rate of
// the same demands, and the trace.
func (s *PackStore) EndTrace(from StreamCounters, tokens int) (*StreamReport, *cachesim.Trace, error) {
	rep := s.Report(from, s.Counters(), tokens)
	t := s.StopTrace(tokens)
	if t == nil {
		return nil, nil, fmt.Errorf("the expert store was not recording a trace")
	}
	if err := rep.AddReplay(t); err != nil {
		return nil, nil, err
	}
	return rep, t, nil
}

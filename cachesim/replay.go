package cachesim

import (
	"container/heap"
	"fmt"
)

// Policy is an eviction rule for Replay.
type Policy int

const (
	// Store is the store's rule: a miss (or a read-ahead guess) evicts the
	// unpinned expert Victim picks (the lowest Keep score, ties to the
	// lower key, sparing those the current call claimed or hit, then those
	// read-ahead expects before their layer's next Need, while there is
	// another); a Need marks all its hits before its misses claim; every
	// demand, hit or miss, makes its expert the most recent and adds a
	// use; guesses add neither.
	Store Policy = iota
	// LRU is plain least-recently-used, the store's rule before Store: a
	// miss or a guess evicts the least recently used unpinned expert; a
	// demand hit or any read makes it the most recent.
	LRU
	// MIN is Belady's: a miss evicts the resident expert whose next demand
	// is farthest; a read-ahead guess is read only when some resident expert
	// is next demanded later than the guess.
	MIN
)

func (p Policy) String() string {
	switch p {
	case MIN:
		return "min"
	case LRU:
		return "lru"
	}
	return "store"
}

// Options of a replay.
type Options struct {
	// Slots is the arena size; 0 means the live store's.
	Slots int
	// NoReadAhead ignores the guesses (the store with read-ahead off).
	NoReadAhead bool
}

// Replay runs t's demands through an arena under policy p. Under Store at
// the live arena size and read-ahead setting it reproduces the live store's
// counters exactly (the store's decisions depend only on this sequence).
// Initial residents beyond a smaller arena are dropped oldest first.
func Replay(t *Trace, p Policy, opt Options) (Counts, error) {
	slots := opt.Slots
	if slots == 0 {
		slots = t.Slots
	}
	if slots < 1 {
		return Counts{}, fmt.Errorf("replay with %d slots", slots)
	}
	init := t.Initial
	if len(init) > slots {
		init = init[len(init)-slots:]
	}
	n := t.Layers * t.Experts
	switch p {
	case MIN:
		return replayMIN(t, n, slots, init, !opt.NoReadAhead), nil
	case LRU:
		return replayLRU(t, n, slots, init, !opt.NoReadAhead)
	}
	return replayStore(t, slots, init, !opt.NoReadAhead)
}

// replayStore follows PackStore's claim, Need and Guess.
func replayStore(t *Trace, slots int, init []Slot, readAhead bool) (Counts, error) {
	last, uses := t.history()
	last, uses = append([]int64(nil), last...), append([]int64(nil), uses...)
	tick, call := t.Tick, int64(0)
	E := int32(t.Experts)
	n := t.Layers * t.Experts
	in := make([]bool, n)
	guess := make([]bool, n)
	want := make([]bool, n) // read-ahead expects it in its layer's next Need
	at := make([]int64, n)  // the call that last claimed or hit it
	var res []int32
	for _, s := range init {
		in[s.Key], guess[s.Key] = true, s.Guess
		res = append(res, s.Key)
	}
	// claim evicts, while there is another choice, neither what the
	// current call claimed or hit nor what read-ahead expects.
	claim := func(k int32, pinned []int32) bool {
		if len(res) < slots {
			res = append(res, k)
		} else {
			vic := NewVictim(t.UseWeight)
		scan:
			for i, v := range res {
				for _, p := range pinned {
					if p == v {
						continue scan
					}
				}
				vic.Offer(i, int(v), last[v], uses[v], ClassOf(at[v] == call, want[v]))
			}
			best := vic.Pick()
			if best < 0 {
				return false
			}
			v := res[best]
			in[v], guess[v], want[v] = false, false, false
			res[best] = k
		}
		in[k], guess[k], want[k], at[k] = true, false, false, call
		return true
	}
	var c Counts
	var misses []int32
	for i, r := range t.Records {
		switch r.Op {
		case OpNeed:
			call++
			misses = misses[:0]
			for _, k := range r.Keys {
				c.Demands++
				tick++
				last[k] = tick
				uses[k]++
				if in[k] {
					c.Hits++
					if guess[k] {
						c.ReadAheadHits++
						guess[k] = false
					}
					at[k] = call
					continue
				}
				c.Misses++
				misses = append(misses, k)
			}
			if len(r.Keys) > 0 {
				l := r.Keys[0] / E
				for k := l * E; k < (l+1)*E; k++ {
					want[k] = false
				}
			}
			for _, k := range misses[:min(len(misses), slots-1)] {
				if claim(k, nil) {
					c.Reads++
				}
			}
		case OpGuess:
			if !readAhead {
				continue
			}
			call++
			budget := slots / 2
			for _, k := range r.Keys {
				if in[k] {
					want[k] = true
					continue
				}
				if budget == 0 {
					continue
				}
				if claim(k, nil) {
					budget--
					guess[k], want[k] = true, true
					c.Guesses++
					c.Reads++
				}
			}
		case OpClaim:
			k := r.Keys[0]
			if in[k] {
				continue
			}
			if !claim(k, r.Keys[1:]) {
				return c, fmt.Errorf("trace record %d: every one of %d slots is pinned", i, slots)
			}
			c.Reads++
		}
	}
	return c, nil
}

// lru is a recency list over keys: head is the least recently used.
type lru struct {
	prev, next []int32
	in         []bool
	guess      []bool
	head, tail int32
	used, cap  int
}

func newLRU(n, slots int) *lru {
	l := &lru{prev: make([]int32, n), next: make([]int32, n), in: make([]bool, n), guess: make([]bool, n), head: -1, tail: -1, cap: slots}
	return l
}

func (l *lru) unlink(k int32) {
	if p := l.prev[k]; p >= 0 {
		l.next[p] = l.next[k]
	} else {
		l.head = l.next[k]
	}
	if nx := l.next[k]; nx >= 0 {
		l.prev[nx] = l.prev[k]
	} else {
		l.tail = l.prev[k]
	}
}

func (l *lru) pushMRU(k int32) {
	l.prev[k], l.next[k] = l.tail, -1
	if l.tail >= 0 {
		l.next[l.tail] = k
	} else {
		l.head = k
	}
	l.tail = k
}

func (l *lru) touch(k int32) { l.unlink(k); l.pushMRU(k) }

// claim makes k resident and most recent, evicting the least recently used
// expert not in pinned; false when every resident one is pinned.
func (l *lru) claim(k int32, pinned []int32) bool {
	if l.used == l.cap {
		v := l.head
	scan:
		for ; v >= 0; v = l.next[v] {
			for _, p := range pinned {
				if p == v {
					continue scan
				}
			}
			break
		}
		if v < 0 {
			return false
		}
		l.unlink(v)
		l.in[v], l.guess[v] = false, false
		l.used--
	}
	l.in[k], l.guess[k] = true, false
	l.used++
	l.pushMRU(k)
	return true
}

func replayLRU(t *Trace, n, slots int, init []Slot, readAhead bool) (Counts, error) {
	l := newLRU(n, slots)
	for _, s := range init {
		l.claim(s.Key, nil)
		l.guess[s.Key] = s.Guess
	}
	var c Counts
	for i, r := range t.Records {
		switch r.Op {
		case OpNeed:
			started := 0
			for _, k := range r.Keys {
				c.Demands++
				if l.in[k] {
					c.Hits++
					if l.guess[k] {
						c.ReadAheadHits++
						l.guess[k] = false
					}
					l.touch(k)
					continue
				}
				c.Misses++
				// The store leaves one slot for Get.
				if started >= slots-1 {
					continue
				}
				if l.claim(k, nil) {
					started++
					c.Reads++
				}
			}
		case OpGuess:
			if !readAhead {
				continue
			}
			budget := slots / 2
			for _, k := range r.Keys {
				if l.in[k] || budget == 0 {
					continue
				}
				if l.claim(k, nil) {
					budget--
					l.guess[k] = true
					c.Guesses++
					c.Reads++
				}
			}
		case OpClaim:
			k := r.Keys[0]
			if l.in[k] {
				continue
			}
			if !l.claim(k, r.Keys[1:]) {
				return c, fmt.Errorf("trace record %d: every one of %d slots is pinned", i, slots)
			}
			c.Reads++
		}
	}
	return c, nil
}

// demands flattens the Need records: key of each demand in order, and for
// each the index of the same key's next demand (len when none).
func demands(t *Trace) (seq, next []int32) {
	for _, r := range t.Records {
		if r.Op == OpNeed {
			seq = append(seq, r.Keys...)
		}
	}
	next = make([]int32, len(seq))
	last := map[int32]int32{}
	for i := len(seq) - 1; i >= 0; i-- {
		if j, ok := last[seq[i]]; ok {
			next[i] = j
		} else {
			next[i] = int32(len(seq))
		}
		last[seq[i]] = int32(i)
	}
	return seq, next
}

type farEntry struct{ at, key int32 }

// farHeap is a max-heap on next use (ties to the larger key), lazily
// invalidated: an entry counts only while it matches the key's next use.
type farHeap []farEntry

func (h farHeap) Len() int { return len(h) }
func (h farHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at > h[j].at
	}
	return h[i].key > h[j].key
}
func (h farHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *farHeap) Push(x any)   { *h = append(*h, x.(farEntry)) }
func (h *farHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func replayMIN(t *Trace, n, slots int, init []Slot, readAhead bool) Counts {
	seq, next := demands(t)
	end := int32(len(seq))
	// nextUse[k]: the index of k's next demand at or after the cursor.
	nextUse := make([]int32, n)
	for k := range nextUse {
		nextUse[k] = end
	}
	for i := len(seq) - 1; i >= 0; i-- {
		nextUse[seq[i]] = int32(i)
	}
	in := make([]bool, n)
	guess := make([]bool, n)
	used := 0
	h := &farHeap{}
	push := func(k int32) { heap.Push(h, farEntry{nextUse[k], k}) }
	// farthest pops stale entries and returns the resident key demanded
	// last, without removing it.
	farthest := func() int32 {
		for h.Len() > 0 {
			e := (*h)[0]
			if in[e.key] && nextUse[e.key] == e.at {
				return e.key
			}
			heap.Pop(h)
		}
		return -1
	}
	evict := func(k int32) {
		heap.Pop(h)
		in[k], guess[k] = false, false
		used--
	}
	admit := func(k int32) {
		in[k] = true
		used++
		push(k)
	}
	for _, s := range init {
		admit(s.Key)
		guess[s.Key] = s.Guess
	}
	var c Counts
	pos := int32(0)
	for _, r := range t.Records {
		switch r.Op {
		case OpNeed:
			for _, k := range r.Keys {
				c.Demands++
				nextUse[k] = next[pos]
				pos++
				if in[k] {
					c.Hits++
					if guess[k] {
						c.ReadAheadHits++
						guess[k] = false
					}
					push(k)
					continue
				}
				c.Misses++
				c.Reads++
				if used == slots {
					evict(farthest())
				}
				admit(k)
			}
		case OpGuess:
			if !readAhead {
				continue
			}
			for _, k := range r.Keys {
				if in[k] || nextUse[k] == end {
					continue
				}
				if used == slots {
					f := farthest()
					if nextUse[f] <= nextUse[k] {
						continue
					}
					evict(f)
				}
				admit(k)
				guess[k] = true
				c.Guesses++
				c.Reads++
			}
		}
	}
	return c
}

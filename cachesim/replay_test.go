package cachesim

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// loop is a trace of one layer of m experts demanded in turn, one per
// Need, length accesses, from an empty arena of slots.
func loop(m, slots, length int) *Trace {
	t := &Trace{Layers: 1, Experts: m, Slots: slots, Tokens: int64(length), UseWeight: 1}
	for i := 0; i < length; i++ {
		t.Append(OpNeed, []int32{int32(i % m)})
	}
	return t
}

// TestMINLoop: a loop over k+1 experts with k slots. LRU misses every
// demand; MIN misses the k cold ones, then evicts the expert used just
// before each miss, which is next needed k demands later: one miss every k
// demands, at demands k, 2k, ... (closed form: k + floor((L-1)/k)).
func TestMINLoop(t *testing.T) {
	for _, tc := range []struct{ k, length int }{{2, 10}, {3, 100}, {7, 1000}, {16, 4096}} {
		tr := loop(tc.k+1, tc.k, tc.length)
		lru, err := Replay(tr, LRU, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if lru.Misses != int64(tc.length) || lru.Hits != 0 {
			t.Errorf("k=%d: LRU %+v, want every demand missed", tc.k, lru)
		}
		min, err := Replay(tr, MIN, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(tc.k + (tc.length-1)/tc.k)
		if min.Misses != want || min.Demands != int64(tc.length) || min.Hits != min.Demands-want {
			t.Errorf("k=%d L=%d: MIN %+v, want %d misses", tc.k, tc.length, min, want)
		}
	}
}

// optimal is the fewest misses any demand-paging policy achieves on seq
// with slots slots from an empty arena: an exhaustive search over every
// eviction choice (an independent truth for MIN on small traces).
func optimal(seq []int32, slots int) int {
	best := map[uint64]int{0: 0} // resident set as a bit mask -> fewest misses
	for _, k := range seq {
		nb := map[uint64]int{}
		put := func(s uint64, v int) {
			if old, ok := nb[s]; !ok || v < old {
				nb[s] = v
			}
		}
		bit := uint64(1) << k
		for s, v := range best {
			if s&bit != 0 {
				put(s, v)
				continue
			}
			if n := popcount(s); n < slots {
				put(s|bit, v+1)
				continue
			}
			for e := uint64(0); e < 64; e++ {
				if s&(1<<e) != 0 {
					put(s&^(1<<e)|bit, v+1)
				}
			}
		}
		best = nb
	}
	m := len(seq) + 1
	for _, v := range best {
		m = min(m, v)
	}
	return m
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestMINIsOptimal: on random small traces MIN's misses equal the
// exhaustive optimum and never exceed LRU's.
func TestMINIsOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 15))
	for trial := 0; trial < 300; trial++ {
		experts := 2 + r.IntN(6)
		slots := 1 + r.IntN(experts)
		tr := &Trace{Layers: 1, Experts: experts, Slots: slots}
		var seq []int32
		for i := 0; i < 4+r.IntN(14); i++ {
			k := int32(r.IntN(experts))
			seq = append(seq, k)
			tr.Append(OpNeed, []int32{k})
		}
		got, err := Replay(tr, MIN, Options{})
		if err != nil {
			t.Fatal(err)
		}
		lru, err := Replay(tr, LRU, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if want := optimal(seq, slots); got.Misses != int64(want) {
			t.Fatalf("trial %d: %v with %d slots: MIN misses %d, optimum %d", trial, seq, slots, got.Misses, want)
		}
		if got.Misses > lru.Misses {
			t.Fatalf("trial %d: MIN %d misses, LRU %d", trial, got.Misses, lru.Misses)
		}
	}
}

// TestLRUReadAhead: hand-worked LRU with the store's rules: guesses take
// the recency of a read, a demand on a guessed expert is a read-ahead hit,
// and the guess budget is half the arena.
func TestLRUReadAhead(t *testing.T) {
	tr := &Trace{Layers: 2, Experts: 4, Slots: 4, ReadAhead: true,
		Initial: []Slot{{Key: 0}, {Key: 1}, {Key: 4}, {Key: 5}}}
	tr.Append(OpNeed, []int32{0, 1}) // hits; recency 4 5 0 1
	tr.Append(OpGuess, []int32{6, 7, 4})
	// 6 evicts 4, 7 evicts 5: recency 0 1 6 7; 4 is over the budget of 2.
	tr.Append(OpNeed, []int32{6, 4}) // 6 read-ahead hit; 4 misses, evicts 0
	tr.Append(OpNeed, []int32{0})    // miss, evicts 1
	got, err := Replay(tr, LRU, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Demands: 5, Hits: 3, Misses: 2, ReadAheadHits: 1, Guesses: 2, Reads: 4}
	if got != want {
		t.Errorf("with read-ahead %+v, want %+v", got, want)
	}
	got, _ = Replay(tr, LRU, Options{NoReadAhead: true})
	// Without the guesses: 0 1 hit; 6 misses (evicts 4), 4 misses (evicts
	// 5), 0 hits.
	want = Counts{Demands: 5, Hits: 3, Misses: 2, Reads: 2}
	if got != want {
		t.Errorf("without read-ahead %+v, want %+v", got, want)
	}
	// MIN with read-ahead: at the guess, next uses are 6:2, 4:3, 0:4,
	// 1:never, 5:never, 7:never. 6 evicts 5 (ties to the larger key), 7 is
	// never used and not read, 4 is resident; then 6 and 4 and 0 hit.
	got, _ = Replay(tr, MIN, Options{})
	want = Counts{Demands: 5, Hits: 5, ReadAheadHits: 1, Guesses: 1, Reads: 1}
	if got != want {
		t.Errorf("MIN with read-ahead %+v, want %+v", got, want)
	}
}

func TestClaimPinned(t *testing.T) {
	tr := &Trace{Layers: 1, Experts: 4, Slots: 2, Initial: []Slot{{Key: 0}, {Key: 1}}}
	tr.Append(OpClaim, []int32{2, 0}) // 0 is LRU but pinned: 1 goes
	tr.Append(OpNeed, []int32{0, 2})
	got, err := Replay(tr, LRU, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Demands: 2, Hits: 2, Reads: 1}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	tr.Records = nil
	tr.Append(OpClaim, []int32{2, 0, 1})
	if _, err := Replay(tr, LRU, Options{}); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("every slot pinned: %v", err)
	}
}

func TestTraceRoundTrip(t *testing.T) {
	tr := &Trace{Layers: 3, Experts: 300, Slots: 200, Tokens: 9, ReadAhead: true, UseWeight: 3,
		Initial: []Slot{{Key: 5}, {Key: 899, Guess: true}},
		Live:    Counts{1, 2, 3, 4, 5, 6}, Tick: 50, Last: make([]int64, 900), Uses: make([]int64, 900)}
	tr.Last[899], tr.Uses[899], tr.Last[0] = 42, 3, -7
	tr.Append(OpNeed, []int32{1, 200, 899})
	tr.Append(OpGuess, nil)
	tr.Append(OpClaim, []int32{7})
	var b bytes.Buffer
	if _, err := tr.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b.Bytes(), "x.trace")
	if err != nil {
		t.Fatal(err)
	}
	tr.Records[1].Keys = []int32{}
	if !reflect.DeepEqual(got, tr) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, tr)
	}
	data := b.Bytes()
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, "byte 0: magic"},
		{"version", func(b []byte) []byte { b[4] = 2; return b }, "byte 4: version"},
		{"history", func(b []byte) []byte { b[headerBytes+8+16*899] = 51; return b }, "expert 899 last demanded at 51 (tick 50)"},
		{"tick", func(b []byte) []byte { b[103] = 0xff; return b }, "byte 96: tick"},
		{"use weight", func(b []byte) []byte { b[36] = 0; return b }, "byte 36: use weight 0"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, "record 2"},
		{"trailing", func(b []byte) []byte { return append(b, 0) }, "follow the last record"},
		{"key", func(b []byte) []byte { b[len(b)-1] = 0x80; return b }, "not a key"},
		{"op", func(b []byte) []byte { b[headerBytes+8+16*900] = 'Z'; return b }, "unknown op"},
		{"records", func(b []byte) []byte { b[40] = 0xff; return b }, "cannot fit"},
		{"initial twice", func(b []byte) []byte { copy(b[headerBytes+4:], b[headerBytes:headerBytes+4]); return b }, "twice"},
	} {
		c := tc.edit(append([]byte(nil), data...))
		if _, err := Parse(c, "x.trace"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x.trace") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	tr := loop(5, 3, 20)
	tr.Append(OpGuess, []int32{1, 2})
	tr.Append(OpClaim, []int32{4, 1})
	var b bytes.Buffer
	tr.WriteTo(&b)
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		var out bytes.Buffer
		if _, err := tr.WriteTo(&out); err != nil {
			t.Fatalf("a parsed trace does not write: %v", err)
		}
		for _, p := range []Policy{LRU, MIN} {
			if _, err := Replay(tr, p, Options{}); err != nil && p == MIN {
				t.Fatal(err)
			}
		}
	})
}

// TestStoreRule: hand-worked replay of the store's rule: recency plus
// a weight of 8 per demand, guesses adding neither, the current call's experts
// spared.
func TestStoreRule(t *testing.T) {
	tr := &Trace{Layers: 1, Experts: 4, Slots: 2, ReadAhead: true, UseWeight: 8,
		Initial: []Slot{{Key: 1}, {Key: 0}}, Last: []int64{0, -1, -2, -3}, Uses: make([]int64, 4)}
	tr.Append(OpNeed, []int32{0})    // tick 1: hit; Keep(0) = 1 + 8
	tr.Append(OpNeed, []int32{2})    // tick 2: miss; 1 (Keep -1) goes before 0 (9)
	tr.Append(OpNeed, []int32{1})    // tick 3: miss; 0 (9) goes before 2 (10)
	tr.Append(OpGuess, []int32{3})   // 2 (10) goes before 1 (11); 3 keeps Keep -3
	tr.Append(OpNeed, []int32{3, 2}) // 3 read-ahead hit, spared; 2 misses and 1 goes
	got, err := Replay(tr, Store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Demands: 5, Hits: 2, Misses: 3, ReadAheadHits: 1, Guesses: 1, Reads: 4}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	// The current call's expert is spared even when its score is the
	// lowest.
	tr = &Trace{Layers: 1, Experts: 4, Slots: 2, UseWeight: 8, Initial: []Slot{{Key: 0}, {Key: 1}}, Last: []int64{0, 0, 0, 0}, Uses: []int64{0, 5, 0, 0}}
	tr.Append(OpNeed, []int32{0, 2}) // 0 hits (Keep 9, below 1's 40) but is spared: 1 goes
	got, _ = Replay(tr, Store, Options{})
	if want := (Counts{Demands: 2, Hits: 1, Misses: 1, Reads: 1}); got != want {
		t.Errorf("spared: %+v, want %+v", got, want)
	}
	tr.Append(OpNeed, []int32{1})
	if got, _ = Replay(tr, Store, Options{}); got.Misses != 2 {
		t.Errorf("1 should have gone: %+v", got)
	}
}

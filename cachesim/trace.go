// Package cachesim holds the expert store's demand traces (the STRC format
// of docs/FORMATS.md) and replays them offline under the store's own LRU
// policy and under Belady's MIN, with and without the recorded read-ahead.
package cachesim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Op is the kind of a trace record.
type Op byte

const (
	// OpNeed is one PackStore.Need call: the distinct experts a batch needs
	// in one layer, in the order the store counted them.
	OpNeed Op = 'N'
	// OpGuess is one PackStore.Guess call: the experts read-ahead expected.
	OpGuess Op = 'G'
	// OpClaim is a Get that found its expert absent and started the read
	// itself: Keys[0] is the expert, Keys[1:] the experts pinned then (they
	// cannot be evicted for it).
	OpClaim Op = 'A'
)

// Record is one store call. Keys are layer*Experts + expert.
type Record struct {
	Op   Op
	Keys []int32
}

// Slot is an expert resident when the trace starts.
type Slot struct {
	Key int32
	// Guess is set when read-ahead brought it in and no demand used it since.
	Guess bool
}

// Counts are the store's counters over a trace, live or replayed.
type Counts struct {
	Demands       int64 `json:"demands"`
	Hits          int64 `json:"hits"`
	Misses        int64 `json:"misses"`
	ReadAheadHits int64 `json:"readahead_hits"`
	Guesses       int64 `json:"readahead_reads"`
	Reads         int64 `json:"reads"`
}

// HitRate is hits over demands (0 without demands).
func (c Counts) HitRate() float64 {
	if c.Demands == 0 {
		return 0
	}
	return float64(c.Hits) / float64(c.Demands)
}

// Trace is the demand sequence of one expert store from a starting arena.
type Trace struct {
	Layers, Experts int
	// Slots is the live arena's size in slots.
	Slots int
	// Tokens is how many tokens the trace covers (for per-token figures).
	Tokens int64
	// ReadAhead is whether the live store read ahead.
	ReadAhead bool
	// Initial is the arena's content at the start, the first to be
	// evicted first.
	Initial []Slot
	// Tick is the store's demand count at the start; Last and Uses are
	// every expert's history then (by key): the tick of its last demand
	// (≤ Tick; before any demand the pack's ranking, as 0, -1, -2, ...
	// from the hottest) and its demands. The store's eviction score is
	// Keep(Last, Uses, UseWeight).
	UseWeight  int64
	Tick       int64
	Last, Uses []int64
	Records    []Record
	// Live are the live store's counters over the trace.
	Live Counts
}

// Magic and Version identify the STRC file format.
const (
	Magic   = "STRC"
	Version = 4
	// headerBytes is the fixed header before the initial arena.
	headerBytes = 104
	guessBit    = 1 << 31
	// histLimit bounds |Last|, and Uses, so that Keep cannot overflow.
	histLimit = 1 << 56
)

// UseWeight is what one past demand is worth in Keep, in demands of
// recency: half a token's demands (layers × experts per token / 2), so an
// expert demanded n times more is kept as if demanded n/2 tokens later.
// Replays of the fixtures' traces put the best weight between a quarter
// and one token's demands (docs/QUALITY.md).
func UseWeight(layers, used int) int64 { return max(1, int64(layers)*int64(used)/2) }

// Keep is the store's eviction score of an expert last demanded at tick
// last and demanded uses times, with weight w per demand: the lowest goes
// first.
func Keep(last, uses, w int64) int64 { return last + w*uses }

// Append adds a record of keys (copied).
func (t *Trace) Append(op Op, keys []int32) {
	t.Records = append(t.Records, Record{Op: op, Keys: append([]int32(nil), keys...)})
}

// WriteTo writes t in the STRC format.
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	bw := bufio.NewWriter(w)
	h := make([]byte, headerBytes)
	copy(h, Magic)
	le := binary.LittleEndian
	le.PutUint32(h[4:], Version)
	le.PutUint32(h[8:], uint32(t.Layers))
	le.PutUint32(h[12:], uint32(t.Experts))
	le.PutUint32(h[16:], uint32(t.Slots))
	if t.ReadAhead {
		le.PutUint32(h[20:], 1)
	}
	le.PutUint64(h[24:], uint64(t.Tokens))
	le.PutUint32(h[32:], uint32(len(t.Initial)))
	le.PutUint32(h[36:], uint32(t.UseWeight))
	le.PutUint64(h[40:], uint64(len(t.Records)))
	c := t.Live
	for i, v := range []int64{c.Demands, c.Hits, c.Misses, c.ReadAheadHits, c.Guesses, c.Reads} {
		le.PutUint64(h[48+8*i:], uint64(v))
	}
	le.PutUint64(h[96:], uint64(t.Tick))
	n := int64(0)
	write := func(b []byte) error {
		k, err := bw.Write(b)
		n += int64(k)
		return err
	}
	if err := write(h); err != nil {
		return n, err
	}
	var b [4]byte
	for _, s := range t.Initial {
		v := uint32(s.Key)
		if s.Guess {
			v |= guessBit
		}
		le.PutUint32(b[:], v)
		if err := write(b[:]); err != nil {
			return n, err
		}
	}
	var hb [16]byte
	last, uses := t.history()
	for k := range last {
		le.PutUint64(hb[:], uint64(last[k]))
		le.PutUint64(hb[8:], uint64(uses[k]))
		if err := write(hb[:]); err != nil {
			return n, err
		}
	}
	var vb []byte
	for _, r := range t.Records {
		vb = append(vb[:0], byte(r.Op))
		vb = binary.AppendUvarint(vb, uint64(len(r.Keys)))
		for _, k := range r.Keys {
			vb = binary.AppendUvarint(vb, uint64(k))
		}
		if err := write(vb); err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// check is what Parse enforces, for traces built in memory.
func (t *Trace) check() error {
	keys := int64(t.Layers) * int64(t.Experts)
	if t.Layers < 1 || t.Experts < 1 || keys > math.MaxInt32 {
		return fmt.Errorf("trace of %d layers x %d experts", t.Layers, t.Experts)
	}
	if t.UseWeight < 1 || t.UseWeight > 1<<20 {
		return fmt.Errorf("trace: use weight %d", t.UseWeight)
	}
	if t.Slots < 1 || int64(t.Slots) > keys || len(t.Initial) > t.Slots || t.Tokens < 0 {
		return fmt.Errorf("trace: %d slots of %d experts, %d initially resident, %d tokens", t.Slots, keys, len(t.Initial), t.Tokens)
	}
	if t.Last == nil && t.Uses == nil {
		// No history: every expert at zero (a trace built in memory).
	} else if int64(len(t.Last)) != keys || int64(len(t.Uses)) != keys || t.Tick < 0 || t.Tick >= histLimit {
		return fmt.Errorf("trace: history of %d and %d experts of %d, tick %d", len(t.Last), len(t.Uses), keys, t.Tick)
	}
	for k := range t.Last {
		if t.Last[k] > t.Tick || t.Last[k] <= -histLimit || t.Uses[k] < 0 || t.Uses[k] >= histLimit {
			return fmt.Errorf("trace: expert %d last demanded at %d (tick %d), %d demands", k, t.Last[k], t.Tick, t.Uses[k])
		}
	}
	seen := make(map[int32]bool, len(t.Initial))
	for i, s := range t.Initial {
		if s.Key < 0 || int64(s.Key) >= keys || seen[s.Key] {
			return fmt.Errorf("trace: initial slot %d holds key %d (of %d, or twice)", i, s.Key, keys)
		}
		seen[s.Key] = true
	}
	for i, r := range t.Records {
		if err := checkRecord(r, keys); err != nil {
			return fmt.Errorf("trace record %d: %w", i, err)
		}
	}
	return nil
}

func checkRecord(r Record, keys int64) error {
	switch r.Op {
	case OpNeed, OpGuess, OpClaim:
	default:
		return fmt.Errorf("unknown op %#02x", byte(r.Op))
	}
	if r.Op == OpClaim && len(r.Keys) == 0 {
		return errors.New("a claim names no expert")
	}
	for _, k := range r.Keys {
		if k < 0 || int64(k) >= keys {
			return fmt.Errorf("key %d outside the %d experts", k, keys)
		}
	}
	return nil
}

// Parse reads an STRC trace; name is used in errors, which give the byte
// offset of what is wrong.
func Parse(b []byte, name string) (*Trace, error) {
	bad := func(off int, format string, a ...any) (*Trace, error) {
		return nil, fmt.Errorf("%s: byte %d: %s", name, off, fmt.Sprintf(format, a...))
	}
	if len(b) < headerBytes {
		return bad(0, "%d bytes is shorter than the %d-byte STRC header", len(b), headerBytes)
	}
	if string(b[:4]) != Magic {
		return bad(0, "magic %q, want %q", b[:4], Magic)
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[4:]); v != Version {
		return bad(4, "version %d, this reader knows %d", v, Version)
	}
	t := &Trace{Layers: int(le.Uint32(b[8:])), Experts: int(le.Uint32(b[12:])), Slots: int(le.Uint32(b[16:]))}
	keys := int64(t.Layers) * int64(t.Experts)
	if t.Layers < 1 || t.Experts < 1 || keys > math.MaxInt32 {
		return bad(8, "%d layers x %d experts", t.Layers, t.Experts)
	}
	if t.Slots < 1 || int64(t.Slots) > keys {
		return bad(16, "%d slots for %d experts", t.Slots, keys)
	}
	switch le.Uint32(b[20:]) {
	case 0:
	case 1:
		t.ReadAhead = true
	default:
		return bad(20, "read-ahead flag %d, want 0 or 1", le.Uint32(b[20:]))
	}
	tok := le.Uint64(b[24:])
	if tok > math.MaxInt64 {
		return bad(24, "%d tokens", tok)
	}
	t.Tokens = int64(tok)
	nInit := int64(le.Uint32(b[32:]))
	if nInit > int64(t.Slots) {
		return bad(32, "%d experts initially resident in %d slots", nInit, t.Slots)
	}
	t.UseWeight = int64(le.Uint32(b[36:]))
	if t.UseWeight < 1 || t.UseWeight > 1<<20 {
		return bad(36, "use weight %d, want 1..%d", t.UseWeight, 1<<20)
	}
	nRec := le.Uint64(b[40:])
	var live [6]int64
	for i := range live {
		v := le.Uint64(b[48+8*i:])
		if v > math.MaxInt64 {
			return bad(48+8*i, "counter %d", v)
		}
		live[i] = int64(v)
	}
	t.Live = Counts{live[0], live[1], live[2], live[3], live[4], live[5]}
	t.Tick = int64(le.Uint64(b[96:]))
	if t.Tick < 0 || t.Tick >= histLimit {
		return bad(96, "tick %d", t.Tick)
	}
	off := headerBytes
	// The initial arena and the history of every expert come first: bound
	// the sizes by the bytes there before allocating anything.
	if int64(len(b)-off) < 4*nInit+16*keys {
		return bad(off, "%d initial slots and the history of %d experts need %d bytes, %d remain", nInit, keys, 4*nInit+16*keys, len(b)-off)
	}
	seen := make([]bool, keys)
	t.Initial = make([]Slot, nInit)
	for i := range t.Initial {
		v := le.Uint32(b[off:])
		k := int64(v &^ guessBit)
		if k >= keys || seen[k] {
			return bad(off, "initial slot %d holds key %d (of %d, or twice)", i, k, keys)
		}
		seen[k] = true
		t.Initial[i] = Slot{Key: int32(k), Guess: v&guessBit != 0}
		off += 4
	}
	if int64(len(b)-off) < 16*keys {
		return bad(off, "the history of %d experts needs %d bytes, %d remain", keys, 16*keys, len(b)-off)
	}
	t.Last, t.Uses = make([]int64, keys), make([]int64, keys)
	for k := range t.Last {
		t.Last[k], t.Uses[k] = int64(le.Uint64(b[off:])), int64(le.Uint64(b[off+8:]))
		if t.Last[k] > t.Tick || t.Last[k] <= -histLimit || t.Uses[k] < 0 || t.Uses[k] >= histLimit {
			return bad(off, "expert %d last demanded at %d (tick %d), %d demands", k, t.Last[k], t.Tick, t.Uses[k])
		}
		off += 16
	}
	// Every record takes at least 2 bytes: bound the count before allocating.
	if nRec > uint64(len(b)-off)/2 {
		return bad(40, "%d records cannot fit in the %d bytes that remain", nRec, len(b)-off)
	}
	t.Records = make([]Record, 0, nRec)
	for i := uint64(0); i < nRec; i++ {
		at := off
		if off >= len(b) {
			return bad(off, "record %d of %d: end of file", i, nRec)
		}
		r := Record{Op: Op(b[off])}
		off++
		n, k := binary.Uvarint(b[off:])
		if k <= 0 || n > uint64(len(b)-off-k) {
			return bad(off, "record %d: bad key count", i)
		}
		off += k
		r.Keys = make([]int32, n)
		for j := range r.Keys {
			v, k := binary.Uvarint(b[off:])
			if k <= 0 || v >= uint64(keys) {
				return bad(off, "record %d key %d: not a key below %d", i, j, keys)
			}
			r.Keys[j] = int32(v)
			off += k
		}
		if err := checkRecord(r, keys); err != nil {
			return bad(at, "record %d: %v", i, err)
		}
		t.Records = append(t.Records, r)
	}
	if off != len(b) {
		return bad(off, "%d bytes follow the last record", len(b)-off)
	}
	return t, nil
}

// history is Last and Uses, zeros when the trace has none.
func (t *Trace) history() (last, uses []int64) {
	if t.Last == nil && t.Uses == nil {
		n := t.Layers * t.Experts
		return make([]int64, n), make([]int64, n)
	}
	return t.Last, t.Uses
}

package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/strata"
)

// StreamOptions configure the expert store of a pack.
type StreamOptions struct {
	// ArenaMB is the memory for resident experts; 0 holds every expert, up
	// to DefaultArenaCap (half the machine's RAM).
	ArenaMB float64
	// Readers is the number of goroutines reading slots; 0 means
	// DefaultReaders.
	Readers int
	// NoReadAhead turns off guessing the coming layers' experts.
	NoReadAhead bool
	// ReadAheadLayers is how many layers ahead read-ahead guesses (before
	// each layer, its experts and those of the next ReadAheadLayers-1);
	// 0 means DefaultReadAheadLayers.
	ReadAheadLayers int
	// Buffered never tries O_DIRECT.
	Buffered bool
	// NoAIO reads direct slots with the reader goroutines' blocking
	// reads rather than native AIO (aio_linux.go).
	NoAIO bool
}

// StreamCounters are cumulative counts of a pack's expert store.
type StreamCounters struct {
	Demands       int64 `json:"demands"`        // distinct (layer, expert) needed per batch
	Hits          int64 `json:"hits"`           // of those, resident (or already being read) when needed
	Misses        int64 `json:"misses"`         // not resident when needed: a read on the critical path
	ReadAheadHits int64 `json:"readahead_hits"` // hits on slots that read-ahead brought in
	Guesses       int64 `json:"readahead_reads"`
	Reads         int64 `json:"reads"` // slot reads, any cause
	BytesRead     int64 `json:"bytes_read"`
	WaitNanos     int64 `json:"wait_ns"` // time the forward pass waited for reads
	// DroppedBytes are the bytes of started reads (counted in Reads and
	// BytesRead) that were never read: their expert was evicted while
	// pieces of its read were still queued (claim), which then went
	// unread. Unlike the counts above, it depends on read timing.
	DroppedBytes int64 `json:"dropped_bytes"`
	// LateHits are the hits whose read was still under way (or queued)
	// when their Need came: read-ahead's guesses issued too late to be
	// read in time. Like DroppedBytes, it depends on read timing.
	LateHits int64 `json:"late_hits"`
	// MissedNeeds are the Need calls (one per layer and batch) with a
	// miss: each puts at least one read's latency on the critical path,
	// however many misses it has (they are read together).
	MissedNeeds int64 `json:"missed_needs"`
}

func (c StreamCounters) sub(o StreamCounters) StreamCounters {
	return StreamCounters{Demands: c.Demands - o.Demands, Hits: c.Hits - o.Hits, Misses: c.Misses - o.Misses,
		ReadAheadHits: c.ReadAheadHits - o.ReadAheadHits, Guesses: c.Guesses - o.Guesses, Reads: c.Reads - o.Reads,
		BytesRead: c.BytesRead - o.BytesRead, WaitNanos: c.WaitNanos - o.WaitNanos, MissedNeeds: c.MissedNeeds - o.MissedNeeds,
		DroppedBytes: c.DroppedBytes - o.DroppedBytes, LateHits: c.LateHits - o.LateHits}
}

// LandedMBPerToken is ReadMBPerToken less DroppedMBPerToken: the bytes per
// token the disk really read.
func (r *StreamReport) LandedMBPerToken() float64 { return r.ReadMBPerToken - r.DroppedMBPerToken }

// StreamReport is the summary run prints for a pack.
type StreamReport struct {
	Tokens         int      `json:"tokens"`
	HitRate        float64  `json:"hit_rate"`
	BeladyHitRate  *float64 `json:"belady_hit_rate,omitempty"` // Belady's MIN on the same demands (AddReplay)
	MissesPerToken float64  `json:"misses_per_token"`
	ReadMBPerToken float64  `json:"read_mb_per_token"`
	// DroppedMBPerToken is the part of ReadMBPerToken never read
	// (StreamCounters.DroppedBytes).
	DroppedMBPerToken     float64 `json:"dropped_mb_per_token,omitempty"`
	LateHitsPerToken      float64 `json:"late_hits_per_token,omitempty"` // StreamCounters.LateHits
	ReadAheadHitsPerToken float64 `json:"readahead_hits_per_token"`
	GuessesPerToken       float64 `json:"readahead_reads_per_token"`
	WaitMsPerToken        float64 `json:"wait_ms_per_token"`
	MissedNeedsPerToken   float64 `json:"missed_needs_per_token"` // layers per token whose Need missed
	ArenaSlots            int     `json:"arena_slots"`
	ArenaMB               float64 `json:"arena_mb"`
	ArenaCapMB            float64 `json:"arena_cap_mb,omitempty"` // the default arena's bound (DefaultArenaCap), when it held the arena below every expert
	TotalSlots            int     `json:"total_slots"`
	SlotBytes             int64   `json:"slot_bytes"`
	DirectIO              bool    `json:"direct_io"`
	DirectIONote          string  `json:"direct_io_note,omitempty"`
	// NativeAIO is whether native AIO submitted the reads at the report's
	// end (else reader goroutines read them; DirectIONote says why, where
	// AIO was given up on, NativeAIONote where it could not be set up).
	NativeAIO     bool           `json:"native_aio"`
	NativeAIONote string         `json:"native_aio_note,omitempty"`
	FillSlots     int            `json:"fill_slots"`
	FillSeconds   float64        `json:"fill_seconds"`
	Counters      StreamCounters `json:"counters"`
}

const (
	slotEmpty = iota
	slotLoading
	slotReady
	slotFailed
)

type arenaSlot struct {
	key   int // layer*E + expert, or -1
	state int
	pins  int
	// queued: pieces of its read wait in demands or guesses, taken by no
	// one yet (next of the store's pieces are taken, done of them read).
	queued     bool
	next, done int
	rerr       error // the first piece's read error
	call       int64 // the Need or Guess call that last claimed or hit it
	guess      bool  // brought in by read-ahead and not used since
	// want: read-ahead expects a demand of it in its layer's next Need (it
	// goes only after the experts nobody expects); that Need clears it.
	want bool
	// gen counts the reads claimed into the slot; busy is the work of the
	// current read under way on the slot's memory (pieces being read,
	// the last one's finish), stale that of reads evicted before it
	// ended, whose results are dropped as they land (readPiece): no piece
	// of the current read starts while stale > 0, since it would write the
	// memory an older piece may still be read into.
	gen         int64
	busy, stale int
	err         error
	ex          Expert
}

// startable reports whether a piece of the slot's read can be taken now:
// one waits, and no evicted read still writes the slot's memory.
func (sl *arenaSlot) startable() bool { return sl.queued && sl.stale == 0 }

// PackStore keeps experts of a pack in an arena of fixed slots, evicting
// the expert cachesim.Victim picks (the lowest cachesim.Keep score, recency
// plus frequency of demands, read-ahead guesses adding neither); misses
// read whole slots (O_DIRECT where the filesystem allows), in pieces that
// the readers share (a slot's pieces at once, demands' before guesses'),
// each piece checked as it lands and the slot against its CRC-32C when
// the last has (strata.CheckPieces).
type PackStore struct {
	cfg       *Config
	x         *strata.Experts
	path      string
	slotBytes int
	// pieceBytes is the bytes of one piece of a slot's read (the last may
	// be shorter), pieces the pieces of a slot; checks holds each slot's
	// pieces' checks ([slot][piece]).
	pieceBytes, pieces int
	checks             []strata.PieceCheck

	ioMu sync.Mutex
	fd   *os.File
	// aio submits direct reads as they are queued (aio_linux.go), up to
	// aioDepth requests in flight (aioBusy now, each piece's in reqs,
	// by slot*pieces+piece), a goroutine (aioReap) taking their
	// completions; nil when the reader goroutines read (buffered reads,
	// no native AIO, or after a direct read was refused; aioNote says
	// why it could not be set up). aioFd is the direct descriptor it
	// reads; aioDead is set once aioBroken has destroyed the context.
	// These, batching and readersStarted are guarded by mu.
	aio               *aioCtx
	aioFd             uintptr
	aioDepth, aioBusy int
	aioDead           bool
	aioNote           string
	reqs              []pieceReq
	// batching counts the Need and Guess calls queueing reads now, each
	// submitting what is queued in one io_submit at its end (one doorbell
	// for the device).
	batching       int
	readersStarted bool
	readers        int
	oldFDs         []*os.File
	direct         bool
	directNote     string

	mu   sync.Mutex
	cond *sync.Cond
	// arena holds the resident experts, outside the Go heap (mapArena);
	// unmap gives it back, at Close once no expert is pinned.
	arena []byte
	unmap func() error
	slots []arenaSlot
	where []int // key -> slot, -1 when absent
	tick  int64 // demands so far
	call  int64 // Need and Guess calls so far
	// keyLast and keyUses are each expert's history, resident or not: the
	// tick of its last demand and its demands.
	keyLast, keyUses []int64
	useWeight        int64 // cachesim.UseWeight of the model
	// demands are the queued reads the forward pass waits for, guesses
	// read-ahead's, served only when no demand read waits, the newest
	// Guess call's first (slot indices, each slot queued,
	// arenaSlot.queued, until a reader or a Get that would wait for it
	// has taken its last piece); work wakes the readers.
	demands, guesses []int
	work             *sync.Cond
	inflight         int           // pieces being read into the arena now (Close waits for them)
	readHook         func(key int) // tests: called as each slot's read starts (its first piece's, with native AIO as that piece lands)
	missBuf          []int         // Need's misses, reused
	wg               sync.WaitGroup
	closed           bool
	counters         StreamCounters

	fillSlots       int
	fillSeconds     float64
	capMB           float64 // the default cap, when it applied (0: it did not)
	readAhead       bool
	readAheadLayers int
	rec             *traceRec // the demand trace being recorded (demandtrace.go), or nil
}

// newPackStore is the expert store of the open pack p (its experts file is
// the store's to close) for the model c.
func newPackStore(p *strata.Pack, c *Config, opt StreamOptions) (*PackStore, error) {
	x, xpath := p.Experts, p.Experts.Path
	var rank [][]uint32
	if p.Keep != nil {
		rank = p.Keep.Rank
	}
	fail := func(err error) (*PackStore, error) { x.Close(); return nil, err }

	total := x.NSlot()
	nslots := total
	var capMB float64
	if lim := DefaultArenaCap(); opt.ArenaMB == 0 && lim > 0 && uint64(total)*x.SlotBytes > lim {
		nslots = int(lim / x.SlotBytes)
		capMB = float64(lim) / (1 << 20)
	}
	if opt.ArenaMB > 0 {
		nslots = int(opt.ArenaMB * (1 << 20) / float64(x.SlotBytes))
		if nslots > total {
			nslots = total
		}
	}
	if nslots < c.ExpertsUsed+1 {
		return fail(fmt.Errorf("arena of %.1f MB holds %d slots of %d bytes; the model needs at least %d (experts per token + 1)", opt.ArenaMB, nslots, x.SlotBytes, c.ExpertsUsed+1))
	}
	// An arena that holds every expert never reads after its fill, so
	// read-ahead's guesses (a router product per layer) would buy nothing.
	readAhead := !opt.NoReadAhead && nslots < total
	s := &PackStore{cfg: c, x: x, path: xpath, slotBytes: int(x.SlotBytes), readAhead: readAhead, readAheadLayers: opt.ReadAheadLayers, capMB: capMB}
	if s.readAheadLayers <= 0 {
		s.readAheadLayers = DefaultReadAheadLayers
	}
	s.cond = sync.NewCond(&s.mu)
	s.fd, s.direct, s.directNote = openForRead(xpath, !opt.Buffered)
	if s.fd == nil {
		return fail(fmt.Errorf("%s: %s", xpath, s.directNote))
	}
	var err error
	if s.arena, s.unmap, err = mapArena(nslots*s.slotBytes, strata.SlotAlign); err != nil {
		s.fd.Close()
		return fail(err)
	}
	s.slots = make([]arenaSlot, nslots)
	s.pieceBytes, s.pieces = slotPieces(s.slotBytes, strata.SlotAlign)
	s.checks = make([]strata.PieceCheck, nslots*s.pieces)
	for i := range s.slots {
		s.slots[i].key = -1
	}
	s.where = make([]int, total)
	for i := range s.where {
		s.where[i] = -1
	}
	s.readers = opt.Readers
	if s.readers <= 0 {
		s.readers = DefaultReaders
	}
	s.work = sync.NewCond(&s.mu)
	if s.direct && aioAvailable && !opt.NoAIO {
		if a, err := newAIO(s.readers, nslots*s.pieces); err == nil {
			s.aio, s.aioFd, s.aioDepth = a, s.fd.Fd(), s.readers
			s.reqs = make([]pieceReq, nslots*s.pieces)
			s.wg.Add(1)
			go s.aioReap()
		} else {
			s.aioNote = err.Error()
		}
	}
	if s.aio == nil {
		s.startReaders()
	}
	if err := s.fill(rank); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// alignedBytes is n bytes starting at a multiple of align (O_DIRECT needs
// aligned buffers).
func alignedBytes(n, align int) []byte {
	b := make([]byte, n+align)
	off := alignOffset(b, align)
	return b[off : off+n : off+n]
}

// alignOffset is how far into b the first multiple of align is.
func alignOffset(b []byte, align int) int {
	off := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align))
	if off != 0 {
		off = align - off
	}
	return off
}

// fill loads the arena at start-up in the pack's ranking order, layer by
// layer within each rank, then experts in id order for the rest.
func (s *PackStore) fill(rank [][]uint32) error {
	t0 := time.Now()
	E := s.cfg.Experts
	var order []int
	seen := make([]bool, len(s.where))
	nrank := 0
	if len(rank) > 0 {
		nrank = len(rank[0])
	}
	for r := 0; r < nrank; r++ {
		for l := range rank {
			k := l*E + int(rank[l][r])
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
	}
	for e := 0; e < E; e++ {
		for l := 0; l < s.cfg.Layers; l++ {
			if k := l*E + e; !seen[k] {
				order = append(order, k)
			}
		}
	}
	// Before any demand, the ranking orders the experts: the coldest goes
	// first.
	s.keyLast, s.keyUses = make([]int64, len(s.where)), make([]int64, len(s.where))
	s.useWeight = cachesim.UseWeight(s.cfg.Layers, s.cfg.ExpertsUsed)
	for i, k := range order {
		s.keyLast[k] = -int64(i)
	}
	order = order[:min(len(order), len(s.slots))]
	s.mu.Lock()
	for i, k := range order {
		sl := &s.slots[i]
		sl.key, sl.state = k, slotLoading
		s.where[k] = i
		s.enqueue(i, false)
	}
	for _, k := range order {
		sl := &s.slots[s.where[k]]
		for sl.state == slotLoading {
			s.cond.Wait()
		}
		if sl.state == slotFailed {
			err := sl.err
			s.mu.Unlock()
			return err
		}
	}
	s.fillSlots = len(order)
	s.fillSeconds = time.Since(t0).Seconds()
	s.mu.Unlock()
	return nil
}

// pieceTarget is about the bytes of one piece of a slot's read: small
// enough that a slot's pieces spread over the readers (one slot read by
// several at once, each piece's CRC pass while the others are read) and
// that a demand queued behind a guess waits for at most a piece, large
// enough that a piece is one efficient read: on the 2-core VM, the
// median time from a Need of one absent slot of 1.36 MiB to its Get was
// 0.45-0.48 ms in two pieces, 0.46-0.51 in one and 0.60-0.68 in three
// (docs/BENCHMARKS.md). A variable so that tests split the tiny models'
// slots.
var pieceTarget = 768 << 10

// slotPieces splits a slot of n bytes into pieces of about pieceTarget, a
// multiple of align (O_DIRECT): the bytes of each but the last, and how
// many.
func slotPieces(n, align int) (size, count int) {
	count = max(1, (n+pieceTarget/2)/pieceTarget)
	size = (n + count - 1) / count
	size = (size + align - 1) / align * align
	return size, (n + size - 1) / size
}

// startReaders starts the reader goroutines (once). Called before any
// read, or with s.mu held.
func (s *PackStore) startReaders() {
	if s.readersStarted {
		return
	}
	s.readersStarted = true
	for i := 0; i < s.readers; i++ {
		s.wg.Add(1)
		go s.reader()
	}
}

// reader reads the queued slots' pieces, demands first, until the store
// closes and nothing is queued.
func (s *PackStore) reader() {
	defer s.wg.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		i := s.nextQueued()
		if i < 0 {
			if s.closed {
				return
			}
			s.work.Wait()
			continue
		}
		s.readPiece(i)
	}
}

// nextQueued is the slot whose read's next piece goes first, of those
// whose memory no evicted read still writes: the oldest
// demand's, else the newest Guess call's (the one nearest its layer, the
// guesses of a layer whose Need has passed left for idle time), -1 when
// nothing is queued. Called with s.mu held.
func (s *PackStore) nextQueued() int {
	for _, i := range s.demands {
		if s.slots[i].stale == 0 {
			return i
		}
	}
	best := -1
	for _, i := range s.guesses {
		if s.slots[i].stale == 0 && (best < 0 || s.slots[i].call > s.slots[best].call) {
			best = i
		}
	}
	return best
}

// enqueue queues the read of slot i (claimed, loading) for the readers.
// Called with s.mu held.
func (s *PackStore) enqueue(i int, guess bool) {
	s.slots[i].queued = true
	if guess {
		s.guesses = append(s.guesses, i)
	} else {
		s.demands = append(s.demands, i)
	}
	s.wake()
}

// wake starts the queued reads: it submits them (aio), or wakes the
// readers. Called with s.mu held.
func (s *PackStore) wake() {
	if s.batching == 0 || !s.aioOn() {
		s.flush()
	}
}

// flush starts the queued reads now, even in a batch. Called with s.mu
// held.
func (s *PackStore) flush() {
	if s.aioOn() {
		s.pump()
		return
	}
	s.work.Broadcast()
}

// aioOn reports whether native AIO takes the reads (it is off from the
// start, or since a submit was refused or the file was read buffered).
// Called with s.mu held.
func (s *PackStore) aioOn() bool { return s.aio != nil && s.aioDepth > 0 }

// unqueue takes slot i off its queue. Called with s.mu held, slot i queued.
func (s *PackStore) unqueue(i int) {
	for _, q := range []*[]int{&s.demands, &s.guesses} {
		if j := slices.Index(*q, i); j >= 0 {
			*q = slices.Delete(*q, j, j+1)
			break
		}
	}
	s.slots[i].queued = false
}

// promote moves slot i's queued read from the guesses to the demands: a
// Need wants it now. Called with s.mu held.
func (s *PackStore) promote(i int) {
	if j := slices.Index(s.guesses, i); j >= 0 {
		s.guesses = slices.Delete(s.guesses, j, j+1)
		s.demands = append(s.demands, i)
		s.wake()
	}
}

// readPiece reads the next piece of slot i (loading, queued, nothing
// stale) into the arena and checks it; the reader of a slot's last piece
// completes the slot's check and publishes it. A piece or check whose
// expert was evicted meanwhile (claim) is dropped as it lands. Readers and
// a Get or WaitAny that would wait for the slot (rather than wait for busy
// readers) call it. Called with s.mu held, which it gives up during the
// read.
func (s *PackStore) readPiece(i int) {
	q := s.takePiece(i)
	s.mu.Unlock()
	if q.piece == 0 && s.readHook != nil {
		s.readHook(q.key)
	}
	buf, off := s.pieceAt(i, q)
	s.pieceRead(i, q, s.readAt(buf, off))
}

// pieceReq is one piece of a slot's read: its expert (key), piece and the
// slot's read it belongs to (gen).
type pieceReq struct {
	key, piece int
	gen        int64
	live       bool // submitted to native AIO and not yet ended
}

// takePiece takes the next piece of slot i's read (loading, queued,
// nothing stale) for the caller to read. Called with s.mu held.
func (s *PackStore) takePiece(i int) pieceReq {
	sl := &s.slots[i]
	q := pieceReq{key: sl.key, piece: sl.next, gen: sl.gen}
	if sl.next++; sl.next == s.pieces {
		s.unqueue(i)
	}
	sl.busy++
	s.inflight++
	return q
}

// pieceAt is where piece q of slot i lands in the arena and its offset in
// the experts file.
func (s *PackStore) pieceAt(i int, q pieceReq) ([]byte, int64) {
	lo := q.piece * s.pieceBytes
	hi := min(lo+s.pieceBytes, s.slotBytes)
	return s.arena[i*s.slotBytes+lo : i*s.slotBytes+hi], int64(s.x.Table[q.key].Offset) + int64(lo)
}

// pieceRead ends piece q of slot i, read into the arena (err the read's
// error): it checks the piece, and the slot once its last piece has been
// checked, publishing it. Called without s.mu, which it takes and holds
// on return.
func (s *PackStore) pieceRead(i int, q pieceReq, err error) {
	sl := &s.slots[i]
	key, gen := q.key, q.gen
	buf, off := s.pieceAt(i, q)
	var pc strata.PieceCheck
	if err == nil {
		pc = s.x.CheckPiece(key, buf, int64(q.piece*s.pieceBytes))
	} else {
		E := s.cfg.Experts
		err = fmt.Errorf("%s: reading layer %d expert %d at byte %d: %w", s.path, key/E, key%E, off, err)
	}
	c := q.piece
	s.mu.Lock()
	if sl.gen == gen {
		s.checks[i*s.pieces+c] = pc
		if err != nil && sl.rerr == nil {
			sl.rerr = err
		}
		if sl.done++; sl.done == s.pieces {
			rerr := sl.rerr
			s.mu.Unlock()
			ex, err := s.finish(i, key, rerr)
			s.mu.Lock()
			if sl.gen == gen {
				sl.ex, sl.err = ex, err
				if err != nil {
					sl.state = slotFailed
				} else {
					sl.state = slotReady
				}
				s.cond.Broadcast()
			}
		}
	}
	s.landed(i, gen)
	s.inflight--
	if s.inflight == 0 {
		s.cond.Broadcast() // Close may wait for it
	}
}

// landed ends a piece's work of read gen on slot i: the current read's, or
// a stale one, the last of which lets the slot's current read start.
// Called with s.mu held.
func (s *PackStore) landed(i int, gen int64) {
	sl := &s.slots[i]
	if sl.gen == gen {
		sl.busy--
		return
	}
	if sl.stale--; sl.stale == 0 && sl.queued {
		s.wake()
		s.cond.Broadcast() // a Get or WaitAny may read it itself
	}
}

// finish completes the check of slot key (layer*E+expert), read into
// arena slot i with its pieces checked (rerr the first piece's read
// error), and makes its expert.
func (s *PackStore) finish(i, key int, rerr error) (Expert, error) {
	if rerr != nil {
		return Expert{}, rerr
	}
	E := s.cfg.Experts
	layer, e := key/E, key%E
	buf := s.arena[i*s.slotBytes : (i+1)*s.slotBytes]
	sc, err := s.x.CheckPieces(key, buf, s.checks[i*s.pieces:(i+1)*s.pieces])
	if err != nil {
		return Expert{}, err
	}
	pay := sc.Payload
	var ex Expert
	for p, dst := range []*kernels.Matrix{&ex.Gate, &ex.Up, &ex.Down} {
		pt := s.x.Parts[p]
		m, err := kernels.NewMatrix(pt.Type, s.x.PartBytes(pay, p), int(pt.Ne0), int(pt.Ne1))
		if err != nil {
			return Expert{}, fmt.Errorf("%s: layer %d expert %d part %s: %w", s.path, layer, e, strata.PartNames[p], err)
		}
		*dst = m
	}
	return ex, nil
}

// readAt reads a whole slot; when the filesystem refuses a direct read it
// falls back to buffered reads for good and says so in the report.
func (s *PackStore) readAt(buf []byte, off int64) error {
	s.ioMu.Lock()
	fd, direct := s.fd, s.direct
	s.ioMu.Unlock()
	_, err := fd.ReadAt(buf, off)
	if err == nil || !direct || !isInvalid(err) {
		return err
	}
	s.ioMu.Lock()
	if s.direct {
		bfd, _, berr := osutil.OpenRegular(s.path)
		if berr != nil {
			s.ioMu.Unlock()
			return berr
		}
		s.direct = false
		s.directNote = "the filesystem refused an O_DIRECT read (" + err.Error() + "); buffered reads"
		old := s.fd
		s.fd = bfd
		// The old descriptor may be in use by another reader; it is
		// closed with the store.
		s.oldFDs = append(s.oldFDs, old)
	}
	fd = s.fd
	s.ioMu.Unlock()
	_, err = fd.ReadAt(buf, off)
	return err
}

// claim takes a slot for key: a free one, else the unpinned one that
// cachesim.Victim picks (the lowest Keep score, sparing the experts the
// current call has claimed or hit, then those read-ahead expects, while
// there is another; the rule's one home, which the replay follows), so
// that which expert goes depends only on the sequence of calls and never
// on read timing (a trace replays exactly, cachesim). A victim still being
// read goes at once, without waiting: the pieces of its read no one has
// taken are dropped, and those in flight are dropped as they land, before
// which no piece of the new read starts (arenaSlot.stale); only a victim
// of the current call's own (Spared, the last resort) is waited for while
// it is read, and the victim then picked anew. It returns -1
// when every slot is pinned or the store is closed. Called with s.mu held;
// it counts the read the caller starts.
func (s *PackStore) claim(key int) int {
	best := -1
	for {
		if s.closed {
			return -1 // no reader would take the job
		}
		best = -1
		v := cachesim.NewVictim(s.useWeight)
		for i := range s.slots {
			sl := &s.slots[i]
			if sl.key < 0 || sl.state == slotFailed {
				best = i
				break
			}
			if sl.pins > 0 {
				continue
			}
			v.Offer(i, sl.key, s.keyLast[sl.key], s.keyUses[sl.key], cachesim.ClassOf(sl.call == s.call, sl.want))
		}
		if best < 0 {
			best = v.Pick()
		}
		if best < 0 {
			return -1
		}
		// A victim the current call claimed or hit and still being read
		// (a batch needing more experts than the arena spares) is waited
		// for, as before, rather than dropped: the call's Gets could
		// otherwise drop each other's reads over and over.
		if sl := &s.slots[best]; sl.state != slotLoading || sl.call != s.call {
			break
		}
		s.flush() // what a batch queued may be what this waits for
		s.cond.Wait()
	}
	s.counters.Reads++
	s.counters.BytesRead += int64(s.slotBytes)
	sl := &s.slots[best]
	if sl.state == slotLoading {
		if sl.queued {
			s.unqueue(best)
		}
		s.counters.DroppedBytes += int64(s.slotBytes - min(sl.next*s.pieceBytes, s.slotBytes))
	}
	if sl.key >= 0 {
		s.where[sl.key] = -1
	}
	*sl = arenaSlot{key: key, state: slotLoading, call: s.call, gen: sl.gen + 1, stale: sl.stale + sl.busy}
	s.where[key] = best
	return best
}

// Need counts the experts a batch needs in layer and starts reading the
// ones not resident, in parallel, before the forward pass asks for them.
// Every hit is marked before the first miss claims a slot, so a miss never
// evicts an expert the same batch needs (read-ahead's guesses among them);
// read-ahead's expectations for layer are spent.
func (s *PackStore) Need(layer int, ids []int) {
	E := s.cfg.Experts
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // the readers are gone; Get says the store is closed
	}
	if s.rec != nil {
		s.rec.add(cachesim.OpNeed, layer, ids)
	}
	s.call++
	misses := s.missBuf[:0]
	for _, e := range ids {
		key := layer*E + e
		s.counters.Demands++
		s.tick++
		s.keyLast[key] = s.tick
		s.keyUses[key]++
		if i := s.where[key]; i >= 0 && s.slots[i].state != slotFailed {
			s.counters.Hits++
			sl := &s.slots[i]
			if sl.state == slotLoading {
				s.counters.LateHits++
			}
			if sl.guess {
				s.counters.ReadAheadHits++
				sl.guess = false
			}
			sl.call = s.call
			if sl.queued {
				s.promote(i) // a guess not read yet, wanted now
			}
			continue
		}
		s.counters.Misses++
		misses = append(misses, key)
	}
	if len(ids) > 0 {
		for e := 0; e < E; e++ {
			if i := s.where[layer*E+e]; i >= 0 {
				s.slots[i].want = false
			}
		}
	}
	s.missBuf = misses
	if len(misses) > 0 {
		s.counters.MissedNeeds++
	}
	// Leave a slot free for Get, so a batch needing more experts than
	// the arena holds never evicts the ones it is still waiting for.
	s.batch(func() {
		for _, key := range misses[:min(len(misses), len(s.slots)-1)] {
			if i := s.claim(key); i >= 0 {
				s.enqueue(i, false)
			}
		}
	})
}

// batch runs queue, which queues reads, and then starts them together.
// Called with s.mu held.
func (s *PackStore) batch(queue func()) {
	s.batching++
	queue()
	s.batching--
	s.flush()
}

// Guess starts reading experts of layer that read-ahead expects, up to
// half the arena, never evicting a slot in use; each expected expert,
// resident or read now, is spared by other reads until layer's next Need.
func (s *PackStore) Guess(layer int, ids []int) {
	E := s.cfg.Experts
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.rec != nil {
		s.rec.add(cachesim.OpGuess, layer, ids)
	}
	s.call++
	budget := len(s.slots) / 2
	s.batch(func() {
		for _, e := range ids {
			key := layer*E + e
			if i := s.where[key]; i >= 0 {
				if s.slots[i].state != slotFailed {
					s.slots[i].want = true
				}
				continue
			}
			if budget == 0 {
				continue
			}
			if i := s.claim(key); i >= 0 {
				budget--
				s.slots[i].guess = true
				s.slots[i].want = true
				s.counters.Guesses++
				s.enqueue(i, true)
			}
		}
	})
}

// Get returns the expert, waiting for its read (or reading it here when
// nothing started one), pinned until Release.
func (s *PackStore) Get(layer, e int) (*Expert, error) {
	key := layer*s.cfg.Experts + e
	t0 := time.Now()
	s.mu.Lock()
	defer func() {
		s.counters.WaitNanos += time.Since(t0).Nanoseconds()
		s.mu.Unlock()
	}()
	for {
		if s.closed {
			return nil, errors.New("expert store closed")
		}
		i := s.where[key]
		if i < 0 {
			if i = s.claim(key); i < 0 {
				if !s.closed {
					s.cond.Wait() // every slot is busy: wait for a read or release
				}
				continue
			}
			if s.rec != nil {
				s.rec.claimed(s, key)
			}
			s.enqueue(i, false)
		}
		sl := &s.slots[i]
		for sl.key == key && sl.state == slotLoading {
			if !s.aioOn() && sl.startable() {
				s.readPiece(i) // rather than wait for busy readers
				continue
			}
			s.cond.Wait()
		}
		if sl.key != key {
			continue // evicted while we waited; look again
		}
		if sl.state == slotFailed {
			err := sl.err
			s.where[key] = -1
			sl.key = -1
			return nil, err
		}
		// No recency here: Need gave it, in the batch's order (the order of
		// Gets depends on which reads finished first).
		sl.pins++
		return &sl.ex, nil
	}
}

// Release unpins an expert.
func (s *PackStore) Release(layer, e int) {
	s.mu.Lock()
	if i := s.where[layer*s.cfg.Experts+e]; i >= 0 && s.slots[i].pins > 0 {
		s.slots[i].pins--
		if s.slots[i].pins == 0 {
			s.cond.Broadcast()
		}
	}
	s.mu.Unlock()
}

// WaitAny waits until one of experts ids of layer is not being read (read,
// failed, or absent) or the store closes; the time counts as waiting.
func (s *PackStore) WaitAny(layer int, ids []int) {
	t0 := time.Now()
	s.mu.Lock()
	defer func() {
		s.counters.WaitNanos += time.Since(t0).Nanoseconds()
		s.mu.Unlock()
	}()
	for !s.closed {
		for _, e := range ids {
			if i := s.where[layer*s.cfg.Experts+e]; i < 0 || s.slots[i].state != slotLoading {
				return
			}
		}
		// Rather than wait for pieces no reader has started, read them here.
		read := false
		for _, e := range ids {
			if i := s.where[layer*s.cfg.Experts+e]; !s.aioOn() && s.slots[i].startable() {
				s.readPiece(i)
				read = true
				break
			}
		}
		if !read {
			s.cond.Wait()
		}
	}
}

// Resident reports whether the expert is in the arena (or on its way).
func (s *PackStore) Resident(layer, e int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.where[layer*s.cfg.Experts+e]
	return i >= 0 && s.slots[i].state != slotFailed
}

// Absent appends to dst the experts of ids of layer not in the arena (nor
// on their way), taking the store's lock once.
func (s *PackStore) Absent(layer int, ids, dst []int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range ids {
		if i := s.where[layer*s.cfg.Experts+e]; i < 0 || s.slots[i].state == slotFailed {
			dst = append(dst, e)
		}
	}
	return dst
}

// Ready reports whether the expert is in the arena and read.
func (s *PackStore) Ready(layer, e int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.where[layer*s.cfg.Experts+e]
	return i >= 0 && s.slots[i].state == slotReady
}

// DefaultReaders is StreamOptions.Readers's default: on the lent 16-vCPU
// Xeon (slot reads about 1.1-1.7 GB/s), bench decode's streaming run at
// -j2 waited 3.4 ms per token with 8 readers against 4.0-4.3 with 4 (two
// runs each, docs/BENCHMARKS.md): a layer's read-ahead and demand pieces
// all start at once.
const DefaultReaders = 8

// DefaultReadAheadLayers is StreamOptions.ReadAheadLayers's default.
const DefaultReadAheadLayers = 1

// ReadAhead is the layers read-ahead guesses for, 0 when it is off (as it
// is when the arena holds every expert).
func (s *PackStore) ReadAhead() int {
	if !s.readAhead {
		return 0
	}
	return s.readAheadLayers
}

// Counters is a snapshot of the cumulative counts.
func (s *PackStore) Counters() StreamCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters
}

// Report summarises the counts between two snapshots over tokens tokens.
func (s *PackStore) Report(from, to StreamCounters, tokens int) *StreamReport {
	d := to.sub(from)
	r := &StreamReport{
		Tokens:      tokens,
		ArenaSlots:  len(s.slots),
		ArenaMB:     float64(len(s.slots)*s.slotBytes) / (1 << 20),
		ArenaCapMB:  s.capMB,
		TotalSlots:  len(s.where),
		SlotBytes:   int64(s.slotBytes),
		FillSlots:   s.fillSlots,
		FillSeconds: s.fillSeconds,
		Counters:    d,
	}
	s.ioMu.Lock()
	r.DirectIO, r.DirectIONote = s.direct, s.directNote
	s.ioMu.Unlock()
	s.mu.Lock()
	r.NativeAIO, r.NativeAIONote = s.aioOn(), s.aioNote
	s.mu.Unlock()
	if d.Demands > 0 {
		r.HitRate = float64(d.Hits) / float64(d.Demands)
	}
	if tokens > 0 {
		n := float64(tokens)
		r.MissesPerToken = float64(d.Misses) / n
		r.ReadMBPerToken = float64(d.BytesRead) / (1 << 20) / n
		r.DroppedMBPerToken = float64(d.DroppedBytes) / (1 << 20) / n
		r.LateHitsPerToken = float64(d.LateHits) / n
		r.ReadAheadHitsPerToken = float64(d.ReadAheadHits) / n
		r.GuessesPerToken = float64(d.Guesses) / n
		r.WaitMsPerToken = float64(d.WaitNanos) / 1e6 / n
		r.MissedNeedsPerToken = float64(d.MissedNeeds) / n
	}
	return r
}

// Close stops the readers, gives the arena back once no expert is pinned
// and no read into it is under way (a forward pass still running ends its
// Gets with an error and releases what it holds) and closes the files.
func (s *PackStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cond.Broadcast()
	s.work.Broadcast()
	s.mu.Unlock()
	if s.aio != nil {
		s.aioWake()
	}
	s.wg.Wait() // the readers finish what is queued, then stop
	var errs []error
	s.mu.Lock()
	// A Get or WaitAny may still be reading into the arena (its own load).
	for s.pinned() || s.inflight > 0 {
		s.cond.Wait()
	}
	for i := range s.slots {
		s.slots[i].ex = Expert{}
	}
	s.arena = nil
	if s.unmap != nil {
		errs = append(errs, s.unmap())
		s.unmap = nil
	}
	s.mu.Unlock()
	s.ioMu.Lock()
	for _, f := range append(s.oldFDs, s.fd) {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	s.ioMu.Unlock()
	if s.aio != nil && !s.aioDead {
		errs = append(errs, s.aio.destroy())
	}
	errs = append(errs, s.x.Close())
	return errors.Join(errs...)
}

// pinned reports whether some expert is pinned (called with s.mu held).
func (s *PackStore) pinned() bool {
	for i := range s.slots {
		if s.slots[i].pins > 0 {
			return true
		}
	}
	return false
}

// PayloadBytes is the weight bytes of one expert (a slot without padding).
func (s *PackStore) PayloadBytes() int64 { return int64(s.x.PayloadBytes()) }

// SlotBytes is the bytes one miss reads.
func (s *PackStore) SlotBytes() int64 { return int64(s.slotBytes) }

// MeasureReads reads n slots chosen at random (seeded) with readers
// goroutines, the way misses are read (each slot's pieces taken in turn
// by the readers), and returns bytes per second. Direct reads bypass the
// page cache, so this is the device's speed; buffered reads may come from
// memory (the report says which).
func (s *PackStore) MeasureReads(n, readers int, seed uint64) (float64, error) {
	total := len(s.where)
	keys := rand.New(rand.NewPCG(seed, 1)).Perm(total)
	for len(keys) < n {
		keys = append(keys, keys...)
	}
	keys = keys[:n]
	var next atomic.Int64
	errs := make(chan error, readers)
	t0 := time.Now()
	for r := 0; r < readers; r++ {
		go func() {
			buf := alignedBytes(s.pieceBytes, strata.SlotAlign)
			for {
				j := int(next.Add(1)) - 1
				if j >= len(keys)*s.pieces {
					errs <- nil
					return
				}
				lo := j % s.pieces * s.pieceBytes
				hi := min(lo+s.pieceBytes, s.slotBytes)
				if err := s.readAt(buf[:hi-lo], int64(s.x.Table[keys[j/s.pieces]].Offset)+int64(lo)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for r := 0; r < readers; r++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	sec := time.Since(t0).Seconds()
	if first != nil {
		return 0, first
	}
	return float64(n*s.slotBytes) / sec, nil
}

// ReadLoad starts reading random slots (seeded) in the background, whole
// slots with two goroutines at once into buffers of their own, paced to
// bytesPerS in all, the way a streaming run's reads load the machine (by
// native AIO where the store reads so, the goroutines parked while each
// read is under way) but with their bytes unused: a resident run under it
// shows what the reads themselves cost the compute here (on a VM, the
// host's I/O work shares the cores). A bytesPerS of 0 or less reads
// without pause. stop ends it (it must come before Close) and returns
// the bytes read, the seconds it ran and the first read error.
func (s *PackStore) ReadLoad(bytesPerS float64, seed uint64) (stop func() (int64, float64, error)) {
	const workers = 2
	var quit atomic.Bool
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make([]error, workers)
	nslot := len(s.where)
	s.mu.Lock()
	useAIO := s.aioOn()
	s.mu.Unlock()
	t0 := time.Now()
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			buf := alignedBytes(s.slotBytes, strata.SlotAlign)
			read := func(off int64) error { return s.readAt(buf, off) }
			if useAIO {
				// The kernel writes the buffer after io_submit returns,
				// so it lives outside the Go heap, unmapped only after
				// destroy has waited for the request.
				abuf, unmap, err := mapArena(s.slotBytes, strata.SlotAlign)
				if err != nil {
					errs[w] = err
					return
				}
				defer unmap()
				buf = abuf
				a, err := newAIO(1, 1)
				if err != nil {
					errs[w] = err
					return
				}
				defer a.destroy()
				read = func(off int64) error {
					a.prep(0, s.aioFd, buf, off)
					if _, err := a.submit(); err != nil {
						return err
					}
					for {
						evs, err := a.wait()
						if err != nil {
							return err
						}
						if len(evs) > 0 {
							if evs[0].res != int64(len(buf)) {
								return fmt.Errorf("%s: a background read of %d bytes at %d returned %d", s.path, len(buf), off, evs[0].res)
							}
							return nil
						}
					}
				}
			}
			// At least one read each, however soon stop comes.
			for n := int64(0); n == 0 || !quit.Load(); {
				key := rng.IntN(nslot)
				if err := read(int64(s.x.Table[key].Offset)); err != nil {
					errs[w] = err
					return
				}
				n += int64(s.slotBytes)
				total.Add(int64(s.slotBytes))
				if bytesPerS > 0 {
					due := time.Duration(float64(n) / (bytesPerS / workers) * 1e9)
					if d := due - time.Since(t0); d > 0 {
						time.Sleep(d)
					}
				}
			}
		})
	}
	return func() (int64, float64, error) {
		quit.Store(true)
		wg.Wait()
		return total.Load(), time.Since(t0).Seconds(), errors.Join(errs...)
	}
}

// Direct reports whether slot reads bypass the page cache, and why not.
func (s *PackStore) Direct() (bool, string) {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	return s.direct, s.directNote
}

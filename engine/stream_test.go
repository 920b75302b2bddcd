package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/strata"
)

// readModes runs f for each way the store reads slots: native AIO (where
// the test's filesystem takes direct reads and the platform has it; else
// that subtest is skipped) and reader goroutines.
func readModes(t *testing.T, f func(t *testing.T, opt StreamOptions)) {
	for _, noAIO := range []bool{false, true} {
		name := "aio"
		if noAIO {
			name = "readers"
		}
		t.Run(name, func(t *testing.T) { f(t, StreamOptions{NoAIO: noAIO}) })
	}
}

// wantReadMode fails (or, where native AIO cannot be had, skips) a test
// whose store does not read the way opt asks.
func wantReadMode(t *testing.T, ps *PackStore, opt StreamOptions) {
	t.Helper()
	if opt.NoAIO && ps.aio != nil {
		t.Fatal("NoAIO set, and the store reads with native AIO")
	}
	if !opt.NoAIO && ps.aio == nil {
		if !aioAvailable || !ps.direct {
			t.Skipf("no native AIO here (direct reads %v: %s)", ps.direct, ps.directNote)
		}
		t.Fatal("direct reads, and the store did not set up native AIO")
	}
}

// openSmallArena opens the tiny model's pack with an arena of slots slots
// and returns it with the arena's experts, the first to be evicted first,
// as (layer, expert) pairs.
func openSmallArena(t *testing.T, slots int) (*Model, [][2]int) {
	t.Helper()
	return openSmallArenaWith(t, slots, StreamOptions{})
}

// openSmallArenaWith is openSmallArena with the stream options opt (its
// arena size set here).
func openSmallArenaWith(t *testing.T, slots int, opt StreamOptions) (*Model, [][2]int) {
	t.Helper()
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	m0, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb := float64(m0.Stream().SlotBytes()) / (1 << 20)
	m0.Close()
	opt.ArenaMB = sb * float64(slots)
	m, err := Open(dir, Options{Stream: opt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ps := m.Stream()
	ps.StartTrace()
	tr := ps.StopTrace(0)
	E := m.Config.Experts
	var order [][2]int
	for _, s := range tr.Initial {
		order = append(order, [2]int{int(s.Key) / E, int(s.Key) % E})
	}
	if len(order) != slots {
		t.Fatalf("%d experts resident in an arena of %d slots", len(order), slots)
	}
	return m, order
}

// absent is an expert of layer l not in the arena.
func absent(t *testing.T, m *Model, l int, not ...int) int {
	for e := 0; e < m.Config.Experts; e++ {
		if !m.Experts.Resident(l, e) && !slices.Contains(not, e) {
			return e
		}
	}
	t.Fatalf("every expert of layer %d is resident", l)
	return -1
}

// TestNeedSparesItsOwnHits: a Need whose first expert is a miss and whose
// second is the arena's next victim keeps the second (it marks every hit
// before a miss claims a slot) and evicts the one after it.
func TestNeedSparesItsOwnHits(t *testing.T) {
	m, order := openSmallArena(t, m0Used(t)+2)
	v, next := order[0], order[1]
	a := absent(t, m, v[0])
	before := m.Stream().Counters()
	m.Experts.Need(v[0], []int{a, v[1]})
	d := m.Stream().Counters().sub(before)
	if d.Hits != 1 || d.Misses != 1 {
		t.Fatalf("counters %+v, want 1 hit and 1 miss", d)
	}
	if !m.Experts.Resident(v[0], v[1]) {
		t.Fatalf("the batch's miss evicted layer %d expert %d, which the same batch needs", v[0], v[1])
	}
	if !m.Experts.Resident(v[0], a) || m.Experts.Resident(next[0], next[1]) {
		t.Fatalf("layer %d expert %d should have replaced layer %d expert %d", v[0], a, next[0], next[1])
	}
}

// TestGuessSparesExpected: an expert read-ahead expects, resident already,
// outlives a miss of another layer that would otherwise evict it, until
// its own layer's Need, which does not demand it, spends the expectation.
func TestGuessSparesExpected(t *testing.T) {
	m, order := openSmallArena(t, m0Used(t)+2)
	v, next := order[0], order[1]
	other := (v[0] + 1) % m.Config.Layers
	m.Experts.Guess(v[0], []int{v[1]})
	m.Experts.Need(other, []int{absent(t, m, other)})
	if !m.Experts.Resident(v[0], v[1]) {
		t.Fatalf("a miss of layer %d evicted layer %d expert %d, which read-ahead expects", other, v[0], v[1])
	}
	if m.Experts.Resident(next[0], next[1]) {
		t.Fatalf("layer %d expert %d, the next victim, is still resident", next[0], next[1])
	}
	m.Experts.Need(v[0], []int{absent(t, m, v[0], v[1])})
	if m.Experts.Resident(v[0], v[1]) {
		t.Fatalf("layer %d expert %d survived its layer's Need without being demanded", v[0], v[1])
	}
}

func m0Used(t *testing.T) int {
	m, err := Open(testutil.TinyModel(t, "model-iq3s.gguf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return m.Config.ExpertsUsed
}

// TestTopGuesses: the union of each row's k highest, ties to the lower
// id, in the order first picked.
func TestTopGuesses(t *testing.T) {
	scores := []float32{
		0.1, 0.9, 0.5, 0.5, 0.0,
		0.7, 0.9, 0.0, 0.0, 0.8,
	}
	got := topGuesses(scores, 5, 2)
	if want := []int{1, 2, 4}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := topGuesses(scores[:5], 5, 9); !slices.Equal(got, []int{1, 2, 3, 0, 4}) {
		t.Fatalf("k beyond E: got %v", got)
	}
}

// arrivalStore plays reads that arrive in a scrambled order: Ready says
// yes to a changing subset of experts, so a token's experts run in groups
// that differ from call to call.
type arrivalStore struct {
	ExpertStore
	n *int
}

func (a arrivalStore) Ready(layer, e int) bool {
	*a.n++
	return (*a.n*7+e*3+layer)%5 < 2
}

// TestExpertsAnyArrivalOrder: decode steps whose experts run in whatever
// groups their reads arrive in give the bits of the plain model, in both
// modes.
func TestExpertsAnyArrivalOrder(t *testing.T) {
	tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:12]
	for _, mode := range []Mode{Fast, Exact} {
		m, err := Open(testutil.TinyModel(t, "model-iq3s.gguf"), Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		decode := func() []float32 {
			s := m.NewSession()
			var logits []float32
			if _, err := s.Generate(t.Context(), tokens, GenerateOptions{MaxTokens: 8,
				OnLogits: func(r []float32) error { logits = append(logits, r...); return nil }}); err != nil {
				t.Fatal(err)
			}
			return logits
		}
		want := decode()
		plain := m.Experts
		n := 0
		m.Experts = arrivalStore{plain, &n}
		got := decode()
		m.Experts = plain
		m.Close()
		if n == 0 {
			t.Fatal("the store was never asked what is ready")
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: logit %d is %g with scrambled arrivals, %g in order", mode, i, got[i], want[i])
			}
		}
	}
}

// TestStreamCloseMidDecode: a decode cancelled between tokens, and a
// decode whose expert store is closed under it (its waits, Need and Guess
// included), end (the second with an error)
// without a deadlock, a panic or a goroutine left behind.
func TestStreamCloseMidDecode(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	tokens := readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:8]
	m0, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := m0.Stream().Report(StreamCounters{}, StreamCounters{}, 0)
	m0.Close()
	arena := float64(rep.SlotBytes) * float64(rep.TotalSlots/4) / (1 << 20)
	for _, closeUnder := range []bool{false, true} {
		m, err := Open(dir, Options{Stream: StreamOptions{ArenaMB: arena}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		steps := 0
		go func() {
			_, err := m.NewSession().Generate(ctx, tokens, GenerateOptions{MaxTokens: 1000,
				OnToken: func(int32) error {
					if steps++; steps == 3 {
						if closeUnder {
							// The store alone: closing the model
							// unmaps the dense weights the pass reads.
							go m.Stream().Close()
						} else {
							cancel()
						}
					}
					return nil
				}})
			done <- err
		}()
		if err := <-done; err == nil {
			t.Fatalf("close under it %v: the decode of 1000 tokens ended without an error after %d", closeUnder, steps)
		}
		cancel()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The readers exit as Close returns; let the scheduler retire them.
	// (The matmul pools' workers stay, by design, and are not counted.)
	left := func() string {
		buf := make([]byte, 1<<20)
		var out []string
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "engine.(*PackStore)") || strings.Contains(g, "engine.(*Session)") {
				out = append(out, g)
			}
		}
		return strings.Join(out, "\n\n")
	}
	for i := 0; left() != "" && i < 1000; i++ {
		time.Sleep(time.Millisecond)
	}
	if g := left(); g != "" {
		t.Fatalf("goroutines of the store or a session left:\n%s", g)
	}
}

// TestReadAheadScore: a layer's guesses are read while its score warms
// up and while at least half of its would-be reads were picked; the score
// follows the recent tokens (the counts halve past the window).
func TestReadAheadScore(t *testing.T) {
	r := &raLayer{}
	guess := func(pending []int, picked []int) {
		r.pending = append(r.pending[:0], pending...)
		r.score(picked)
	}
	for r.reads < raWarm {
		if !r.pays() {
			t.Fatalf("no guesses after %d would-be reads, warm-up is %d", r.reads, raWarm)
		}
		guess([]int{1, 2, 3, 4}, []int{9}) // all wrong
	}
	if r.pays() || r.used != 0 {
		t.Fatalf("reads %d used %d: pays %v after a warm-up of wrong guesses", r.reads, r.used, r.pays())
	}
	for !r.pays() {
		guess([]int{1, 2}, []int{2, 1, 7})
	}
	if 2*r.used < r.reads || 2*(r.used-2) >= r.reads-2 {
		t.Fatalf("reads %d used %d: turned on at the wrong count", r.reads, r.used)
	}
	for i := 0; i < 2*raWindow; i++ {
		guess([]int{5}, []int{5})
	}
	if r.reads > raWindow || r.used*10 < r.reads*9 {
		t.Fatalf("reads %d used %d after %d right guesses: the window does not forget", r.reads, r.used, 2*raWindow)
	}
}

// TestReadAheadScorePerDistance: a layer's guesses from each distance are
// scored on their own (a nearer guess made later does not replace a
// farther one's would-be reads before the layer's routing scores them).
func TestReadAheadScorePerDistance(t *testing.T) {
	const layers, depth = 3, 2
	s := &Session{ra: make([]raLayer, layers*depth), raDepth: depth}
	far, near := &s.ra[1*depth+1], &s.ra[1*depth+0]
	far.pending = append(far.pending, 4, 5, 6) // guessed two layers before layer 1
	near.pending = append(near.pending, 7)     // one layer before: 4..6 resident by then
	s.raScore(1, []int{5, 6, 7, 9})
	if far.reads != 3 || far.used != 2 || near.reads != 1 || near.used != 1 {
		t.Fatalf("far %d of %d, near %d of %d; want 2 of 3 and 1 of 1", far.used, far.reads, near.used, near.reads)
	}
	for i := range s.ra {
		if r := &s.ra[i]; i/depth != 1 && r.reads != 0 {
			t.Fatalf("layer %d distance %d scored: %+v", i/depth, i%depth, r)
		}
	}
}

// TestWaiterReadsWhatNoReaderStarted: with the one reader goroutine held
// in a read-ahead read, a Need's two misses are read by the forward pass's
// own WaitAny and Get rather than waiting behind it (a read no reader has
// started is taken by whoever would wait for it), and Close still waits
// for every read into the arena. (With native AIO every queued read is
// submitted by whoever queues it, so no read waits for a reader.)
func TestWaiterReadsWhatNoReaderStarted(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	m0, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb := float64(m0.Stream().SlotBytes()) / (1 << 20)
	slots := m0.Config.ExpertsUsed + 4
	m0.Close()
	m, err := Open(dir, Options{Stream: StreamOptions{ArenaMB: sb * float64(slots), Readers: 1, NoAIO: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ps := m.Stream()
	// The held read is layer 1's (layer 0's Need spends only layer 0's
	// expectations, so it is spared); in layer 0 an expert's key is its id.
	a := absent(t, m, 1)
	b := absent(t, m, 0)
	c := absent(t, m, 0, b)
	aKey := m.Config.Experts + a
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var readBy []int // the keys read, in order, by anyone but the held reader
	ps.readHook = func(key int) {
		if key == aKey {
			close(started)
			<-release
			return
		}
		mu.Lock()
		readBy = append(readBy, key)
		mu.Unlock()
	}
	m.Experts.Guess(1, []int{a})
	<-started // the reader is in a's read until release
	m.Experts.Need(0, []int{b, c})
	done := make(chan error, 1)
	go func() {
		m.Experts.WaitAny(0, []int{b, c})
		if !m.Experts.Ready(0, b) {
			done <- fmt.Errorf("WaitAny returned with expert %d not read", b)
			return
		}
		ex, err := m.Experts.Get(0, c)
		if err == nil && ex.Gate.Rows == 0 {
			err = fmt.Errorf("expert %d has no gate rows", c)
		}
		if err == nil {
			m.Experts.Release(0, c)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		close(release)
		t.Fatal("the forward pass waited for the held reader")
	}
	mu.Lock()
	got := slices.Clone(readBy)
	mu.Unlock()
	if !slices.Equal(got, []int{b, c}) || m.Experts.Ready(1, a) {
		t.Fatalf("read %v while the reader held layer 1 expert %d (ready %v); want %d then %d", got, a, m.Experts.Ready(1, a), b, c)
	}
	close(release)
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEvictionDropsReadUnderWay: a Need that evicts an expert whose read
// is under way (the one reader held in its first piece; with native AIO,
// one request in flight and the reaper held in its completion) returns
// without waiting for it; the pieces no one took are dropped and counted,
// the new expert's read starts only once the held piece has landed (it
// would write the same memory), and the new expert's data are its own
// (those of a store holding every expert), not the evicted one's.
func TestEvictionDropsReadUnderWay(t *testing.T) { readModes(t, testEvictionDropsReadUnderWay) }

func testEvictionDropsReadUnderWay(t *testing.T, opt StreamOptions) {
	defer func(p int) { pieceTarget = p }(pieceTarget)
	pieceTarget = strata.SlotAlign
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	full, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	sb := float64(full.Stream().SlotBytes()) / (1 << 20)
	slots := full.Config.ExpertsUsed + 4
	opt.ArenaMB, opt.Readers = sb*float64(slots), 1
	m, err := Open(dir, Options{Stream: opt})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ps := m.Stream()
	wantReadMode(t, ps, opt)
	if ps.pieces < 2 {
		t.Fatalf("slots of %d bytes in %d pieces; the test needs two or more", ps.slotBytes, ps.pieces)
	}
	E := m.Config.Experts
	a := absent(t, m, 1)
	aKey := E + a
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ps.readHook = func(key int) {
		if key == aKey {
			once.Do(func() { close(started) })
			<-release
		}
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	m.Experts.Guess(1, []int{a})
	<-started // the reader is in a's first piece until release
	i := ps.where[aKey]
	// Layer 1's Need spends read-ahead's expectation of a; then misses in
	// layer 0 evict the arena's experts until a goes.
	r := -1
	for e := 0; e < E && r < 0; e++ {
		if e != a && m.Experts.Resident(1, e) {
			r = e
		}
	}
	if r < 0 {
		t.Fatal("no expert of layer 1 resident")
	}
	done := make(chan int, 1)
	go func() {
		m.Experts.Need(1, []int{r})
		for n := 0; n < 4*slots; n++ {
			x := -1
			for e := 0; e < E && x < 0; e++ {
				if !m.Experts.Resident(0, e) {
					x = e
				}
			}
			if x < 0 {
				break
			}
			m.Experts.Need(0, []int{x})
			if !m.Experts.Resident(1, a) {
				done <- x
				return
			}
		}
		done <- -1
	}()
	var x int
	select {
	case x = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("a Need waited for the held read of the expert it evicted")
	}
	if x < 0 {
		t.Fatalf("layer 1 expert %d was never evicted", a)
	}
	ps.mu.Lock()
	j, sl := ps.where[x], ps.slots[i]
	dropped := ps.counters.DroppedBytes
	ps.mu.Unlock()
	if j != i || sl.key != x || sl.stale != 1 || sl.next != 0 || !sl.queued {
		t.Fatalf("expert %d in slot %d (a's slot %d): key %d, stale %d, next %d, queued %v; want a's slot, one stale piece, its own read not started", x, j, i, sl.key, sl.stale, sl.next, sl.queued)
	}
	if want := int64(ps.slotBytes - ps.pieceBytes); dropped != want {
		t.Fatalf("dropped %d bytes, want %d (all but the held piece)", dropped, want)
	}
	got := make(chan error, 1)
	go func() {
		ex, err := m.Experts.Get(0, x)
		if err == nil {
			defer m.Experts.Release(0, x)
			var want *Expert
			if want, err = full.Experts.Get(0, x); err == nil {
				defer full.Experts.Release(0, x)
				for p, pair := range [][2][]byte{{ex.Gate.Data, want.Gate.Data}, {ex.Up.Data, want.Up.Data}, {ex.Down.Data, want.Down.Data}} {
					if !bytes.Equal(pair[0], pair[1]) {
						err = fmt.Errorf("layer 0 expert %d part %d differs from the full store's", x, p)
						break
					}
				}
			}
		}
		got <- err
	}()
	// Get cannot read x itself while the held piece may still land in
	// its memory; it waits for it. Watched for a while, so that the Get
	// and the readers have had their chance to take a piece.
	for range 50 {
		ps.mu.Lock()
		next := ps.slots[i].next
		ps.mu.Unlock()
		if next != 0 {
			t.Fatalf("%d pieces of expert %d's read taken before the stale piece landed", next, x)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	released = true
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Get never got the expert read into the evicted one's slot")
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadAheadOffWhenAllResident: a store whose arena holds every expert
// never reads after its fill, so it does not read ahead (no router-copy
// product per layer, none of its bytes in the step's), while a smaller
// arena does.
func TestReadAheadOffWhenAllResident(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	full, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	sb := float64(full.Stream().SlotBytes()) / (1 << 20)
	small, err := Open(dir, Options{Stream: StreamOptions{ArenaMB: sb * float64(full.Config.ExpertsUsed+4)}})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if full.Experts.ReadAhead() != 0 || small.Experts.ReadAhead() != DefaultReadAheadLayers {
		t.Fatalf("read-ahead %d layers with every expert resident, %d with a small arena; want 0 and %d",
			full.Experts.ReadAhead(), small.Experts.ReadAhead(), DefaultReadAheadLayers)
	}
	copies := func(m *Model) int {
		n := 0
		for _, mm := range m.TokenMatrices() {
			for l := range m.Layers {
				if mm == m.Layers[l].RouterQ8 {
					n++
				}
			}
		}
		return n
	}
	if full.Layers[0].RouterQ8 == nil || copies(full) != 0 || copies(small) != len(small.Layers) {
		t.Fatalf("router copies in the step's matrices: %d with every expert resident, %d with a small arena of %d layers", copies(full), copies(small), len(small.Layers))
	}
	s := full.NewSession()
	if _, err := s.Generate(context.Background(), []int32{1, 2, 3}, GenerateOptions{MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
	if c := full.Stream().Counters(); c.Guesses != 0 || c.Misses != 0 {
		t.Fatalf("counters %+v after a decode with every expert resident", c)
	}
}

// TestLateHitCounted: a Need that hits a guess whose read is still under
// way counts a late hit (the one reader held in that read, or the AIO
// reaper in its completion), and a hit on a read expert does not.
func TestLateHitCounted(t *testing.T) { readModes(t, testLateHitCounted) }

func testLateHitCounted(t *testing.T, opt StreamOptions) {
	m, order := openSmallArenaWith(t, m0Used(t)+4, opt)
	ps := m.Stream()
	wantReadMode(t, ps, opt)
	a := absent(t, m, 1)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ps.readHook = func(key int) {
		if key == m.Config.Experts+a {
			once.Do(func() { close(started) })
			<-release
		}
	}
	m.Experts.Guess(1, []int{a})
	<-started
	r := order[len(order)-1] // read at the fill
	m.Experts.Need(r[0], []int{r[1]})
	c0 := ps.Counters()
	m.Experts.Need(1, []int{a})
	c1 := ps.Counters()
	close(release)
	if c0.LateHits != 0 || c1.LateHits != 1 || c1.Hits != c0.Hits+1 || c1.ReadAheadHits != c0.ReadAheadHits+1 {
		t.Fatalf("late hits %d after a hit on a read expert, %d after a hit on the held read (hits %d -> %d, read-ahead hits %d -> %d); want 0 and 1",
			c0.LateHits, c1.LateHits, c0.Hits, c1.Hits, c0.ReadAheadHits, c1.ReadAheadHits)
	}
	if _, err := m.Experts.Get(1, a); err != nil {
		t.Fatal(err)
	}
	m.Experts.Release(1, a)
}

// TestReadLoad: a background read load reads slots of the pack (at least
// one per worker however soon it stops, none of them into the arena) in
// either read mode, and stops.
func TestReadLoad(t *testing.T) {
	readModes(t, func(t *testing.T, opt StreamOptions) {
		m, _ := openSmallArenaWith(t, m0Used(t)+4, opt)
		ps := m.Stream()
		wantReadMode(t, ps, opt)
		before := ps.Counters()
		stop := ps.ReadLoad(1e9, 1)
		n, sec, err := stop()
		if err != nil || n < 2*ps.SlotBytes() || n%ps.SlotBytes() != 0 || sec <= 0 {
			t.Fatalf("read %d bytes (slots of %d) in %g s, error %v", n, ps.SlotBytes(), sec, err)
		}
		if c := ps.Counters(); c != before {
			t.Fatalf("the store's counters moved: %+v -> %+v", before, c)
		}
	})
}

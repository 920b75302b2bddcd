package engine

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/strata"
)

// TestPackMatchesGGUF: a pack decodes to the same tokens and the same logit
// bits as its GGUF with the arena holding every expert, a quarter of them,
// and with cache-aware routing at bonus 0; only the figures differ.
func TestPackMatchesGGUF(t *testing.T) {
	packMatchesGGUF(t, testutil.TinyModel(t, "model-mixed.gguf"), readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:24])
}

// TestPackMatchesGGUFQwen35: the same for the hybrid qwen35moe (IQ4_NL
// routed experts streamed; delta nets, attention, shared experts and the
// Q8_0 router copies dense in model.gguf).
func TestPackMatchesGGUFQwen35(t *testing.T) {
	packMatchesGGUF(t, tiny35(t, "model-iq4nl.gguf"), readI32(t, tiny35(t, "refs", "eval_tokens.i32.bin"))[:24])
}

func packMatchesGGUF(t *testing.T, src string, tokens []int32) {
	dir := t.TempDir()
	enginetest.BuildPack(t, src, dir)
	g, err := Open(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const steps = 24
	run := func(m *Model, routing Routing) ([]int32, []float32) {
		s := m.NewSession()
		s.Routing = routing
		var logits []float32
		res, err := s.Generate(t.Context(), tokens, GenerateOptions{
			MaxTokens: steps,
			OnLogits:  func(r []float32) error { logits = append(logits, r...); return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.GeneratedIDs, logits
	}
	wantIDs, wantLogits := run(g, Routing{})
	slot := func(m *Model) float64 { return float64(m.Stream().slotBytes) / (1 << 20) }
	for _, tc := range []struct {
		name    string
		quarter bool
		routing Routing
	}{
		{"full arena", false, Routing{}},
		{"quarter arena", true, Routing{}},
		{"quarter arena, cache bonus 0", true, Routing{CacheAware: true, Bonus: 0, Exact: 3}},
		{"quarter arena, buffered, no read-ahead", true, Routing{}},
		{"quarter arena, slots read in pieces", true, Routing{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "pieces") {
				defer func(p int) { pieceTarget = p }(pieceTarget)
				pieceTarget = strata.SlotAlign
			}
			opt := Options{}
			if tc.quarter {
				probe, err := Open(dir, Options{Stream: StreamOptions{ArenaMB: 1e-9 + 0}})
				if err == nil {
					probe.Close()
					t.Fatal("an arena too small for one token was accepted")
				}
				m0, err := Open(dir, Options{Stream: StreamOptions{ArenaMB: 10}})
				if err != nil {
					t.Fatal(err)
				}
				sb := slot(m0)
				total := m0.Stream().Report(StreamCounters{}, StreamCounters{}, 0).TotalSlots
				m0.Close()
				opt.Stream.ArenaMB = sb * float64(total/4)
			}
			if strings.Contains(tc.name, "buffered") {
				opt.Stream.Buffered, opt.Stream.NoReadAhead = true, true
			}
			m, err := Open(dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ps := m.Stream()
			before := ps.Counters()
			ids, logits := run(m, tc.routing)
			rep := ps.Report(before, ps.Counters(), len(tokens)+steps-1)
			t.Logf("%s: slots %d/%d (%d pieces each), hit rate %.3f, misses/token %.2f, read-ahead hits/token %.2f, MB/token %.3f, direct %v %s",
				tc.name, rep.ArenaSlots, rep.TotalSlots, ps.pieces, rep.HitRate, rep.MissesPerToken, rep.ReadAheadHitsPerToken, rep.ReadMBPerToken, rep.DirectIO, rep.DirectIONote)
			if strings.Contains(tc.name, "pieces") && ps.pieces < 2 {
				t.Fatalf("slots of %d bytes read in %d pieces", ps.slotBytes, ps.pieces)
			}
			if tc.quarter != (rep.ArenaSlots < rep.TotalSlots) {
				t.Fatalf("arena of %d slots of %d", rep.ArenaSlots, rep.TotalSlots)
			}
			if !tc.quarter && rep.Counters.Misses != 0 {
				t.Errorf("full arena: %d misses", rep.Counters.Misses)
			}
			if tc.quarter && rep.Counters.Misses == 0 {
				t.Errorf("quarter arena: no misses")
			}
			for i := range wantIDs {
				if ids[i] != wantIDs[i] {
					t.Fatalf("token %d: %d, GGUF gives %d", i, ids[i], wantIDs[i])
				}
			}
			for i := range wantLogits {
				if math.Float32bits(logits[i]) != math.Float32bits(wantLogits[i]) {
					t.Fatalf("logit %d: %g, GGUF gives %g", i, logits[i], wantLogits[i])
				}
			}
		})
	}
}

// TestPackRejectsCorruptSlot: a flipped byte in a slot is caught by its CRC
// when the slot is read, naming the file, layer and expert.
func TestPackRejectsCorruptSlot(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq3s.gguf"), dir)
	x, err := strata.OpenExperts(filepath.Join(dir, "model.experts"))
	if err != nil {
		t.Fatal(err)
	}
	slot := int64(x.Table[2*int(x.NExpert)+5].Offset) // layer 2, expert 5
	pay, slotBytes := int64(x.PayloadBytes()), int(x.SlotBytes)
	x.Close()
	flip := func(off int64) {
		fh, err := os.OpenFile(filepath.Join(dir, "model.experts"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := []byte{0}
		fh.ReadAt(b, off)
		b[0] ^= 0x40
		fh.WriteAt(b, off)
		fh.Close()
	}
	// In one read, and in pieces with the flipped byte in the last
	// piece's payload (the first pieces' checks pass).
	for _, tc := range []struct {
		piece int
		at    int64
	}{{0, 100}, {strata.SlotAlign, pay - 1}} {
		flip(slot + tc.at)
		if tc.piece > 0 {
			defer func(p int) { pieceTarget = p }(pieceTarget)
			pieceTarget = tc.piece
			if size, n := slotPieces(slotBytes, strata.SlotAlign); n < 2 || tc.at < int64((n-1)*size) {
				t.Fatalf("byte %d of a slot of %d in pieces of %d: not in the last of several", tc.at, slotBytes, size)
			}
		}
		_, err = Open(dir, Options{})
		if err == nil || !strings.Contains(err.Error(), "layer 2 expert 5") || !strings.Contains(err.Error(), "CRC") {
			t.Fatalf("pieces of %d: error %v, want a CRC error naming layer 2 expert 5", tc.piece, err)
		}
		flip(slot + tc.at) // back as it was
	}
}

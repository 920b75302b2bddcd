package strata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// memFile is an in-memory io.WriterAt / io.ReaderAt.
type memFile struct{ b []byte }

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	copy(m.b[off:], p)
	return len(p), nil
}

func q2Shapes(embd, ff int64) [NumParts]PartShape {
	return [NumParts]PartShape{{quant.Q2_0, embd, ff}, {quant.Q2_0, embd, ff}, {quant.Q2_0, ff, embd}}
}

func TestWorkedSizes(t *testing.T) {
	// docs/FORMATS.md: tiny model 256 × 256 Q2_0 and the field model 2560 × 640.
	for _, c := range []struct {
		embd, ff        int64
		part, pay, slot uint64
	}{
		{256, 256, 18432, 3 * 18432, 65536},
		{2560, 640, 460800, 1382400, 1392640},
	} {
		h, err := NewHeader([]uint32{0, 1, 2, 3}, 32, q2Shapes(c.embd, c.ff))
		if err != nil {
			t.Fatal(err)
		}
		for p := range h.Parts {
			if h.Parts[p].Bytes != c.part {
				t.Errorf("%d×%d part %d: %d bytes, want %d", c.embd, c.ff, p, h.Parts[p].Bytes, c.part)
			}
			if h.Parts[p].Offset != uint64(p)*c.part {
				t.Errorf("part %d offset %d", p, h.Parts[p].Offset)
			}
		}
		if h.PayloadBytes() != c.pay || h.SlotBytes != c.slot {
			t.Errorf("%d×%d: payload %d slot %d, want %d %d", c.embd, c.ff, h.PayloadBytes(), h.SlotBytes, c.pay, c.slot)
		}
		if h.SlotBytes%SlotAlign != 0 || h.DataOffset%SlotAlign != 0 {
			t.Errorf("unaligned: slot %d data %d", h.SlotBytes, h.DataOffset)
		}
		if h.FileBytes != h.DataOffset+128*h.SlotBytes {
			t.Errorf("file bytes %d", h.FileBytes)
		}
	}
}

// buildExperts writes a small experts file with random payloads and returns
// its bytes and the payloads.
func buildExperts(t testing.TB, layers []uint32, nExpert int, shapes [NumParts]PartShape, seed uint64) ([]byte, [][NumParts][]byte) {
	h, err := NewHeader(layers, nExpert, shapes)
	if err != nil {
		t.Fatal(err)
	}
	m := &memFile{}
	w, err := NewExpertsWriter(m, h, "mem")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	var payloads [][NumParts][]byte
	for i := 0; i < h.NSlot(); i++ {
		var parts [NumParts][]byte
		for p := range parts {
			parts[p] = make([]byte, h.Parts[p].Bytes)
			for j := range parts[p] {
				parts[p][j] = byte(r.Uint32())
			}
		}
		payloads = append(payloads, parts)
	}
	// Write in reverse order: the bytes must not depend on it.
	for i := h.NSlot() - 1; i >= 0; i-- {
		if err := w.WriteSlot(i/nExpert, i%nExpert, payloads[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if uint64(len(m.b)) != h.FileBytes {
		t.Fatalf("wrote %d bytes, header says %d", len(m.b), h.FileBytes)
	}
	return m.b, payloads
}

func smallShapes() [NumParts]PartShape {
	return [NumParts]PartShape{{quant.Q8_0, 64, 3}, {quant.IQ4_NL, 32, 5}, {quant.F32, 7, 2}}
}

func TestExpertsRoundTrip(t *testing.T) {
	layers := []uint32{1, 3, 4}
	b, payloads := buildExperts(t, layers, 5, smallShapes(), 1)
	x, err := NewExpertsReader(bytes.NewReader(b), int64(len(b)), "mem")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x.Layers, layers) || x.NExpert != 5 || x.Parts[1].Type != quant.IQ4_NL || x.Parts[2].Ne0 != 7 {
		t.Fatalf("header read back wrong: %+v", x.Header)
	}
	for i, want := range payloads {
		pay, err := x.ReadSlot(i/5, i%5, nil)
		if err != nil {
			t.Fatal(err)
		}
		for p := range want {
			if !bytes.Equal(x.PartBytes(pay, p), want[p]) {
				t.Fatalf("slot %d part %d differs", i, p)
			}
		}
		if x.Table[i].Offset%SlotAlign != 0 {
			t.Fatalf("slot %d at %d", i, x.Table[i].Offset)
		}
	}
	// Same content, same bytes.
	b2, _ := buildExperts(t, layers, 5, smallShapes(), 1)
	if !bytes.Equal(b, b2) {
		t.Fatal("same slots gave different files")
	}
}

func TestExpertsWriterChecks(t *testing.T) {
	h, _ := NewHeader([]uint32{0}, 2, smallShapes())
	w, _ := NewExpertsWriter(&memFile{}, h, "mem")
	var parts [NumParts][]byte
	for p := range parts {
		parts[p] = make([]byte, h.Parts[p].Bytes)
	}
	if err := w.WriteSlot(0, 0, parts); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSlot(0, 0, parts); err == nil {
		t.Error("slot written twice accepted")
	}
	if err := w.Finish(); err == nil || !strings.Contains(err.Error(), "expert 1 not written") {
		t.Errorf("missing slot: %v", err)
	}
	parts[1] = parts[1][1:]
	if err := w.WriteSlot(0, 1, parts); err == nil {
		t.Error("short part accepted")
	}
	if _, err := NewHeader([]uint32{2, 1}, 2, smallShapes()); err == nil {
		t.Error("descending layers accepted")
	}
	bad := smallShapes()
	bad[0].Ne0 = 33
	if _, err := NewHeader([]uint32{0}, 2, bad); err == nil {
		t.Error("ne0 not a multiple of the block accepted")
	}
}

func TestCreateExpertsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.experts")
	h, _ := NewHeader([]uint32{0}, 1, smallShapes())
	f, err := CreateExperts(path, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil {
		t.Fatal("commit with a missing slot succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("failed commit left %v", ents)
	}
	f, _ = CreateExperts(path, h)
	var parts [NumParts][]byte
	for p := range parts {
		parts[p] = bytes.Repeat([]byte{7}, int(h.Parts[p].Bytes))
	}
	if err := f.WriteSlot(0, 0, parts); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	x, err := OpenExperts(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.ReadSlot(0, 0, nil); err != nil {
		t.Fatal(err)
	}
}

// regionOf names the region of an experts file a byte belongs to.
func regionOf(h *Header, off uint64) string {
	switch {
	case off < HeaderSize:
		return "header"
	case off < h.TableOffset+uint64(h.NSlot())*TableEntrySize:
		return "table"
	case off < h.DataOffset:
		return "table padding"
	case (off-h.DataOffset)%h.SlotBytes < h.PayloadBytes():
		return "payload"
	default:
		return "slot padding"
	}
}

// checkAll opens the file and reads every slot, returning the first error.
func checkAll(b []byte) error {
	x, err := NewExpertsReader(bytes.NewReader(b), int64(len(b)), "mem")
	if err != nil {
		return err
	}
	for l := range x.Layers {
		for e := 0; e < int(x.NExpert); e++ {
			if _, err := x.ReadSlot(l, e, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestExpertsCorruption flips bytes in every region; each must be rejected
// with a *FormatError whose offset lies in the right region. Set
// STRATA_EXHAUSTIVE=1 to flip every byte of the file.
func TestExpertsCorruption(t *testing.T) {
	b, _ := buildExperts(t, []uint32{0, 2}, 3, smallShapes(), 2)
	h, _ := ParseHeader(b, int64(len(b)), "mem")
	var positions []uint64
	if os.Getenv("STRATA_EXHAUSTIVE") != "" {
		for i := range b {
			positions = append(positions, uint64(i))
		}
	} else {
		r := rand.New(rand.NewPCG(3, 3))
		positions = []uint64{0, 3, 4, 8, 12, 16, 20, 24, 32, 40, 48, 56, 60, 64, 72, 80, layersOffset, layersOffset + 4, layersOffset + 8, 1000, headerCRCOffset, HeaderSize - 1,
			HeaderSize, HeaderSize + 8, HeaderSize + 12, HeaderSize + 16*5 + 1, h.DataOffset - 1, h.DataOffset, h.DataOffset + h.PayloadBytes() - 1, h.DataOffset + h.PayloadBytes(), h.FileBytes - 1}
		for range 200 {
			positions = append(positions, r.Uint64N(uint64(len(b))))
		}
	}
	for _, pos := range positions {
		for _, flip := range []byte{0x01, 0x80, 0xff} {
			c := append([]byte(nil), b...)
			c[pos] ^= flip
			err := checkAll(c)
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) {
				t.Fatalf("byte %d (%s) ^%#x: got %v, want a FormatError", pos, regionOf(h, pos), flip, err)
			}
			want := regionOf(h, pos)
			got := regionOf(h, uint64(fe.Offset))
			switch want {
			case "payload", "slot padding":
				// The slot is named; its offset is the slot start (payload CRC) or the byte itself (padding).
				slot := (pos - h.DataOffset) / h.SlotBytes
				if int(h.Layers[slot/uint64(h.NExpert)]) != fe.Layer || int(slot%uint64(h.NExpert)) != fe.Expert {
					t.Fatalf("byte %d (%s): error names layer %d expert %d: %v", pos, want, fe.Layer, fe.Expert, err)
				}
				if want == "slot padding" && uint64(fe.Offset) != pos {
					t.Fatalf("byte %d: padding error at %d", pos, fe.Offset)
				}
			case "table":
				// A damaged CRC field shows up as a payload mismatch of the slot that entry describes.
				entry := (pos - h.TableOffset) / TableEntrySize
				if got == "table" {
					if (uint64(fe.Offset)-h.TableOffset)/TableEntrySize != entry {
						t.Fatalf("byte %d (table entry %d): error at %d: %v", pos, entry, fe.Offset, err)
					}
				} else if !errors.Is(err, ErrChecksum) || fe.Layer != int(h.Layers[entry/uint64(h.NExpert)]) || fe.Expert != int(entry%uint64(h.NExpert)) {
					t.Fatalf("byte %d (table entry %d): %v", pos, entry, err)
				}
			default:
				if got != want {
					t.Fatalf("byte %d (%s) ^%#x: error located in %s: %v", pos, want, flip, got, err)
				}
			}
		}
	}
	// Truncation and extension change the size the header promises.
	for _, n := range []int{0, 10, HeaderSize - 1, HeaderSize, len(b) - 1} {
		if err := checkAll(b[:n]); !errors.Is(err, ErrFormat) {
			t.Errorf("truncated to %d: %v", n, err)
		}
	}
	if err := checkAll(append(append([]byte(nil), b...), 0)); !errors.Is(err, ErrFormat) {
		t.Errorf("extended: %v", err)
	}
}

func sampleKeep() *Keep {
	k := &Keep{
		NExpert: 6,
		Layers:  []uint32{0, 2, 5},
		Keep:    [][]uint32{{0, 2, 3, 5}, {1, 2, 3, 4}, {0, 1, 4, 5}},
		Rank:    [][]uint32{{3, 0}, {1, 2}, {0, 3}},
		Stats:   &Stats{Fields: []string{"count", "reap"}},
	}
	for i := 0; i < 3*6*2; i++ {
		k.Stats.Values = append(k.Stats.Values, float64(i)*0.25-3)
	}
	return k
}

func TestKeepRoundTrip(t *testing.T) {
	for _, k := range []*Keep{sampleKeep(), IdentityKeep([]uint32{1, 2}, 4)} {
		b, err := k.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		wantLen := 24 + 4*len(k.Layers)*(1+k.NKeep()+k.NRank()) + 4
		if k.Stats != nil {
			wantLen += 8 + 4*len(k.Stats.Fields) + len("count") + len("reap") + 8*len(k.Stats.Values)
		}
		if len(b) != wantLen {
			t.Fatalf("%d bytes, want %d", len(b), wantLen)
		}
		got, err := ParseKeep(b, "mem")
		if err != nil {
			t.Fatal(err)
		}
		b2, _ := got.MarshalBinary()
		if !bytes.Equal(b, b2) {
			t.Fatal("re-encoding differs")
		}
		if got.NKeep() != k.NKeep() || got.NRank() != k.NRank() || !reflect.DeepEqual(got.Layers, k.Layers) {
			t.Fatalf("read back %+v", got)
		}
	}
	k, _ := ParseKeep(must(sampleKeep().MarshalBinary()), "mem")
	if v := k.Stats.Stat(6, 1, 3, k.Stats.FieldIndex("reap")); v != float64((1*6+3)*2+1)*0.25-3 {
		t.Errorf("stat = %v", v)
	}
	id := IdentityKeep([]uint32{0}, 3)
	if !id.IsIdentity() || id.NRank() != 0 {
		t.Error("identity keep")
	}
	path := filepath.Join(t.TempDir(), "keep.strp")
	if err := WriteKeep(path, sampleKeep()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeep(path); err != nil {
		t.Fatal(err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// reCRC recomputes the trailing CRC so that a test reaches the check behind it.
func reCRC(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[len(b)-4:], CRC32C(b[:len(b)-4]))
	return b
}

func TestKeepRejects(t *testing.T) {
	good := must(sampleKeep().MarshalBinary())
	le := binary.LittleEndian
	nl := 3
	keepAt := 24 + 4*nl
	rankAt := keepAt + 4*nl*4
	statAt := rankAt + 4*nl*2
	cases := []struct {
		name   string
		mutate func(b []byte) []byte
		off    int64
	}{
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, 0},
		{"version", func(b []byte) []byte { le.PutUint32(b[4:], 2); return reCRC(b) }, 4},
		{"zero layers", func(b []byte) []byte { le.PutUint32(b[8:], 0); return reCRC(b) }, 8},
		{"zero experts", func(b []byte) []byte { le.PutUint32(b[12:], 0); return reCRC(b) }, 12},
		{"n_keep > n_expert", func(b []byte) []byte { le.PutUint32(b[16:], 7); return reCRC(b) }, 16},
		{"n_rank > n_keep", func(b []byte) []byte { le.PutUint32(b[20:], 5); return reCRC(b) }, 20},
		{"sizes too big", func(b []byte) []byte { le.PutUint32(b[8:], 1000); return reCRC(b) }, 8},
		{"layers order", func(b []byte) []byte { le.PutUint32(b[28:], 0); return reCRC(b) }, 28},
		{"keep id range", func(b []byte) []byte { le.PutUint32(b[keepAt:], 6); return reCRC(b) }, int64(keepAt)},
		{"keep order", func(b []byte) []byte { le.PutUint32(b[keepAt+4:], 0); return reCRC(b) }, int64(keepAt + 4)},
		{"rank range", func(b []byte) []byte { le.PutUint32(b[rankAt:], 4); return reCRC(b) }, int64(rankAt)},
		{"rank twice", func(b []byte) []byte { le.PutUint32(b[rankAt+4:], 3); return reCRC(b) }, int64(rankAt + 4)},
		{"stat magic", func(b []byte) []byte { b[statAt] = 'X'; return reCRC(b) }, int64(statAt)},
		{"stat n_field", func(b []byte) []byte { le.PutUint32(b[statAt+4:], 3); return reCRC(b) }, -1},
		{"stat name length", func(b []byte) []byte { le.PutUint32(b[statAt+8:], 1<<20); return reCRC(b) }, int64(statAt + 8)},
		{"stat NaN", func(b []byte) []byte {
			le.PutUint64(b[len(b)-12:], math.Float64bits(math.NaN()))
			return reCRC(b)
		}, int64(len(good) - 12)},
		{"trailing bytes", func(b []byte) []byte { return reCRC(append(b, 0, 0, 0, 0)) }, -1},
		{"crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, int64(len(good) - 4)},
		{"payload flip", func(b []byte) []byte { b[keepAt+1] ^= 1; return b }, int64(len(good) - 4)},
		{"truncated", func(b []byte) []byte { return b[:20] }, 0},
		{"truncated ranking", func(b []byte) []byte { return reCRC(b[:rankAt+4]) }, 8},
	}
	for _, c := range cases {
		b := c.mutate(append([]byte(nil), good...))
		_, err := ParseKeep(b, "keep.strp")
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: got %v, want a FormatError", c.name, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "keep.strp: byte ") {
			t.Errorf("%s: %q does not name the file and offset", c.name, err)
		}
		if c.off >= 0 && fe.Offset != c.off {
			t.Errorf("%s: error at byte %d, want %d: %v", c.name, fe.Offset, c.off, err)
		}
	}
	// Every single-byte flip is caught (by the CRC or a structural check).
	for i := range good {
		b := append([]byte(nil), good...)
		b[i] ^= 0x10
		if _, err := ParseKeep(b, "keep.strp"); err == nil {
			t.Fatalf("flip of byte %d accepted", i)
		}
	}
	// The writer refuses what the reader refuses.
	k := sampleKeep()
	k.Keep[1] = []uint32{3, 2, 1, 0}
	if _, err := k.MarshalBinary(); err == nil {
		t.Error("descending keep ids written")
	}
}

func FuzzParseKeep(f *testing.F) {
	f.Add(must(sampleKeep().MarshalBinary()))
	f.Add(must(IdentityKeep([]uint32{0, 1}, 4).MarshalBinary()))
	f.Add([]byte("STRP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseKeep(b, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) {
				t.Fatalf("error without ErrFormat: %v", err)
			}
			return
		}
		b2, err := k.MarshalBinary()
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("accepted file does not re-encode to itself: %v", err)
		}
	})
}

func FuzzExpertsReader(f *testing.F) {
	b, _ := buildExperts(f, []uint32{0, 2}, 2, smallShapes(), 5)
	f.Add(b)
	f.Add(b[:HeaderSize])
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := checkAll(b); err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error without a location: %v", err)
			}
		}
	})
}

package strata

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// TestCRC32C: CRC32C is hash/crc32's Castagnoli checksum at every length
// around its chunked path's bounds (below, at and past 64 KiB, partial last
// chunks) and on a few large inputs, from every start offset mod 8.
func TestCRC32C(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	b := make([]byte, 1<<21+2*crcChunk+16)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	var lens []int
	for n := 0; n <= 300; n++ {
		lens = append(lens, n)
	}
	for _, base := range []int{crcTouchMin, 2 * crcTouchMin, 1 << 20, 1 << 21} {
		for d := -crcChunk - 1; d <= crcChunk+1; d += 97 {
			lens = append(lens, base+d)
		}
		lens = append(lens, base-1, base, base+1)
	}
	for _, n := range lens {
		off := rng.IntN(8)
		p := b[off : off+n]
		if got, want := CRC32C(p), crc32.Checksum(p, tab); got != want {
			t.Fatalf("length %d at offset %d: %#08x, want %#08x", n, off, got, want)
		}
	}
}

// TestCRC32CCombine: the combined CRC of two pieces is the CRC of their
// concatenation, over lengths 0..4096 and a few large ones.
func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	check := func(n, cut int) {
		got := CRC32CCombine(CRC32C(b[:cut]), CRC32C(b[cut:n]), int64(n-cut))
		if want := CRC32C(b[:n]); got != want {
			t.Fatalf("combine at %d of %d: %#08x, want %#08x", cut, n, got, want)
		}
	}
	for n := 0; n <= 4096; n++ {
		check(n, rng.IntN(n+1))
	}
	for _, n := range []int{1 << 16, 1<<20 - 7, 1 << 20} {
		for _, cut := range []int{0, 1, n / 3, n - 1, n} {
			check(n, cut)
		}
	}
}

// TestCheckPieces: a slot checked in pieces (CheckPiece on each as it is
// read, CheckPieces over them) gets CheckSlot's result, its CRC, its first
// nonzero padding byte and its error, wherever the cuts fall; pieces that
// do not cover the slot in order are refused.
func TestCheckPieces(t *testing.T) {
	dir := t.TempDir()
	f := writeSource(t, filepath.Join(dir, "src.gguf"))
	writePack(t, f, filepath.Join(dir, "pack"), IdentityKeep([]uint32{0, 1}, tE))
	x, err := OpenExperts(filepath.Join(dir, "pack", "model.experts"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	pay := int(x.PayloadBytes())
	if uint64(pay) >= x.SlotBytes {
		t.Fatalf("payload %d of a %d-byte slot: no padding to check", pay, x.SlotBytes)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	pieces := func(i int, raw []byte) []PieceCheck {
		var cuts []int
		for range rng.IntN(4) {
			cuts = append(cuts, rng.IntN(len(raw)+1))
		}
		cuts = append(cuts, pay, 0, len(raw)) // one at the payload's end
		slices.Sort(cuts)
		var pcs []PieceCheck
		for j := 1; j < len(cuts); j++ {
			pcs = append(pcs, x.CheckPiece(i, raw[cuts[j-1]:cuts[j]], int64(cuts[j-1])))
		}
		return pcs
	}
	raw := make([]byte, x.SlotBytes)
	for i := range x.Table {
		if _, err := x.ReaderAt().ReadAt(raw, int64(x.Table[i].Offset)); err != nil {
			t.Fatal(err)
		}
		for _, flip := range []int{-1, rng.IntN(pay), pay + rng.IntN(int(x.SlotBytes)-pay)} {
			b := slices.Clone(raw)
			if flip >= 0 {
				b[flip] ^= 0x10
			}
			want, werr := x.CheckSlot(i, b)
			if (werr == nil) != (flip < 0) || flip >= pay && want.Padding != int64(x.Table[i].Offset)+int64(flip) {
				t.Fatalf("slot %d, byte %d flipped: CheckSlot %+v, %v", i, flip, want, werr)
			}
			for range 8 {
				got, err := x.CheckPieces(i, b, pieces(i, b))
				if got.CRC != want.CRC || got.CRCOK != want.CRCOK || got.Padding != want.Padding || fmt.Sprint(err) != fmt.Sprint(werr) {
					t.Fatalf("slot %d, byte %d flipped: pieces give %+v, %v; CheckSlot %+v, %v", i, flip, got, err, want, werr)
				}
			}
		}
		pcs := []PieceCheck{x.CheckPiece(i, raw[:pay], 0), x.CheckPiece(i, raw[pay:], int64(pay))}
		if _, err := x.CheckPieces(i, raw, pcs[1:]); err == nil {
			t.Fatalf("slot %d: pieces missing the first accepted", i)
		}
		if _, err := x.CheckPieces(i, raw, pcs[:len(pcs)-1]); err == nil {
			t.Fatalf("slot %d: pieces missing the last accepted", i)
		}
	}
}

// BenchmarkCRC32C: CRC32C of slot-sized pieces (696,320 bytes) from cache
// (one piece over and over) and from memory (a round of 512 pieces, 356
// MB), beside hash/crc32's Castagnoli checksum alone.
func BenchmarkCRC32C(b *testing.B) {
	const piece = 696320
	tab := crc32.MakeTable(crc32.Castagnoli)
	for _, c := range []struct {
		name string
		n    int
	}{{"cache", 1}, {"memory", 512}} {
		buf := make([]byte, c.n*piece)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		for _, f := range []struct {
			name string
			crc  func([]byte) uint32
		}{{"CRC32C", CRC32C}, {"hash-crc32", func(p []byte) uint32 { return crc32.Checksum(p, tab) }}} {
			b.Run(c.name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(piece)
				var sink uint32
				for i := 0; i < b.N; i++ {
					j := i % c.n
					sink += f.crc(buf[j*piece : (j+1)*piece])
				}
				benchSink = sink
			})
		}
	}
}

var benchSink uint32

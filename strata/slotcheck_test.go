package strata

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

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

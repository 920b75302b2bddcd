package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestXORReadMatchesPortable: every kernel set's streaming read returns the
// portable XOR of the words, over every length 0..4096 at every alignment
// shift, between guard bands of random bytes (a read past either end would
// change the value).
func TestXORReadMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	const band = 512
	buf := make([]byte, band+8+4096+band)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	sets := testSets()
	for n := 0; n <= 4096; n++ {
		shift := n % 8
		b := buf[band+shift : band+shift+n]
		want := xorReadPortable(b)
		for _, s := range sets {
			if got := s.k.xorRead(b); got != want {
				t.Fatalf("n=%d shift=%d on %s: %#x, portable %#x", n, shift, s.name, got, want)
			}
		}
	}
	// The closed form: words w and w, in any order, cancel.
	two := make([]byte, 2*4096)
	for i := 0; i < 4096; i++ {
		two[i] = byte(rng.Uint32())
	}
	copy(two[4096:], two[:4096])
	if got := XORRead(two); got != 0 {
		t.Fatalf("a buffer of two equal halves XORs to %#x, want 0", got)
	}
	two[5000] ^= 0x10
	if got := XORRead(two); got != 0x10<<(8*((5000-4096)%8)) {
		t.Fatalf("one flipped bit: %#x", got)
	}
}

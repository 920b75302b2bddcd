package cachesim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestVictimRule: Victim's pick is the first of the offers sorted by class
// (Plain, Wanted, Spared), then last + w*uses, then key (a sort of every
// offer, an independent statement of the rule), whatever the order they
// come in; ties in score are common (small ranges) so the key order is
// exercised.
func TestVictimRule(t *testing.T) {
	type offer struct {
		i, key     int
		last, uses int64
		c          Class
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 2000; trial++ {
		w := int64(1 + rng.IntN(5))
		n := rng.IntN(12)
		keys := rng.Perm(40)[:n]
		var offers []offer
		for i, k := range keys {
			offers = append(offers, offer{i: 100 + i, key: k, last: int64(rng.IntN(9) - 3), uses: int64(rng.IntN(3)), c: Class(rng.IntN(int(nClass)))})
		}
		v := NewVictim(w)
		for _, o := range offers {
			v.Offer(o.i, o.key, o.last, o.uses, o.c)
		}
		want := -1
		if n > 0 {
			sorted := slices.Clone(offers)
			slices.SortFunc(sorted, func(a, b offer) int {
				if a.c != b.c {
					return int(a.c) - int(b.c)
				}
				if sa, sb := a.last+w*a.uses, b.last+w*b.uses; sa != sb {
					if sa < sb {
						return -1
					}
					return 1
				}
				return a.key - b.key
			})
			want = sorted[0].i
		}
		if got := v.Pick(); got != want {
			t.Fatalf("trial %d (w %d, offers %+v): picked %d, want %d", trial, w, offers, got, want)
		}
		v.Reset()
		if got := v.Pick(); got != -1 {
			t.Fatalf("trial %d: after Reset picked %d", trial, got)
		}
	}
}

// TestClassOf: the current call's experts are spared before read-ahead's.
func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		current, wanted bool
		want            Class
	}{{false, false, Plain}, {false, true, Wanted}, {true, false, Spared}, {true, true, Spared}} {
		if got := ClassOf(tc.current, tc.wanted); got != tc.want {
			t.Errorf("ClassOf(%v, %v) = %d, want %d", tc.current, tc.wanted, got, tc.want)
		}
	}
}

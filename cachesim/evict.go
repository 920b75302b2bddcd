package cachesim

// Class is what the store's eviction rule knows of a resident, unpinned
// expert besides its Keep score: the order in which classes are given up.
type Class uint8

const (
	// Plain experts go first: nothing expects them.
	Plain Class = iota
	// Wanted experts are those read-ahead expects before their layer's
	// next Need: they go only when no Plain expert is left.
	Wanted
	// Spared experts are those the current store call claimed or hit: they
	// go only when nothing else is left.
	Spared
	nClass
)

// ClassOf is the class of an expert that the current store call claimed
// or hit (current) and that read-ahead expects (wanted): the current call's
// come first, so an expert both expected and just hit is Spared.
func ClassOf(current, wanted bool) Class {
	switch {
	case current:
		return Spared
	case wanted:
		return Wanted
	}
	return Plain
}

// Victim is the store's eviction choice, the one home of the rule that
// PackStore (engine/stream.go) and the Store replay follow: offered every
// resident expert that may go (not pinned), it picks, in the first class
// that has one (Plain, then Wanted, then Spared), the expert with the
// lowest Keep score, ties to the lower key. The zero value is not ready:
// use NewVictim.
type Victim struct {
	w    int64
	at   [nClass]int   // the caller's index of each class's pick, -1: none
	key  [nClass]int   // its key
	keep [nClass]int64 // its Keep score
}

// NewVictim is an empty choice with use weight w (UseWeight of the model).
func NewVictim(w int64) Victim {
	v := Victim{w: w}
	v.Reset()
	return v
}

// Reset forgets every offer.
func (v *Victim) Reset() {
	for c := range v.at {
		v.at[c] = -1
	}
}

// Offer puts the expert key, at the caller's index i, last demanded at
// tick last and demanded uses times, of class c, up for eviction.
func (v *Victim) Offer(i, key int, last, uses int64, c Class) {
	k := Keep(last, uses, v.w)
	if v.at[c] < 0 || Before(key, k, v.key[c], v.keep[c]) {
		v.at[c], v.key[c], v.keep[c] = i, key, k
	}
}

// Pick is the index of the expert to evict, -1 when nothing was offered.
func (v *Victim) Pick() int {
	for _, i := range v.at {
		if i >= 0 {
			return i
		}
	}
	return -1
}

// Before is whether the expert key a with Keep score ka goes before the
// expert b with score kb: the lower score, ties to the lower key.
func Before(a int, ka int64, b int, kb int64) bool { return ka < kb || ka == kb && a < b }

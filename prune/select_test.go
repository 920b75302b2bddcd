package prune

import (
	"slices"
	"testing"

	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/strata"
)

func TestSelectCriteriaAndTies(t *testing.T) {
	s := profile.NewStats([]int{5}, 6)
	// count:  10 30 30  5 20  0
	// ean:    50 30 60 40 20  0   -> reap: 5 1 2 8 1 0
	counts := []int64{10, 30, 30, 5, 20, 0}
	ean := []float64{50, 30, 60, 40, 20, 0}
	for e := range counts {
		s.Count[0][e] = counts[e]
		s.EAN[0][e] = ean[e]
	}
	cases := []struct {
		c    Criterion
		k    int
		want []int
	}{
		{Frequency, 3, []int{1, 2, 4}}, // 30, 30 (tie: lower id first), 20
		{Frequency, 2, []int{1, 2}},
		{REAP, 2, []int{0, 3}},       // 8, 5
		{REAP, 4, []int{0, 1, 2, 3}}, // 8, 5, 2, then the tie 1 == 1 goes to expert 1
		{EAN, 3, []int{0, 2, 3}},     // 60, 50, 40
	}
	for _, c := range cases {
		got, err := Select(s, c.c, c.k)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0], c.want) {
			t.Errorf("%s keep %d: %v, want %v", c.c, c.k, got[0], c.want)
		}
	}
	if _, err := Select(s, REAP, 0); err == nil {
		t.Error("keep 0 accepted")
	}
	if _, err := Select(s, REAP, 7); err == nil {
		t.Error("keep 7 of 6 accepted")
	}
	// Hotness ranks kept positions by count: keep {0,1,2,4} has counts
	// 10 30 30 20 -> positions 1, 2, 3, 0.
	r := Hotness(s, [][]int{{0, 1, 2, 4}})
	if !slices.Equal(r[0], []int{1, 2, 3, 0}) {
		t.Errorf("hotness %v", r[0])
	}
	for _, name := range []string{"reap", "REAP", "freq", "frequency", "count", "ean"} {
		if _, err := ParseCriterion(name); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseCriterion("random"); err == nil {
		t.Error("unknown criterion accepted")
	}
}

// TestKeepMapRoundTrip: a chosen keep map written as keep.strp reads back
// the same, with the hotness ranking and the profile's statistics.
func TestKeepMapRoundTrip(t *testing.T) {
	s := profile.NewStats([]int{0, 1}, 8)
	for l := range 2 {
		for e := range 8 {
			s.Count[l][e] = int64((e*7 + l*3) % 8)
			s.EAN[l][e] = float64(e + l)
			s.GateSum[l][e] = float64(e) / 2
		}
	}
	k, err := Choose(s, REAP, 4)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Select(s, REAP, 4)
	b, err := k.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := strata.ParseKeep(b, "keep.strp")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(parsed.Blocks(), s.Blocks) || parsed.NExpert != 8 || !slices.Equal(parsed.Keep[1], u32(want[1])) {
		t.Errorf("keep map %+v came back as %+v", k, parsed)
	}
	if parsed.NRank() != 4 || parsed.Stats == nil || len(parsed.Stats.Values) != 2*8*4 {
		t.Errorf("keep map ranks %d, stats %v", parsed.NRank(), parsed.Stats != nil)
	}
}

func TestRetention(t *testing.T) {
	s := profile.NewStats([]int{3}, 4)
	s.Count[0] = []int64{1, 2, 3, 4}
	s.GateSum[0] = []float64{1, 1, 1, 1}
	s.EAN[0] = []float64{0, 0, 5, 5}
	r, err := Retention(s, &strata.Keep{Layers: []uint32{3}, NExpert: 4, Keep: [][]uint32{{1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if r[0].Block != 3 || r[0].Count != 0.5 || r[0].GateSum != 0.5 || r[0].EAN != 0.5 {
		t.Errorf("retained %+v, want 5/10, 2/4, 5/10", r[0])
	}
	if _, err := Retention(s, &strata.Keep{Layers: []uint32{2}, NExpert: 4, Keep: [][]uint32{{1, 2}}}); err == nil {
		t.Error("profile of other layers accepted")
	}
}

// TestSelectGroups: with expert groups, the best k/groups of every group
// are kept, not the best k overall (issue 11 item 9).
func TestSelectGroups(t *testing.T) {
	s := profile.NewStats([]int{0}, 6)
	// Two groups of three: {0,1,2} {3,4,5}; counts 50 40 30 | 20 10 0.
	copy(s.Count[0], []int64{50, 40, 30, 20, 10, 0})
	if got, _ := Select(s, Frequency, 4); !slices.Equal(got[0], []int{0, 1, 2, 3}) {
		t.Fatalf("ungrouped: %v", got[0])
	}
	got, err := SelectGroups(s, Frequency, 4, 2)
	if err != nil || !slices.Equal(got[0], []int{0, 1, 3, 4}) {
		t.Fatalf("2 groups, keep 4: %v, %v; want [0 1 3 4]", got, err)
	}
	if _, err := SelectGroups(s, Frequency, 3, 2); err == nil {
		t.Error("keep 3 in 2 groups accepted")
	}
}

package profile

import (
	"math"
	"testing"
)

func TestObserveClosedForm(t *testing.T) {
	s := NewStats([]int{0, 2}, 4)
	// Token 1 in layer index 1: experts 3 and 0 with weights 0.75 / 0.25 and
	// outputs of norm 5 (3,4) and 13 (5,12).
	if err := s.Observe(1, []int32{3, 0}, []float32{0.75, 0.25}, [][]float32{{3, 4}, {5, 12}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Observe(1, []int32{3, 1}, []float32{0.5, 0.5}, [][]float32{{0, 2}, {1, 0}}); err != nil {
		t.Fatal(err)
	}
	if s.Count[1][3] != 2 || s.Count[1][0] != 1 || s.Count[1][1] != 1 || s.Count[0][3] != 0 {
		t.Errorf("counts %v %v", s.Count[0], s.Count[1])
	}
	if math.Abs(s.GateSum[1][3]-1.25) > 1e-12 {
		t.Errorf("gate_sum %v", s.GateSum[1][3])
	}
	// EAN of expert 3: 0.75*5 + 0.5*2 = 4.75; REAP = 4.75/2.
	if math.Abs(s.EAN[1][3]-4.75) > 1e-12 || math.Abs(s.REAP(1, 3)-2.375) > 1e-12 || s.REAP(0, 3) != 0 {
		t.Errorf("ean %v reap %v", s.EAN[1][3], s.REAP(1, 3))
	}
	if math.Abs(s.EAN[1][0]-3.25) > 1e-12 {
		t.Errorf("ean of expert 0 = %v, want 3.25", s.EAN[1][0])
	}
	if err := s.Observe(0, []int32{4}, []float32{1}, [][]float32{{1}}); err == nil {
		t.Error("expert id 4 of 4 accepted")
	}
	if err := s.Observe(0, []int32{1, 2}, []float32{1}, [][]float32{{1}, {1}}); err == nil {
		t.Error("missing gate weight accepted")
	}
	// Ranking by count: 3 (2), then 0 and 1 (1 each, lower id first), then 2.
	if got := s.ByCount(1); got[0] != 3 || got[1] != 0 || got[2] != 1 || got[3] != 2 {
		t.Errorf("by count %v", got)
	}
	// Table and back.
	tab := s.Table()
	back, err := FromTable(s.Blocks, 4, Fields, tab)
	if err != nil {
		t.Fatal(err)
	}
	if back.EAN[1][3] != s.EAN[1][3] || back.Count[1][3] != 2 {
		t.Error("table round trip changed values")
	}
	tab[1][3][2] = 99 // reap that disagrees with ean/count
	if _, err := FromTable(s.Blocks, 4, Fields, tab); err == nil {
		t.Error("inconsistent reap accepted")
	}
	tab[1][3][2] = s.REAP(1, 3)
	tab[1][3][0] = 1.5
	if _, err := FromTable(s.Blocks, 4, Fields, tab); err == nil {
		t.Error("fractional count accepted")
	}
	if _, err := FromTable(s.Blocks, 4, []string{"count", "gate_sum", "reap", "other"}, tab); err == nil {
		t.Error("missing ean accepted")
	}
}

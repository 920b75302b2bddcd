package profile

import (
	"slices"
	"testing"
)

// TestSummary on hand-made statistics: ranges, unused experts and both
// rankings (ties to the lower id), closed form.
func TestSummary(t *testing.T) {
	s := NewStats([]int{3}, 4)
	// counts 2, 0, 2, 1; EAN 1, 0, 4, 3 -> REAP 0.5, 0, 2, 3.
	s.Count[0] = []int64{2, 0, 2, 1}
	s.EAN[0] = []float64{1, 0, 4, 3}
	got := s.Summary(3)
	want := LayerSummary{Block: 3, CountMin: 0, CountMax: 2, Unused: 1, TopREAP: []int{3, 2, 0}, TopCount: []int{0, 2, 3}, REAPMin: 0, REAPMax: 3}
	if len(got) != 1 || got[0].Block != want.Block || got[0].CountMin != want.CountMin || got[0].CountMax != want.CountMax ||
		got[0].Unused != want.Unused || !slices.Equal(got[0].TopREAP, want.TopREAP) || !slices.Equal(got[0].TopCount, want.TopCount) ||
		got[0].REAPMin != want.REAPMin || got[0].REAPMax != want.REAPMax {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	if all := s.Summary(10); len(all[0].TopREAP) != 4 {
		t.Errorf("top 10 of 4 experts lists %d", len(all[0].TopREAP))
	}
}

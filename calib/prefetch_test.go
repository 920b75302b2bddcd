package calib

import (
	"testing"

	"github.com/stratactl/stratactl/gguf"
)

// TestPrefetcherPlan: the read-ahead covers every byte of every block's
// tensors, each layer's ranges in file order, and stops when closed
// whether or not the run reached its layers.
func TestPrefetcherPlan(t *testing.T) {
	if !canAdvise {
		t.Skip("no read-ahead on this system")
	}
	m := openTiny(t, 1)
	layers := len(m.Layers)
	want := make([]int64, layers)
	for i := range m.File.Tensors {
		tt := &m.File.Tensors[i]
		if b, _, ok := gguf.SplitBlockName(tt.Name); ok && b < layers {
			want[b] += tt.Size
		}
	}
	for _, reach := range []int{-1, 0, layers} {
		p := newPrefetcher(m.File, layers)
		for l, spans := range p.layers {
			var got int64
			for i, s := range spans {
				got += s.end - s.off
				if i > 0 && s.path == spans[i-1].path && s.off < spans[i-1].end {
					t.Fatalf("layer %d: range %d at %d overlaps or precedes the one before (to %d)", l, i, s.off, spans[i-1].end)
				}
			}
			if got != want[l] || got == 0 {
				t.Fatalf("layer %d: %d bytes planned, want %d", l, got, want[l])
			}
		}
		if reach >= 0 {
			p.reached(reach)
		}
		p.close()
	}
	var none *prefetcher // the systems without read-ahead
	none.reached(1)
	none.close()
}

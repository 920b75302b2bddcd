package engine

import (
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestDefaultArenaCapReported: on a machine whose half RAM holds fewer
// experts than the pack has, the default arena holds as many as fit and the
// report says it was capped and at what; with room for all, or with an
// arena asked for, the report names no cap.
func TestDefaultArenaCapReported(t *testing.T) {
	sp := SynthSpec{Arch: "qwen3moe", Layers: 2, Embd: 128, Experts: 8, ExpertsUsed: 2, ExpertFF: 64, Vocab: 300,
		DenseType: quant.Q8_0, ExpertType: quant.Q2_0, Seed: 5}
	dir := filepath.Join(t.TempDir(), "pack")
	if err := WriteSyntheticPack(dir, sp); err != nil {
		t.Fatal(err)
	}
	report := func(arenaMB float64) *StreamReport {
		m, err := Open(dir, Options{Threads: 1, Stream: StreamOptions{ArenaMB: arenaMB}})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ps := m.Stream()
		return ps.Report(ps.Counters(), ps.Counters(), 0)
	}
	if r := report(0); r.ArenaCapMB != 0 || r.ArenaSlots != r.TotalSlots {
		t.Fatalf("room for all: %d of %d slots, cap %.3f MiB reported", r.ArenaSlots, r.TotalSlots, r.ArenaCapMB)
	}
	m, err := Open(dir, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	slot := uint64(m.Stream().SlotBytes())
	m.Close()

	saved := machineMemory
	defer func() { machineMemory = saved }()
	machineMemory = func() uint64 { return 2 * 7 * slot } // half the RAM: 7 of the 16 slots
	r := report(0)
	if r.ArenaSlots != 7 || r.TotalSlots != 16 {
		t.Fatalf("capped: %d of %d slots, want 7 of 16", r.ArenaSlots, r.TotalSlots)
	}
	if want := float64(7*slot) / (1 << 20); r.ArenaCapMB != want {
		t.Fatalf("cap reported %.6f MiB, want %.6f", r.ArenaCapMB, want)
	}
	if r := report(float64(5*slot) / (1 << 20)); r.ArenaCapMB != 0 || r.ArenaSlots != 5 {
		t.Fatalf("an arena asked for: %d slots, cap %.3f MiB reported (want 5, none)", r.ArenaSlots, r.ArenaCapMB)
	}
}

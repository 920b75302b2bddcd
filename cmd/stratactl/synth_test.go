package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/convert"
)

// TestSynthQwen35: synth --arch qwen35moe writes the hybrid layout with
// attention every --attn-interval-th block and says which, and refuses a
// geometry the graph cannot run.
func TestSynthQwen35(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "q35.gguf")
	r := decode[convert.SynthResult](t, stratactl(t, "synth", "-o", out, "--arch", "qwen35moe", "--layers", "6", "--experts", "4",
		"--experts-used", "2", "--embd", "128", "--ff", "64", "--ff-shared", "96", "--attn-interval", "3", "--type", "q8_0", "--json"))
	if !slices.Equal(r.AttentionLayers, []int{2, 5}) || r.Hybrid == nil || r.Hybrid.SharedFF != 96 || r.Heads != 1 || r.HeadsKV != 1 {
		t.Errorf("synth report %+v (hybrid %+v)", r, r.Hybrid)
	}
	if msg := stratactlFails(t, "synth", "-o", out+"2", "--arch", "qwen35moe", "--attn-interval", "0"); !contains(msg, "--attn-interval") {
		t.Errorf("--attn-interval 0: %s", msg)
	}
	if msg := stratactlFails(t, "synth", "-o", out+"2", "--arch", "qwen35moe", "--embd", "192"); !contains(msg, "128") {
		t.Errorf("--embd 192: %s", msg)
	}
}

package main

import (
	"encoding/json"
	"testing"

	"github.com/stratactl/stratactl/convert"
)

func TestBenchPackSmall(t *testing.T) {
	code, out, errs := runCmd(t, "bench", "pack", "--dir", t.TempDir(), "--layers", "2", "--experts", "16", "--embd", "256", "--ff", "256",
		"--keep", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res convert.BenchPackResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// 2 layers × 8 kept experts × 3 parts × 256 × 256 weights.
	if res.Weights != 2*8*3*256*256 || res.Kept != 8 || res.Layers != 2 {
		t.Fatalf("%+v", res)
	}
	if !(res.PackSeconds > 0 && res.FloorSeconds > 0 && res.RatioToFloor > 0 && res.PeakRSSBytes > 0 && res.OutputBytes > res.InputBytes/10) {
		t.Fatalf("figures missing: %+v", res)
	}
}

// TestBenchPackQwen35: the hybrid's synthetic source packs as the qwen3moe
// one does (the routed experts are what a pack converts; the delta nets,
// attention and shared expert stay dense in model.gguf).
func TestBenchPackQwen35(t *testing.T) {
	code, out, errs := runCmd(t, "bench", "pack", "--arch", "qwen35moe", "--dir", t.TempDir(), "--layers", "4", "--experts", "16",
		"--embd", "256", "--ff", "128", "--keep", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res convert.BenchPackResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// 4 layers × 8 kept experts × 3 parts × 256 × 128 weights.
	if res.Arch != "qwen35moe" || res.Weights != 4*8*3*256*128 || res.Kept != 8 || res.Layers != 4 {
		t.Fatalf("%+v", res)
	}
	if code, _, _ := runCmd(t, "bench", "pack", "--arch", "llama", "--dir", t.TempDir(), "--layers", "1", "--experts", "4", "--embd", "256", "--ff", "128", "--keep", "2"); code == 0 {
		t.Fatal("bench pack --arch llama succeeded")
	}
}

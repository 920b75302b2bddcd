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

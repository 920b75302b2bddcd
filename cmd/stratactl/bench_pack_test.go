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

// TestBenchPackCalibrated: --calib-windows packs the same model again with
// the calibrated quantizer in the same run and reports both: the tokens it
// ran, its time against the plain pack's, its memory, and the calibration
// output error of every part (which the plain search has none of).
func TestBenchPackCalibrated(t *testing.T) {
	code, out, errs := runCmd(t, "bench", "pack", "--dir", t.TempDir(), "--layers", "2", "--experts", "16", "--embd", "256", "--ff", "128",
		"--keep", "8", "--calib-windows", "16", "--calib-ctx", "16", "--json", "--slot-times")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res convert.BenchPackResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	c := res.Calibrated
	if c == nil {
		t.Fatalf("no calibrated run in %s", out)
	}
	if c.Calibration.Tokens != 16*16 || c.Calibration.HeldTokens != 16 || c.Calibration.Windows != 16 || c.Calibration.Source == "" {
		t.Fatalf("calibration %+v", c.Calibration)
	}
	if !(c.PackSeconds > c.CollectSeconds && c.CollectSeconds > 0) || c.Ratio != c.PackSeconds/res.PackSeconds || !(c.PeakRSSBytes > 0) || !(c.PeakAnonBytes > 0) ||
		!(c.CPUSeconds > c.CollectCPUSeconds && c.CollectCPUSeconds > 0 && res.PackCPUSeconds > 0) || c.CPURatio != c.CPUSeconds/res.PackCPUSeconds {
		t.Fatalf("figures %+v", c)
	}
	if len(c.CalibOutputErr) != 2*3 {
		t.Fatalf("%d calibration output errors, want one per part of 2 layers", len(c.CalibOutputErr))
	}
	for _, e := range c.CalibOutputErr {
		if !(e > 0 && e < 1) {
			t.Fatalf("calibration output error %v", e)
		}
	}
	if res.Calibrated == nil || !(c.RelMSE > 0) {
		t.Fatalf("rel. MSE %v", c.RelMSE)
	}
	// The phases: each pack's, every slot timed, and the calibration run's.
	for _, p := range []*convert.PackTimes{res.Phases, c.Phases} {
		if p == nil || !(p.Experts > 0 && p.Experts <= p.Seconds && p.BusyWorkers > 0) || len(p.Slots) != 2*8 {
			t.Fatalf("phases %+v", p)
		}
		for i, s := range p.Slots {
			if !(s[0] >= 0 && s[1] >= s[0] && s[1] <= p.Experts) {
				t.Fatalf("slot %d from %v to %v s of an experts phase of %v s", i, s[0], s[1], p.Experts)
			}
		}
	}
	cp, ok := c.CollectPhases.(map[string]any)
	if !ok || cp["s"] != c.CollectSeconds || len(cp["layer_s"].([]any)) != 2 {
		t.Fatalf("calibration run's phases %v", c.CollectPhases)
	}
}

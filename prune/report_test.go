package prune

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/strata"
)

// TestWriteKeepMapBothOrNeither: with Options.KeepMap the keep map is
// written beside the model and reads back as the plan; when it cannot be
// written, the model's files (one or several shards) are removed again.
func TestWriteKeepMapBothOrNeither(t *testing.T) {
	src, err := gguf.Open(testutil.TinyModel(t, "model-iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	plan := tinyPlan(t, src, func(l int) []int { return []int{l, 8, 9, 10, 11, 20, 21, 31} })
	dir := t.TempDir()
	out, km := filepath.Join(dir, "p.gguf"), filepath.Join(dir, "p.keep.strp")
	if _, err := Write(context.Background(), src, plan, out, Options{KeepMap: km}); err != nil {
		t.Fatal(err)
	}
	back, err := strata.ReadKeep(km)
	if err != nil {
		t.Fatal(err)
	}
	for l := range plan.Keep {
		if len(back.Keep[l]) != len(plan.Keep[l]) || back.Keep[l][0] != plan.Keep[l][0] {
			t.Errorf("layer %d: keep map reads back %v, want %v", l, back.Keep[l], plan.Keep[l])
		}
	}
	for _, split := range []gguf.SplitOptions{{}, {MaxTensors: 20}} {
		dir := t.TempDir()
		out := filepath.Join(dir, "p.gguf")
		_, err := Write(context.Background(), src, plan, out, Options{Split: split, KeepMap: filepath.Join(dir, "no", "k.strp")})
		if err == nil {
			t.Fatalf("split %+v: a keep map in a missing folder was written", split)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("split %+v: %v left after the keep map failed", split, left)
		}
	}
}

func TestMeanRetained(t *testing.T) {
	if MeanRetained(nil) != nil {
		t.Error("mean of no layers")
	}
	m := MeanRetained([]Retained{{Block: 0, Count: 0.5, GateSum: 1, EAN: 0.25}, {Block: 3, Count: 1, GateSum: 0, EAN: 0.75}})
	if *m != (Retained{Block: -1, Count: 0.75, GateSum: 0.5, EAN: 0.5}) {
		t.Errorf("mean %+v", *m)
	}
}

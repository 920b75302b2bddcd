package calib

import (
	"context"
	"slices"
	"testing"
)

// TestGenerate: self-generated windows have the asked length, start at the
// model's start token, replay exactly from the same seed and change with it.
func TestGenerate(t *testing.T) {
	m := openTiny(t, 0)
	ctx := context.Background()
	a, err := Generate(ctx, m, 2, 16, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(ctx, m, 2, 16, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Generate(ctx, m, 2, 16, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 || len(a[0]) != 16 || len(a[1]) != 16 || a[0][0] != a[1][0] {
		t.Fatalf("windows %v", a)
	}
	if !slices.Equal(a[0], b[0]) || !slices.Equal(a[1], b[1]) || IDsSHA256(a) != IDsSHA256(b) {
		t.Fatal("the same seed gave other windows")
	}
	if slices.Equal(a[0][1:], c[0][1:]) || IDsSHA256(a) == IDsSHA256(c) {
		t.Fatal("another seed gave the same windows")
	}
	// Window i of seed s is window 0 of seed s+i.
	if !slices.Equal(a[1], c[0]) {
		t.Fatal("window 1 of seed 7 is not window 0 of seed 8")
	}
	if _, err := Generate(ctx, m, 1, m.Config.Context+1, 1, nil); err == nil {
		t.Fatal("a window beyond the context was generated")
	}
}

// Package testutil finds the read-only shared fixtures for tests. CI keeps
// them beside the checkout as ../shared (relative to the module root).
package testutil

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/internal/fixture"
)

// ModuleRoot is the directory holding go.mod, found from the working
// directory upwards.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Fatal("go.mod not found above the working directory")
		}
		d = parent
	}
}

// Shared is the shared fixtures folder (../shared beside the module root,
// as internal/fixture finds it). A missing folder fails the test: fixtures
// are part of the suite, never a reason to skip.
func Shared(t testing.TB) string {
	t.Helper()
	d, err := fixture.Shared(ModuleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Path joins elements under the shared folder.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{Shared(t)}, elem...)...)
}

// TinyModel is a file of the tiny qwen3moe fixture model, e.g.
// TinyModel(t, "model-bf16.gguf") or TinyModel(t, "refs", "greedy.json").
func TinyModel(t testing.TB, elem ...string) string {
	t.Helper()
	return Path(t, append([]string{"models", "tiny-qwen3moe"}, elem...)...)
}

// ReadF32 reads a file of little-endian float32 values (the reference
// models' refs/*.f32.bin).
func ReadF32(t testing.TB, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

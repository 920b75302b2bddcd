package gguf

import (
	"bytes"
	"crypto/sha256"
	"github.com/stratactl/stratactl/internal/testutil"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func sharedGGUFs(t testing.TB) []string {
	d := testutil.Shared(t)
	files, _ := filepath.Glob(filepath.Join(d, "fixtures/ggml/*.gguf"))
	models, _ := filepath.Glob(filepath.Join(d, "models/*/*.gguf"))
	files = append(files, models...)
	if len(files) < 28 {
		t.Fatalf("found only %d shared GGUF files", len(files))
	}
	return files
}

// rewrite parses f and writes it again through Writer, streaming each tensor.
func rewrite(t testing.TB, f *File, w io.Writer) {
	t.Helper()
	gw, err := NewWriter(w, f.KV, f.Specs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		if err := gw.CopyTensor(f.Tensors[i].Name, f.SectionReader(&f.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := gw.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripSharedFiles(t *testing.T) {
	for _, path := range sharedGGUFs(t) {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h := sha256.New()
			rewrite(t, f, h)
			orig, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			h2 := sha256.New()
			io.Copy(h2, orig)
			if !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
				t.Fatalf("read -> write does not reproduce %s", path)
			}
		})
	}
}

// An atomic output gets an ordinary file's mode, not CreateTemp's private one.
func TestAtomicFileMode(t *testing.T) {
	dir := t.TempDir()
	a, err := CreateAtomic(filepath.Join(dir, "out.bin"))
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("x"))
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	ref, err := os.Create(filepath.Join(dir, "ref.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ref.Close()
	got, _ := os.Stat(filepath.Join(dir, "out.bin"))
	want, _ := os.Stat(filepath.Join(dir, "ref.bin"))
	if got.Mode() != want.Mode() {
		t.Fatalf("mode %v, want %v (as os.Create gives)", got.Mode(), want.Mode())
	}
}

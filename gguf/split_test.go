package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

// writeSplit writes src as a split under dir and returns the first shard.
func writeSplit(t *testing.T, src *File, dir string, opt SplitOptions) []string {
	t.Helper()
	sink, paths, err := CreateSplit(filepath.Join(dir, "model.gguf"), src.KV, src.Specs(), opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		if err := sink.CopyTensor(src.Tensors[i].Name, src.SectionReader(&src.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Commit(); err != nil {
		t.Fatal(err)
	}
	return paths
}

// sameModel checks that m presents exactly src's metadata and tensors.
func sameModel(t *testing.T, src, m *File) {
	t.Helper()
	if len(m.KV) != len(src.KV) {
		t.Fatalf("%d metadata pairs, want %d", len(m.KV), len(src.KV))
	}
	for i := range src.KV {
		if m.KV[i].Key != src.KV[i].Key || m.KV[i].Value.TypeName() != src.KV[i].Value.TypeName() {
			t.Fatalf("metadata %d: %s, want %s", i, m.KV[i].Key, src.KV[i].Key)
		}
	}
	if len(m.Tensors) != len(src.Tensors) {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), len(src.Tensors))
	}
	for i := range src.Tensors {
		a, b := &src.Tensors[i], &m.Tensors[i]
		if a.Name != b.Name || a.Type != b.Type || a.Size != b.Size || len(a.Dims) != len(b.Dims) {
			t.Fatalf("tensor %d: %+v, want %+v", i, b, a)
		}
		x, err := src.ReadTensor(a)
		if err != nil {
			t.Fatal(err)
		}
		y, err := m.ReadTensor(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Fatalf("tensor %s: data differs", a.Name)
		}
		if mb, ok := m.Bytes(b); ok && !bytes.Equal(mb, x) {
			t.Fatalf("tensor %s: mapped data differs", a.Name)
		}
	}
}

func TestSplitRoundTrip(t *testing.T) {
	src, err := Open(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cases := []struct {
		name   string
		opt    SplitOptions
		shards int
	}{
		{"2 by tensors", SplitOptions{MaxTensors: 26}, 2},
		{"3 by tensors", SplitOptions{MaxTensors: 17}, 3},
		{"7 by tensors", SplitOptions{MaxTensors: 8}, 7},
		{"metadata-only first shard", SplitOptions{MaxTensors: 26, NoTensorsFirst: true}, 3},
		{"by size", SplitOptions{MaxBytes: 12 << 20}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := writeSplit(t, src, dir, tc.opt)
			if tc.shards > 0 && len(paths) != tc.shards {
				t.Fatalf("%d shards, want %d", len(paths), tc.shards)
			}
			for _, p := range paths {
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				f, err := Open(p)
				if err != nil {
					t.Fatalf("a shard must be a standalone GGUF: %v", err)
				}
				if tc.opt.MaxBytes > 0 && st.Size() > tc.opt.MaxBytes && len(f.Tensors) > 1 {
					t.Errorf("%s: %d bytes exceeds the bound %d with %d tensors", p, st.Size(), tc.opt.MaxBytes, len(f.Tensors))
				}
				if p != paths[0] && f.Has("general.architecture") {
					t.Errorf("%s: only the first shard carries the model metadata", p)
				}
				f.Close()
			}
			// Any shard opens the whole model, read or mapped.
			for _, p := range []string{paths[0], paths[len(paths)-1]} {
				for _, mapped := range []bool{false, true} {
					m, err := OpenModel(p, mapped)
					if err != nil {
						t.Fatal(err)
					}
					if len(m.Shards) != len(paths) {
						t.Fatalf("%d shards seen, want %d", len(m.Shards), len(paths))
					}
					sameModel(t, src, m)
					m.Close()
				}
			}
		})
	}
}

func TestSplitDamageRefused(t *testing.T) {
	src, err := Open(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	other, err := Open(testutil.TinyModel(t, "model-iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	fresh := func(t *testing.T) []string {
		return writeSplit(t, src, t.TempDir(), SplitOptions{MaxTensors: 17})
	}
	expectRefused := func(t *testing.T, open string, naming string) {
		t.Helper()
		m, err := OpenModel(open, false)
		if err == nil {
			m.Close()
			t.Fatal("damaged split was accepted")
		}
		if !strings.Contains(err.Error(), naming) {
			t.Fatalf("error %q does not name %s", err, naming)
		}
	}

	t.Run("missing shard", func(t *testing.T) {
		p := fresh(t)
		os.Remove(p[1])
		expectRefused(t, p[0], filepath.Base(p[1]))
	})
	t.Run("shard of another split of the same shape", func(t *testing.T) {
		p := fresh(t)
		q := writeSplit(t, other, t.TempDir(), SplitOptions{MaxTensors: 17})
		data, err := os.ReadFile(q[2])
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p[2], data, 0o644)
		expectRefused(t, p[0], filepath.Base(p[2]))
	})
	t.Run("shard of a split with another count", func(t *testing.T) {
		p := fresh(t)
		dir := t.TempDir()
		q := writeSplit(t, src, dir, SplitOptions{MaxTensors: 26})
		data, _ := os.ReadFile(q[1])
		os.WriteFile(p[1], data, 0o644) // a 2-way shard under a 3-way name
		expectRefused(t, p[0], filepath.Base(p[1]))
	})
	t.Run("tensors.count off by one", func(t *testing.T) {
		p := fresh(t)
		f, err := Open(p[1])
		if err != nil {
			t.Fatal(err)
		}
		kv := append([]KV(nil), f.KV...)
		for i := range kv {
			if kv[i].Key == KeySplitTensorsCount {
				kv[i].Value = Int32(kv[i].Value.v.(int32) + 1)
			}
		}
		rewriteWith(t, f, kv, p[1])
		expectRefused(t, p[0], filepath.Base(p[1]))
	})
	t.Run("truncated shard", func(t *testing.T) {
		p := fresh(t)
		st, _ := os.Stat(p[2])
		os.Truncate(p[2], st.Size()-100)
		expectRefused(t, p[0], filepath.Base(p[2]))
	})
	t.Run("extra shard of another count beside", func(t *testing.T) {
		p := fresh(t)
		dir := filepath.Dir(p[0])
		data, _ := os.ReadFile(p[0])
		os.WriteFile(SplitPath(filepath.Join(dir, "model"), 3, 4), data, 0o644)
		expectRefused(t, p[0], "-00004-of-00004.gguf")
	})
}

// rewriteWith writes f's tensors again under new metadata at path.
func rewriteWith(t *testing.T, f *File, kv []KV, path string) {
	t.Helper()
	tmp := path + ".new"
	fw, err := Create(tmp, kv, f.Specs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		if err := fw.CopyTensor(f.Tensors[i].Name, f.SectionReader(&f.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Streaming a model through Write in chunks that ignore tensor and shard
// boundaries gives the same shards as writing it tensor by tensor.
func TestSplitWriterStream(t *testing.T) {
	src, err := Open(testutil.TinyModel(t, "model-iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opt := SplitOptions{MaxBytes: 4 << 20}
	want := writeSplit(t, src, t.TempDir(), opt)
	sink, got, err := CreateSplit(filepath.Join(t.TempDir(), "model.gguf"), src.KV, src.Specs(), opt)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for i := range src.Tensors {
		b, err := src.ReadTensor(&src.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	for len(all) > 0 {
		n := min(len(all), 777_777)
		if _, err := sink.Write(all[:n]); err != nil {
			t.Fatal(err)
		}
		all = all[n:]
	}
	if _, err := sink.Write([]byte{0}); err == nil {
		t.Fatal("a byte past the last tensor was accepted")
	}
	if err := sink.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 3 {
		t.Fatalf("%d shards, want %d (at least 3)", len(got), len(want))
	}
	for i := range want {
		a, _ := os.ReadFile(want[i])
		b, _ := os.ReadFile(got[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("shard %d differs", i+1)
		}
	}
}

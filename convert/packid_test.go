package convert

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// writeVersion1 rewrites the pack at dir as this tool wrote packs before
// pack ids: STRX version 1 (no id, layers from byte 152), model.gguf with
// strata.format_version 1 and no strata.pack_id, manifest format_version 1
// without pack_id (its outputs measured again). The slots do not move.
func writeVersion1(t *testing.T, dir string) {
	t.Helper()
	xp := filepath.Join(dir, strata.ExpertsFile)
	b, err := os.ReadFile(xp)
	if err != nil {
		t.Fatal(err)
	}
	h, err := strata.ParseHeader(b, int64(len(b)), xp)
	if err != nil {
		t.Fatal(err)
	}
	h.Version, h.PackID = 1, strata.PackID{}
	hb, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	copy(b, hb)
	if err := os.WriteFile(xp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, strata.ModelFile)
	mf, err := gguf.Open(mp)
	if err != nil {
		t.Fatal(err)
	}
	var kv []gguf.KV
	for _, p := range mf.KV {
		switch p.Key {
		case strata.KeyPackID:
			continue
		case strata.KeyFormatVersion:
			p.Value = gguf.Uint32(1)
		}
		kv = append(kv, p)
	}
	w, err := gguf.Create(mp+".v1", kv, mf.Specs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range mf.Tensors {
		if err := w.CopyTensor(mf.Tensors[i].Name, mf.SectionReader(&mf.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	mf.Close()
	if err := os.Rename(mp+".v1", mp); err != nil {
		t.Fatal(err)
	}
	manp := filepath.Join(dir, strata.ManifestFile)
	mb, _ := os.ReadFile(manp)
	man, err := strata.ParseManifest(mb, manp)
	if err != nil {
		t.Fatal(err)
	}
	man.FormatVersion, man.PackID = 1, ""
	for i, o := range man.Outputs {
		man.Outputs[i].Bytes, man.Outputs[i].SHA256, err = strata.HashFile(context.Background(), filepath.Join(dir, o.Path))
		if err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(manp)
	if err := strata.WriteManifest(manp, man); err != nil {
		t.Fatal(err)
	}
}

// TestVersion1PackStillVerifies: a pack written before pack ids (format
// version 1) still verifies against its source and opens; mixing its files
// with those of a version 2 pack is refused, naming the STRX version.
func TestVersion1PackStillVerifies(t *testing.T) {
	in := testutil.TinyModel(t, "model-iq3s.gguf")
	dir := t.TempDir()
	keepPath := filepath.Join(dir, "keep.strp")
	halfKeep(t, keepPath, []uint32{0, 1, 2, 3}, 32, 8)
	v2 := filepath.Join(dir, "v2")
	if _, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: in, OutDir: v2, Keep: keepPath}); err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(dir, "v1")
	copyPack(t, v2, v1)
	writeVersion1(t, v1)
	rep, err := Verify(context.Background(), VerifyConfig{Path: v1, Source: in})
	if err != nil || !rep.OK {
		t.Fatalf("verify of a version 1 pack: %v %v", err, rep.Failures)
	}
	if !strings.Contains(rep.Checks[1].Detail, "STRX v1") {
		t.Errorf("experts.header: %q", rep.Checks[1].Detail)
	}
	p, err := strata.OpenPack(v1, strata.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	// A version 1 model.gguf with a version 2 experts file, and the reverse.
	for _, name := range []string{strata.ModelFile, strata.ExpertsFile} {
		mixed := filepath.Join(t.TempDir(), "mixed")
		copyPack(t, v2, mixed)
		os.WriteFile(filepath.Join(mixed, name), readAll(t, filepath.Join(v1, name)), 0o644)
		os.Remove(filepath.Join(mixed, strata.ManifestFile))
		_, err := strata.OpenPack(mixed, strata.OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), "STRX version") || !strings.Contains(err.Error(), "different packs") {
			t.Errorf("%s of the version 1 pack in a version 2 pack: %v", name, err)
		}
	}
}

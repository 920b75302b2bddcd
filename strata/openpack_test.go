package strata

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
)

const tD, tF, tE = 32, 32, 4 // n_embd, n_ff_exp, n_expert of the test model

// writeSource writes a small MoE GGUF (blocks 0 and 1, F32, expert biases
// and a routing bias) whose every float is distinct, and opens it.
func writeSource(t *testing.T, path string) *gguf.File {
	t.Helper()
	type tensor struct {
		name string
		dims []int64
	}
	var ts []tensor
	for b := range 2 {
		p := "blk." + string(rune('0'+b)) + "."
		ts = append(ts, tensor{p + "attn_norm.weight", []int64{tD}},
			tensor{p + "ffn_gate_inp.weight", []int64{tD, tE}},
			tensor{p + "exp_probs_b.bias", []int64{tE}},
			tensor{p + "ffn_gate_exps.weight", []int64{tD, tF, tE}},
			tensor{p + "ffn_up_exps.weight", []int64{tD, tF, tE}},
			tensor{p + "ffn_up_exps.bias", []int64{tF, tE}},
			tensor{p + "ffn_down_exps.weight", []int64{tF, tD, tE}},
			tensor{p + "ffn_gate_inp_shexp.weight", []int64{tD}})
	}
	ts = append(ts, tensor{"output.weight", []int64{tD, 8}})
	kv := []gguf.KV{{Key: "general.architecture", Value: gguf.String("test")},
		{Key: "test.expert_count", Value: gguf.Uint16(tE)}, {Key: "test.expert_used_count", Value: gguf.Uint32(2)}}
	var specs []gguf.TensorSpec
	for _, x := range ts {
		specs = append(specs, gguf.TensorSpec{Name: x.name, Type: quant.F32, Dims: x.dims})
	}
	w, err := gguf.Create(path, kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	next := float32(1)
	for _, s := range specs {
		n := int64(1)
		for _, d := range s.Dims {
			n *= d
		}
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(next))
			next++
		}
		if err := w.WriteTensor(s.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var testKeep = &Keep{NExpert: tE, Layers: []uint32{0, 1}, Keep: [][]uint32{{1, 3}, {0, 2}}}

// TestKeptTensors: every per-expert tensor of a MoE layer keeps the kept
// experts' slices in keep-map order, everything else is copied whole, and
// the expert count keeps the source's integer type.
func TestKeptTensors(t *testing.T) {
	f := writeSource(t, filepath.Join(t.TempDir(), "src.gguf"))
	m, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	kept, err := KeptTensors(f, m, testKeep, false)
	if err != nil {
		t.Fatal(err)
	}
	sliced := 0
	for _, kt := range kept {
		src, _ := f.ReadTensor(kt.Src)
		got, err := kt.Bytes(f, testKeep)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := gguf.SplitBlockName(kt.Src.Name)
		if kt.Layer < 0 {
			if ExpertIndexed(rest) || !bytes.Equal(got, src) || !slices.Equal(kt.Spec.Dims, kt.Src.Dims) {
				t.Errorf("%s: not copied whole", kt.Src.Name)
			}
			continue
		}
		sliced++
		last := len(kt.Src.Dims) - 1
		if kt.Spec.Dims[last] != 2 || !slices.Equal(kt.Spec.Dims[:last], kt.Src.Dims[:last]) {
			t.Errorf("%s: ne %v", kt.Src.Name, kt.Spec.Dims)
		}
		per := len(src) / tE
		for i, e := range testKeep.Keep[kt.Layer] {
			if !bytes.Equal(got[i*per:(i+1)*per], src[int(e)*per:int(e+1)*per]) {
				t.Errorf("%s: kept slice %d is not source expert %d", kt.Src.Name, i, e)
			}
		}
	}
	if sliced != 2*6 {
		t.Errorf("%d tensors sliced, want 12 (router, bias, 3 matrices, expert bias per layer)", sliced)
	}
	kv, err := KeptKV(f, m, 2, false, []gguf.KV{{Key: KeySourceNExpert, Value: gguf.Uint32(tE)}, {Key: "test.expert_used_count", Value: gguf.Uint32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(kv) != 4 || kv[1].Key != "test.expert_count" || kv[1].Value.Type != gguf.TypeUint16 || kv[2].Value != gguf.Uint32(1) || kv[3].Key != KeySourceNExpert {
		t.Errorf("kept metadata %v", kv)
	}
}

// writePack packs the test model through CreatePack, experts as they are.
func writePack(t *testing.T, f *gguf.File, dir string, keep *Keep) {
	t.Helper()
	m, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHeader([]uint32{0, 1}, keep.NKeep(), [NumParts]PartShape{{quant.F32, tD, tF}, {quant.F32, tD, tF}, {quant.F32, tF, tD}})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := CreatePack(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Abort()
	for l, ml := range m.Layers {
		for e, src := range keep.Keep[l] {
			var parts [NumParts][]byte
			for p, ti := range []*gguf.TensorInfo{ml.Gate, ml.Up, ml.Down} {
				off, size, _ := gguf.ExpertSlice(ti, int(src))
				parts[p] = make([]byte, size)
				if err := f.ReadTensorAt(ti, parts[p], off); err != nil {
					t.Fatal(err)
				}
			}
			if err := pw.WriteSlot(l, e, parts); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := pw.CreateModel(nil, nil); err == nil {
		t.Fatal("model.gguf created before model.experts was complete")
	}
	if err := pw.FinishExperts(); err != nil {
		t.Fatal(err)
	}
	kept, err := KeptTensors(f, m, keep, false)
	if err != nil {
		t.Fatal(err)
	}
	var specs []gguf.TensorSpec
	data := map[string][]byte{}
	for _, kt := range kept {
		_, rest, _ := gguf.SplitBlockName(kt.Src.Name)
		if slices.Contains(gguf.ExpertMatrices[:], rest) {
			continue
		}
		specs = append(specs, kt.Spec)
		data[kt.Spec.Name], _ = kt.Bytes(f, keep)
		if b, _, _ := gguf.SplitBlockName(kt.Src.Name); kt.Src.Name == gguf.RouterName(b) {
			x := make([]float32, len(data[kt.Spec.Name])/4)
			quant.Dequantize(quant.F32, data[kt.Spec.Name], x)
			cp := RouterCopySpec(b, tD, int64(keep.NKeep()))
			if data[cp.Name], err = RouterCopy(x, tD); err != nil {
				t.Fatal(err)
			}
			specs = append(specs, cp)
		}
	}
	keys, err := pw.Keys(tE)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := KeptKV(f, m, keep.NKeep(), false, keys)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pw.CreateModel(kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if err := w.WriteTensor(s.Name, data[s.Name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := pw.Commit(context.Background(), keep, &Manifest{Tool: "test"}); err != nil {
		t.Fatal(err)
	}
}

// TestCreateOpenPack writes a pruned pack through CreatePack and opens it:
// the slots hold the kept source experts, the manifest lists the outputs,
// and OpenPack refuses a keep.strp of other experts counts or layers, a
// model.gguf that lost a key, and an experts file of another shape.
func TestCreateOpenPack(t *testing.T) {
	dir := t.TempDir()
	f := writeSource(t, filepath.Join(dir, "src.gguf"))
	good := filepath.Join(dir, "pack")
	writePack(t, f, good, testKeep)
	if _, err := CreatePack(good, &Header{}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("CreatePack over an existing folder: %v", err)
	}
	p, err := OpenPack(good, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.MoE()
	pay, err := p.Experts.ReadSlot(1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, size, _ := gguf.ExpertSlice(m.Layers[1].Down, 2)
	want := make([]byte, size)
	f.ReadTensorAt(m.Layers[1].Down, want, off)
	if !bytes.Equal(p.Experts.PartBytes(pay, 2), want) || !slices.Equal(p.Keep.Keep[0], []uint32{1, 3}) {
		t.Error("slot (layer 1, kept 1) is not source expert 2")
	}
	p.Close()
	mb, _ := os.ReadFile(filepath.Join(good, ManifestFile))
	man, err := ParseManifest(mb, ManifestFile)
	if err != nil || len(man.Outputs) != 3 || man.Outputs[1].Path != ExpertsFile {
		t.Fatalf("manifest %+v: %v", man, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("the folder holds %d entries, want src.gguf and pack", len(ents))
	}

	// Another pack of the same model keeping three experts per layer.
	other := filepath.Join(dir, "three")
	writePack(t, f, other, &Keep{NExpert: tE, Layers: []uint32{0, 1}, Keep: [][]uint32{{0, 1, 3}, {0, 2, 3}}})
	copyTo := func(t *testing.T, name, from string) string {
		bad := filepath.Join(t.TempDir(), "bad")
		os.Mkdir(bad, 0o755)
		for _, n := range PackFiles {
			src := filepath.Join(good, n)
			if n == name {
				src = filepath.Join(from, n)
			}
			b, _ := os.ReadFile(src)
			os.WriteFile(filepath.Join(bad, n), b, 0o644)
		}
		return bad
	}
	for _, name := range []string{KeepFile, ExpertsFile} {
		bad := copyTo(t, name, other)
		probs := crossCheckDir(t, bad)
		if len(probs) == 0 {
			t.Errorf("%s of a 3-expert pack: no problem found", name)
		}
		if _, err := OpenPack(bad, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "bad") {
			t.Errorf("%s of a 3-expert pack: OpenPack %v", name, err)
		}
	}
	// A pack without keep.strp opens (the engine runs it unranked).
	bad := copyTo(t, "", good)
	os.Remove(filepath.Join(bad, KeepFile))
	if p, err := OpenPack(bad, OpenOptions{Mapped: true}); err != nil || p.Keep != nil {
		t.Errorf("pack without keep.strp: %v", err)
	} else {
		p.Close()
	}
}

func crossCheckDir(t *testing.T, dir string) []Problem {
	mf, err := gguf.Open(filepath.Join(dir, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	x, _ := OpenExperts(filepath.Join(dir, ExpertsFile))
	if x != nil {
		defer x.Close()
	}
	k, _ := ReadKeep(filepath.Join(dir, KeepFile))
	return CrossCheck(dir, mf, x, k)
}

// TestPackIDBindsFiles: two packs of the same model and shape (other kept
// experts) get other ids, the same pack written twice the same one, and
// OpenPack refuses model.experts of the other pack, naming both ids.
func TestPackIDBindsFiles(t *testing.T) {
	dir := t.TempDir()
	f := writeSource(t, filepath.Join(dir, "src.gguf"))
	a, a2, b := filepath.Join(dir, "a"), filepath.Join(dir, "a2"), filepath.Join(dir, "b")
	writePack(t, f, a, testKeep)
	writePack(t, f, a2, testKeep)
	writePack(t, f, b, &Keep{NExpert: tE, Layers: []uint32{0, 1}, Keep: [][]uint32{{0, 1}, {1, 3}}})
	id := func(pack string) PackID {
		x, err := OpenExperts(filepath.Join(pack, ExpertsFile))
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if x.Version != ExpertsVersion {
			t.Fatalf("STRX version %d written", x.Version)
		}
		mf, _ := gguf.Open(filepath.Join(pack, ModelFile))
		defer mf.Close()
		if s, _ := mf.String(KeyPackID); s != x.PackID.String() {
			t.Fatalf("%s: model.gguf says pack %q, model.experts %s", pack, s, x.PackID)
		}
		return x.PackID
	}
	ida, ida2, idb := id(a), id(a2), id(b)
	if ida != ida2 || ida == idb || ida == (PackID{}) {
		t.Fatalf("ids %s %s %s: want the same inputs to give the same id and other experts another", ida, ida2, idb)
	}
	for _, n := range []string{ExpertsFile, ManifestFile} {
		x, _ := os.ReadFile(filepath.Join(a, n))
		y, _ := os.ReadFile(filepath.Join(a2, n))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two writes of one pack", n)
		}
	}
	eb, _ := os.ReadFile(filepath.Join(b, ExpertsFile))
	os.WriteFile(filepath.Join(a, ExpertsFile), eb, 0o644)
	os.Remove(filepath.Join(a, ManifestFile))
	_, err := OpenPack(a, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), ida.String()) || !strings.Contains(err.Error(), idb.String()) {
		t.Fatalf("experts of pack %s with the model of pack %s: %v", idb, ida, err)
	}
}

// TestHeaderVersion1: a header of an old pack (STRX version 1: no pack id,
// layers from byte 152) still parses; an unknown version is refused naming
// it.
func TestHeaderVersion1(t *testing.T) {
	h, err := NewHeader([]uint32{3, 5}, 2, smallShapes())
	if err != nil {
		t.Fatal(err)
	}
	h.PackID = PackID{1, 2, 3}
	for _, v := range []uint32{1, 2} {
		h.Version = v
		b, err := h.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		at := layersOffset
		if v == 1 {
			at = 152
		}
		if binary.LittleEndian.Uint32(b[at:]) != 3 || binary.LittleEndian.Uint32(b[at+4:]) != 5 {
			t.Fatalf("version %d: layers not at byte %d", v, at)
		}
		back, err := ParseHeader(b, int64(h.FileBytes), "mem")
		if err != nil {
			t.Fatal(err)
		}
		wantID := h.PackID
		if v == 1 {
			wantID = PackID{}
		}
		if back.Version != v || back.PackID != wantID || !slices.Equal(back.Layers, h.Layers) {
			t.Fatalf("version %d came back as %+v", v, back)
		}
	}
	h.Version = 3
	if _, err := h.MarshalBinary(); err == nil {
		t.Fatal("wrote STRX version 3")
	}
	h.Version = 2
	b, _ := h.MarshalBinary()
	binary.LittleEndian.PutUint32(b[4:], 3)
	binary.LittleEndian.PutUint32(b[headerCRCOffset:], CRC32C(b[:headerCRCOffset]))
	if _, err := ParseHeader(b, int64(h.FileBytes), "mem"); err == nil || !strings.Contains(err.Error(), "STRX version 3") {
		t.Fatalf("version 3: %v", err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/testutil"
)

// splitModel writes src as a split of the given number of shards (by tensor
// count) in a new folder and returns the shard paths.
func splitModel(t *testing.T, src string, shards int) []string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	per := (len(f.Tensors) + shards - 1) / shards
	sink, paths, err := gguf.CreateSplit(filepath.Join(t.TempDir(), "model.gguf"), f.KV, f.Specs(), gguf.SplitOptions{MaxTensors: per})
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		if err := sink.CopyTensor(f.Tensors[i].Name, f.SectionReader(&f.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(paths) != shards {
		t.Fatalf("%d shards, want %d", len(paths), shards)
	}
	return paths
}

// runOK runs stratactl in-process and returns its stdout, failing on a
// non-zero exit.
func runOK(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), args); code != 0 {
		t.Fatalf("stratactl %v: exit %d: %s", args, code, errb.String())
	}
	return out.Bytes()
}

func TestSplitModelInspectAndDump(t *testing.T) {
	src := testutil.TinyModel(t, "model-mixed.gguf")
	shards := splitModel(t, src, 3)

	var single, split gguf.InspectReport
	json.Unmarshal(runOK(t, "inspect", "--json", src), &single)
	// Any shard names the model.
	json.Unmarshal(runOK(t, "inspect", "--json", shards[1]), &split)
	if len(split.Shards) != 3 {
		t.Fatalf("inspect lists %d shards, want 3", len(split.Shards))
	}
	for i, sh := range split.Shards {
		st, err := os.Stat(shards[i])
		if err != nil || sh.Path != shards[i] || sh.Bytes != st.Size() {
			t.Errorf("shard %d: %+v, want %s of %d bytes", i, sh, shards[i], st.Size())
		}
	}
	if !reflect.DeepEqual(split.Metadata, single.Metadata) || !reflect.DeepEqual(split.MoE.PerLayer, single.MoE.PerLayer) {
		t.Error("the split model's metadata or MoE shape differs from the single file's")
	}
	if split.MoE.ExpertBytes != single.MoE.ExpertBytes || split.MoE.Experts != single.MoE.Experts || split.TensorCount != single.TensorCount {
		t.Errorf("MoE summary differs: %+v vs %+v", split.MoE, single.MoE)
	}
	for i := range single.Tensors {
		a, b := single.Tensors[i], split.Tensors[i]
		if a.Name != b.Name || a.Type != b.Type || a.Bytes != b.Bytes || !reflect.DeepEqual(a.Shape, b.Shape) {
			t.Fatalf("tensor %d: %+v vs %+v", i, b, a)
		}
		// The offset is the one in the tensor's own shard file.
		data := make([]byte, 16)
		want := make([]byte, 16)
		fs, _ := os.Open(shards[b.Shard])
		fs.ReadAt(data, b.Offset)
		fs.Close()
		fo, _ := os.Open(src)
		fo.ReadAt(want, a.Offset)
		fo.Close()
		if !bytes.Equal(data, want) {
			t.Fatalf("tensor %s: shard %d offset %d does not hold its data", b.Name, b.Shard, b.Offset)
		}
	}

	for _, name := range []string{"blk.3.ffn_down_exps.weight", "output.weight", "token_embd.weight"} {
		a := runOK(t, "dump", src, name)
		b := runOK(t, "dump", shards[2], name)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("dump %s: the split model gives different values", name)
		}
	}
}

// sameTensors checks that two models (either may be split) hold the same
// metadata keys and the same tensors, byte for byte.
func sameTensors(t *testing.T, a, b string) {
	t.Helper()
	fa, err := gguf.OpenModel(a, false)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := gguf.OpenModel(b, false)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if len(fa.KV) != len(fb.KV) || len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("%s and %s differ in metadata (%d/%d) or tensors (%d/%d)", a, b, len(fa.KV), len(fb.KV), len(fa.Tensors), len(fb.Tensors))
	}
	for i := range fa.KV {
		if fa.KV[i].Key != fb.KV[i].Key || !reflect.DeepEqual(fa.KV[i].Value.JSON(), fb.KV[i].Value.JSON()) {
			t.Fatalf("metadata %s differs", fa.KV[i].Key)
		}
	}
	for i := range fa.Tensors {
		x, err := fa.ReadTensor(&fa.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		y, err := fb.ReadTensor(&fb.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		if fa.Tensors[i].Name != fb.Tensors[i].Name || fa.Tensors[i].Type != fb.Tensors[i].Type || !bytes.Equal(x, y) {
			t.Fatalf("tensor %s differs", fa.Tensors[i].Name)
		}
	}
}

func TestPruneSplitInAndOut(t *testing.T) {
	src := testutil.TinyModel(t, "model-iq3s.gguf")
	shards := splitModel(t, src, 3)
	dir := t.TempDir()
	// A profile of a few calibration windows chooses the experts.
	runOK(t, "profile", src, "--ids", testutil.TinyModel(t, "calib_tokens.i32.bin"), "--ctx", "64", "--max-tokens", "256", "-o", filepath.Join(dir, "p.strp"))
	runOK(t, "prune", src, "--profile", filepath.Join(dir, "p.strp"), "--keep", "16", "-o", filepath.Join(dir, "one.gguf"))
	// Sharded in, sharded out: the same model as single in, single out.
	out := runOK(t, "prune", shards[0], "--profile", filepath.Join(dir, "p.strp"), "--keep", "16", "--split-max-size", "3M", "-o", filepath.Join(dir, "split.gguf"), "--json")
	var rep struct{ Shards []string }
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Shards) < 2 {
		t.Fatalf("--split-max-size 3M gave %d shards", len(rep.Shards))
	}
	for _, p := range rep.Shards {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if st.Size() > 3e6 && len(f.Tensors) > 1 {
			t.Errorf("%s: %d bytes with %d tensors exceeds 3M", p, st.Size(), len(f.Tensors))
		}
		f.Close()
	}
	sameTensors(t, filepath.Join(dir, "one.gguf"), rep.Shards[0])
}

// The engine runs a split model as it runs the single file: the same tokens
// and the same logits, bit for bit; and eval of one against the other is exact.
func TestRunAndEvalSplitModel(t *testing.T) {
	src := testutil.TinyModel(t, "model-iq4nl.gguf")
	shards := splitModel(t, src, 3)
	dir := t.TempDir()
	a := filepath.Join(dir, "a.f32")
	b := filepath.Join(dir, "b.f32")
	var ra, rb struct {
		GeneratedIDs []int32 `json:"generated_ids"`
	}
	json.Unmarshal(runOK(t, "run", src, "--prompt", "def main(", "-n", "8", "--logits", a, "--json"), &ra)
	json.Unmarshal(runOK(t, "run", shards[1], "--prompt", "def main(", "-n", "8", "--logits", b, "--json"), &rb)
	la, _ := os.ReadFile(a)
	lb, _ := os.ReadFile(b)
	if len(ra.GeneratedIDs) != 8 || !reflect.DeepEqual(ra.GeneratedIDs, rb.GeneratedIDs) || len(la) == 0 || !bytes.Equal(la, lb) {
		t.Fatalf("split model decodes differently: %v vs %v", rb.GeneratedIDs, ra.GeneratedIDs)
	}
	var ev struct {
		KLDMean float64 `json:"kld_mean"`
		Top1    float64 `json:"top1_agreement"`
	}
	json.Unmarshal(runOK(t, "eval", shards[0], "--ref", src, "--ids", testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"), "--ctx", "64", "--exact", "--json"), &ev)
	if ev.KLDMean != 0 || ev.Top1 != 1 {
		t.Fatalf("split model against its single file: KLD %v, top-1 %v", ev.KLDMean, ev.Top1)
	}
}

// A split model quantizes and packs to exactly what its single file gives,
// and verify --source accepts the shards as the source.
func TestQuantizePackVerifySplitModel(t *testing.T) {
	src := testutil.TinyModel(t, "model-iq3s.gguf")
	shards := splitModel(t, src, 3)
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }

	runOK(t, "quantize", src, "-o", p("one.gguf"), "--type", "q2_0")
	runOK(t, "quantize", shards[1], "-o", p("from-split.gguf"), "--type", "q2_0")
	a, _ := os.ReadFile(p("one.gguf"))
	b, _ := os.ReadFile(p("from-split.gguf"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("quantize of the split model differs from quantize of the single file")
	}
	var q struct{ Shards []string }
	json.Unmarshal(runOK(t, "quantize", shards[0], "-o", p("q.gguf"), "--type", "q2_0", "--split-max-tensors", "20", "--json"), &q)
	if len(q.Shards) != 3 {
		t.Fatalf("--split-max-tensors 20 of 51 tensors gave %d shards", len(q.Shards))
	}
	sameTensors(t, p("one.gguf"), q.Shards[2])

	runOK(t, "pack", src, "-o", p("pack-one"))
	runOK(t, "pack", shards[2], "-o", p("pack-split"))
	for _, name := range []string{"model.gguf", "model.experts", "keep.strp"} {
		x, _ := os.ReadFile(filepath.Join(p("pack-one"), name))
		y, _ := os.ReadFile(filepath.Join(p("pack-split"), name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Fatalf("%s of the split model's pack differs from the single file's", name)
		}
	}
	var v struct{ OK bool }
	json.Unmarshal(runOK(t, "verify", p("pack-split"), "--source", shards[0], "--json"), &v)
	if !v.OK {
		t.Fatal("verify --source with the shards failed")
	}
	// The pack made from the single file names another source: refused.
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), []string{"verify", p("pack-one"), "--source", shards[0]}); code == 0 {
		t.Fatal("verify accepted shards as the source of a pack made from the single file")
	}
}

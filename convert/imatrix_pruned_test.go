package convert

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/prune"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// prunedTiny prunes tiny-qwen3moe's IQ3_S model 32 -> 16 experts, a
// different set in each layer (expert e of layer l is kept when
// (7e+3l) mod 32 < 16), into dir/pruned.gguf; it returns the model, the
// pruned GGUF and the keep map over the original experts.
func prunedTiny(t *testing.T, dir string) (model, pruned string, keep *strata.Keep) {
	t.Helper()
	model = testutil.TinyModel(t, "model-iq3s.gguf")
	src, m := openMoEFile(t, model)
	if m.Experts != 32 {
		t.Fatalf("%s has %d experts, the test wants 32", model, m.Experts)
	}
	keep = &strata.Keep{NExpert: 32}
	for l, ml := range m.Layers {
		keep.Layers = append(keep.Layers, uint32(ml.Block))
		var ids []uint32
		for e := range 32 {
			if (e*7+3*l)%32 < 16 {
				ids = append(ids, uint32(e))
			}
		}
		keep.Keep = append(keep.Keep, ids)
	}
	pruned = filepath.Join(dir, "pruned.gguf")
	if _, err := prune.Write(context.Background(), src, keep, pruned, prune.Options{}); err != nil {
		t.Fatal(err)
	}
	return model, pruned, keep
}

// sliceImatrix writes to out the importance matrix in with every
// per-expert entry of block b cut, by hand, to the experts of
// rows[b] (in that order): the in_sum2 rows and counts of those experts,
// everything else copied.
func sliceImatrix(t *testing.T, in, out string, rows map[int][]uint32) {
	t.Helper()
	f, err := gguf.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	specs := f.Specs()
	data := make([][]byte, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		b, err := f.ReadTensor(ti)
		if err != nil {
			t.Fatal(err)
		}
		data[i] = b
		block, _, ok := gguf.SplitBlockName(ti.Name)
		ids := rows[block]
		if !ok || ids == nil || len(ti.Dims) != 2 || ti.Dims[1] == 1 {
			continue
		}
		rowBytes := int(ti.Dims[0]) * 4
		var cut []byte
		for _, e := range ids {
			cut = append(cut, b[int(e)*rowBytes:(int(e)+1)*rowBytes]...)
		}
		data[i] = cut
		specs[i].Dims[1] = int64(len(ids))
	}
	w, err := gguf.Create(out, f.KV, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range specs {
		if err := w.WriteTensor(specs[i].Name, data[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestImatrixThroughPrunedKeep quantizes a pruned tiny-qwen3moe with the
// original model's importance matrix: the bytes equal those made with the
// matrix cut by hand to the kept experts (same file name, so the recorded
// key matches too), and differ from those made without one (the matrix
// does weigh the search). The pack of the pruned GGUF agrees the same way.
// An entry of neither expert count is refused, naming both.
func TestImatrixThroughPrunedKeep(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	_, pruned, keep := prunedTiny(t, dir)
	orig := testutil.TinyModel(t, "imatrix.gguf")
	kept := map[int][]uint32{}
	first8 := map[int][]uint32{}
	for l, b := range keep.Layers {
		kept[int(b)] = keep.Keep[l]
		first8[int(b)] = []uint32{0, 1, 2, 3, 4, 5, 6, 7}
	}
	if err := os.MkdirAll(filepath.Join(dir, "cut"), 0o755); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut", "imatrix.gguf")
	sliceImatrix(t, orig, cut, kept)
	bad := filepath.Join(dir, "imatrix8.gguf")
	sliceImatrix(t, orig, bad, first8)

	quantizeWith := func(name, imat string) (string, error) {
		out := filepath.Join(dir, name+".gguf")
		_, err := Quantize(ctx, QuantizeConfig{In: pruned, Out: out, Type: quant.Q2_0, Imatrix: imat, Jobs: 2})
		return out, err
	}
	a, err := quantizeWith("orig", orig)
	if err != nil {
		t.Fatalf("quantize of the pruned GGUF with the original's imatrix: %v", err)
	}
	b, err := quantizeWith("cut", cut)
	if err != nil {
		t.Fatal(err)
	}
	c, err := quantizeWith("none", "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, a), readAll(t, b)) {
		t.Errorf("quantize with the original imatrix and with it cut to the kept experts differ")
	}
	if fa, fc := readExpertBytes(t, a), readExpertBytes(t, c); bytes.Equal(fa, fc) {
		t.Errorf("the imatrix changed no expert byte: the test cannot tell a mapped matrix from none")
	}
	_, err = quantizeWith("bad", bad)
	if err == nil || !strings.Contains(err.Error(), "holds 8 experts") || !strings.Contains(err.Error(), "16 or 32") {
		t.Errorf("quantize with an 8-expert imatrix: %v, want a refusal naming 8, 16 and 32", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.gguf")); !os.IsNotExist(err) {
		t.Errorf("the refused quantize left an output (%v)", err)
	}

	// The pack: slots of the pruned GGUF with either matrix agree.
	pa, pb := filepath.Join(dir, "pack-orig"), filepath.Join(dir, "pack-cut")
	if _, err := Pack(ctx, PackConfig{In: pruned, OutDir: pa, Type: quant.Q2_0, Imatrix: orig, Jobs: 2}); err != nil {
		t.Fatalf("pack of the pruned GGUF with the original's imatrix: %v", err)
	}
	if _, err := Pack(ctx, PackConfig{In: pruned, OutDir: pb, Type: quant.Q2_0, Imatrix: cut, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, filepath.Join(pa, strata.ExpertsFile)), readAll(t, filepath.Join(pb, strata.ExpertsFile))) {
		t.Errorf("the packs with the original imatrix and with it cut to the kept experts differ in %s", strata.ExpertsFile)
	}
	// verify rebuilds the experts through the same mapping.
	r, err := Verify(ctx, VerifyConfig{Path: a, Source: pruned, Imatrix: orig})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK {
		t.Errorf("verify %s --source the pruned GGUF --imatrix the original's: %+v", a, r.Failures)
	}
	for _, tc := range r.Tensors {
		if strings.Contains(tc.Name, "_exps") && !tc.Identical {
			t.Errorf("verify: %s is not byte-identical to its rebuild", tc.Name)
		}
	}
}

// readExpertBytes is every expert tensor's data of a GGUF, concatenated.
func readExpertBytes(t *testing.T, path string) []byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []byte
	for i := range f.Tensors {
		if gguf.IsExpertTensor(f.Tensors[i].Name) {
			b, err := f.ReadTensor(&f.Tensors[i])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
	}
	return out
}

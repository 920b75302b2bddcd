package convert

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testmodels"
	"github.com/stratactl/stratactl/prune"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// oddKeep keeps experts 1, 3, 5, ... of every MoE layer of m.
func oddKeep(m *gguf.MoE) *strata.Keep {
	k := strata.IdentityKeep(m.LayerBlocks(), m.Experts)
	for l := range k.Keep {
		var ids []uint32
		for e := 1; e < m.Experts; e += 2 {
			ids = append(ids, uint32(e))
		}
		k.Keep[l] = ids
	}
	k.Rank = nil
	return k
}

func openMoEFile(t *testing.T, path string) (*gguf.File, *gguf.MoE) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

// tensorBytes maps every tensor of a GGUF to its data.
func tensorBytes(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	for i := range f.Tensors {
		b, err := f.ReadTensor(&f.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		out[f.Tensors[i].Name] = b
	}
	return out
}

// fusedOf is what the fused layout makes of a GGUF's separate gate and up
// tensors: the same tensors with every block's pair fused.
func fusedOf(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := tensorBytes(t, path)
	for i := range f.Tensors {
		g := &f.Tensors[i]
		b, rest, ok := gguf.SplitBlockName(g.Name)
		if !ok || rest != gguf.ExpertMatrices[0] {
			continue
		}
		up, _ := f.Tensor(fmt.Sprintf("blk.%d.%s", b, gguf.ExpertMatrices[1]))
		out[fmt.Sprintf("blk.%d.%s", b, gguf.FusedGateUp)] = testmodels.Fuse(t, f, g, up)
		delete(out, g.Name)
		delete(out, up.Name)
	}
	return out
}

func sameTensors(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: %s missing", what, name)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%s: %s differs", what, name)
		}
	}
}

// TestFusedGateUp: a model whose experts come as ffn_gate_up_exps (the
// fixture rewritten so) is read with the same expert shape, each slot still
// holds gate, up and down, and prune, quantize, pack and verify give what
// they give the separate layout: pruned and quantized tensors equal the
// fused form of the unfused results, the pack's files are byte-identical.
func TestFusedGateUp(t *testing.T) {
	dir := t.TempDir()
	plain := testmodels.Qwen35(t)
	fused := testmodels.Write(t, plain, dir, testmodels.Variant{Fuse: true})
	ff, fm := openMoEFile(t, fused)
	pf, pm := openMoEFile(t, plain)
	l := fm.Layers[0]
	if l.GateUp == nil || l.Gate != nil || l.Up != nil || fm.ExpertFF != pm.ExpertFF || fm.Embd != pm.Embd || fm.Experts != pm.Experts ||
		fm.BytesPerExpert != pm.BytesPerExpert || fm.ExpertBytes != pm.ExpertBytes || fm.DenseBytes != pm.DenseBytes {
		t.Fatalf("fused MoE %+v, separate %+v", fm, pm)
	}
	parts, ok := l.Parts()
	if !ok || parts[0].Label() != "ffn_gate_up_exps.weight[gate]" || parts[1].Label() != "ffn_gate_up_exps.weight[up]" {
		t.Fatalf("parts %+v", parts)
	}
	// Expert 5's gate half is the separate gate's expert 5, its up half the up's.
	pparts, _ := pm.Layers[0].Parts()
	for p := range 2 {
		off, size, err := parts[p].Slice(5)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, size)
		if err := ff.ReadTensorAt(parts[p].Tensor, got, off); err != nil {
			t.Fatal(err)
		}
		poff, psize, _ := pparts[p].Slice(5)
		want := make([]byte, psize)
		if err := pf.ReadTensorAt(pparts[p].Tensor, want, poff); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || parts[p].FirstElement(5) != int64(2*5+p)*pm.Embd*pm.ExpertFF {
			t.Errorf("part %d of expert 5 is not the separate tensor's", p)
		}
	}

	keep := oddKeep(pm)
	kp := filepath.Join(dir, "half.keep.strp")
	if err := strata.WriteKeep(kp, keep); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		src  *gguf.File
	}{{"plain", pf}, {"fused", ff}} {
		if _, err := prune.Write(ctx, c.src, keep, filepath.Join(dir, c.name+"-pruned.gguf"), prune.Options{}); err != nil {
			t.Fatal(err)
		}
		if _, err := Quantize(ctx, QuantizeConfig{In: c.src.Path, Out: filepath.Join(dir, c.name+"-q2.gguf"), Type: quant.Q2_0, Jobs: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := Pack(ctx, PackConfig{In: c.src.Path, OutDir: filepath.Join(dir, c.name+"-pack"), Type: quant.Q2_0, Keep: kp, Jobs: 2}); err != nil {
			t.Fatal(err)
		}
	}
	sameTensors(t, "pruned", tensorBytes(t, filepath.Join(dir, "fused-pruned.gguf")), fusedOf(t, filepath.Join(dir, "plain-pruned.gguf")))
	sameTensors(t, "quantized", tensorBytes(t, filepath.Join(dir, "fused-q2.gguf")), fusedOf(t, filepath.Join(dir, "plain-q2.gguf")))
	for _, name := range []string{strata.ExpertsFile, strata.ModelFile, strata.KeepFile} {
		if !bytes.Equal(readAll(t, filepath.Join(dir, "fused-pack", name)), readAll(t, filepath.Join(dir, "plain-pack", name))) {
			t.Errorf("pack %s differs between the fused and the separate source", name)
		}
	}
	r, err := Verify(ctx, VerifyConfig{Path: filepath.Join(dir, "fused-pack"), Source: fused})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Slots != 4*32 {
		t.Errorf("verify against the fused source: ok %v, %d slots checked: %+v", r.OK, r.Slots, r.Failures)
	}
	if got := r.Layers[0].Parts[0].Tensor; got != "ffn_gate_up_exps.weight[gate]" {
		t.Errorf("verify names the gate part %q", got)
	}
}

// TestMTPBlock: an MTP block (the fixture with one appended, as Qwen3.5
// GGUFs carry it) is no MoE layer; prune and pack drop it by default (keys
// rewritten, recorded in the report and manifest), giving what the MTP-free
// model gives, and carry it whole when asked.
func TestMTPBlock(t *testing.T) {
	dir := t.TempDir()
	plain := testmodels.Qwen35(t)
	mtp := testmodels.Write(t, plain, dir, testmodels.Variant{MTP: true})
	mf, mm := openMoEFile(t, mtp)
	pf, pm := openMoEFile(t, plain)
	if !slices.Equal(mm.MTP, []int{4}) || len(mm.Layers) != 4 || mm.Blocks != 5 || mm.ExpertBytes != pm.ExpertBytes || mm.DenseBytes != pm.DenseBytes || mm.MTPBytes == 0 {
		t.Fatalf("MoE of the MTP model: %d layers of %d blocks, MTP %v (%d bytes), expert bytes %d (want %d), dense %d (want %d)",
			len(mm.Layers), mm.Blocks, mm.MTP, mm.MTPBytes, mm.ExpertBytes, pm.ExpertBytes, mm.DenseBytes, pm.DenseBytes)
	}
	keep := oddKeep(pm)
	if err := keep.Fits(mm, mtp); err != nil {
		t.Fatalf("the MTP-free keep map does not fit the MTP model: %v", err)
	}
	kp := filepath.Join(dir, "half.keep.strp")
	if err := strata.WriteKeep(kp, keep); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := prune.Write(ctx, pf, keep, filepath.Join(dir, "plain-pruned.gguf"), prune.Options{}); err != nil {
		t.Fatal(err)
	}
	want := tensorBytes(t, filepath.Join(dir, "plain-pruned.gguf"))
	source := tensorBytes(t, mtp)
	keys := func(path string) (blocks, nextn uint32) {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		blocks, _ = f.Uint32(f.ArchKey("block_count"))
		nextn, _ = f.Uint32(f.ArchKey(gguf.NextNKey))
		return
	}
	for _, carry := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("pruned-carry-%v.gguf", carry))
		res, err := prune.Write(ctx, mf, keep, out, prune.Options{CarryMTP: carry})
		if err != nil {
			t.Fatal(err)
		}
		if res.MTP == nil || !slices.Equal(res.MTP.Blocks, []int{4}) || res.MTP.Carried != carry {
			t.Errorf("carry %v: prune reports %+v", carry, res.MTP)
		}
		got := tensorBytes(t, out)
		w := copyTensors(want)
		wantBlocks, wantNextN := uint32(4), uint32(0)
		if carry {
			for name, b := range source {
				if mm.InMTP(name) {
					w[name] = b // whole: every expert
				}
			}
			wantBlocks, wantNextN = 5, 1
		}
		sameTensors(t, fmt.Sprintf("prune carry %v", carry), got, w)
		if b, n := keys(out); b != wantBlocks || n != wantNextN {
			t.Errorf("prune carry %v: block_count %d, nextn_predict_layers %d; want %d, %d", carry, b, n, wantBlocks, wantNextN)
		}

		pack := filepath.Join(dir, fmt.Sprintf("pack-carry-%v", carry))
		man, err := Pack(ctx, PackConfig{In: mtp, OutDir: pack, Type: quant.Q2_0, Keep: kp, CarryMTP: carry, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		if man.MTP == nil || !slices.Equal(man.MTP.Blocks, []int{4}) || man.MTP.Carried != carry || man.Model.MoELayers != 4 {
			t.Errorf("carry %v: manifest MTP %+v, %d MoE layers", carry, man.MTP, man.Model.MoELayers)
		}
		model := tensorBytes(t, filepath.Join(pack, strata.ModelFile))
		n := 0
		for name, b := range model {
			if mm.InMTP(name) {
				n++
				if !bytes.Equal(b, source[name]) {
					t.Errorf("pack carry %v: %s is not the source's", carry, name)
				}
			}
		}
		if wantN := map[bool]int{false: 0, true: countMTP(mm, source)}[carry]; n != wantN {
			t.Errorf("pack carry %v: %d MTP tensors in model.gguf, want %d", carry, n, wantN)
		}
		if b, nn := keys(filepath.Join(pack, strata.ModelFile)); b != wantBlocks || nn != wantNextN {
			t.Errorf("pack carry %v: block_count %d, nextn_predict_layers %d; want %d, %d", carry, b, nn, wantBlocks, wantNextN)
		}
		r, err := Verify(ctx, VerifyConfig{Path: pack, Source: mtp})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK {
			t.Errorf("verify pack carry %v: %+v", carry, r.Failures)
		}
	}
}

func copyTensors(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func countMTP(m *gguf.MoE, tensors map[string][]byte) int {
	n := 0
	for name := range tensors {
		if m.InMTP(name) {
			n++
		}
	}
	return n
}

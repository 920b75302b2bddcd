// Package enginetest builds test inputs for the engine and the commands
// that use it: a strata pack of a tiny model GGUF, the experts copied as
// they are (no conversion), written through strata.CreatePack.
package enginetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/strata"
)

// BuildPack writes a pack of a tiny model GGUF as the folder dir (missing
// or empty): model.gguf (dense tensors, Q8_0 router copies, strata keys),
// model.experts, keep.strp with a ranking (expert ids reversed, so the fill
// order is not the id order).
func BuildPack(t testing.TB, src, dir string) {
	t.Helper()
	f, err := gguf.OpenMapped(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.MoE()
	if err != nil {
		t.Fatal(err)
	}
	var parts [strata.NumParts]strata.PartShape
	l0 := &m.Layers[0]
	for p, ti := range []*gguf.TensorInfo{l0.Gate, l0.Up, l0.Down} {
		parts[p] = strata.PartShape{Type: ti.Type, Ne0: ti.Dims[0], Ne1: ti.Dims[1]}
	}
	layers := m.LayerBlocks()
	h, err := strata.NewHeader(layers, m.Experts, parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := strata.RemoveEmptyDir(dir); err != nil {
		t.Fatal(err)
	}
	pw, err := strata.CreatePack(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Abort()
	for l, ml := range m.Layers {
		var data [strata.NumParts][]byte
		for p, ti := range []*gguf.TensorInfo{ml.Gate, ml.Up, ml.Down} {
			data[p], _ = f.Bytes(ti)
		}
		for e := 0; e < m.Experts; e++ {
			var sl [strata.NumParts][]byte
			for p := range sl {
				per := len(data[p]) / m.Experts
				sl[p] = data[p][e*per : (e+1)*per]
			}
			if err := pw.WriteSlot(l, e, sl); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := pw.FinishExperts(); err != nil {
		t.Fatal(err)
	}
	k := strata.IdentityKeep(layers, m.Experts)
	for l := range k.Rank {
		k.Rank[l] = make([]uint32, m.Experts)
		for i := range k.Rank[l] {
			k.Rank[l][i] = uint32(m.Experts - 1 - i)
		}
	}
	keys, err := pw.Keys(m.Experts)
	if err != nil {
		t.Fatal(err)
	}
	kv := append(append([]gguf.KV(nil), f.KV...), keys...)
	matrices := map[string]bool{}
	for _, l := range m.Layers {
		matrices[l.Gate.Name], matrices[l.Up.Name], matrices[l.Down.Name] = true, true, true
	}
	var specs []gguf.TensorSpec
	payload := map[string][]byte{}
	for _, s := range f.Specs() {
		if matrices[s.Name] {
			continue
		}
		ti, _ := f.Tensor(s.Name)
		b, _ := f.Bytes(ti)
		specs = append(specs, s)
		payload[s.Name] = b
		if blk, _, _ := gguf.SplitBlockName(s.Name); s.Name == gguf.RouterName(blk) {
			rm, err := kernels.NewMatrix(ti.Type, b, int(ti.Dims[0]), int(ti.Dims[1]))
			if err != nil {
				t.Fatal(err)
			}
			all := make([]float32, rm.Rows*rm.Cols)
			for r := 0; r < rm.Rows; r++ {
				if err := rm.DecodeRowTo(r, all[r*rm.Cols:]); err != nil {
					t.Fatal(err)
				}
			}
			cp := strata.RouterCopySpec(blk, ti.Dims[0], ti.Dims[1])
			if payload[cp.Name], err = strata.RouterCopy(all, rm.Cols); err != nil {
				t.Fatal(fmt.Errorf("%s: %w", s.Name, err))
			}
			specs = append(specs, cp)
		}
	}
	w, err := pw.CreateModel(kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if err := w.WriteTensor(s.Name, payload[s.Name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := pw.Commit(context.Background(), k, nil); err != nil {
		t.Fatal(err)
	}
}

// Package enginetest builds test inputs for the engine and the commands
// that use it: a strata pack of a tiny model GGUF, written the way the
// format contract says, independently of the converter.
package enginetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// BuildPack writes a pack of a tiny model GGUF into dir: model.gguf (dense
// tensors, Q8_0 router copies, strata keys), model.experts, keep.strp with a
// ranking (expert ids reversed, so the fill order is not the id order).
func BuildPack(t testing.TB, src, dir string) {
	t.Helper()
	f, err := gguf.OpenMapped(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arch := f.Architecture()
	u := func(k string) int {
		v, err := f.Uint32(arch + "." + k)
		if err != nil {
			t.Fatal(err)
		}
		return int(v)
	}
	c := struct{ Layers, Experts int }{u("block_count"), u("expert_count")}
	var parts [strata.NumParts]strata.PartShape
	for p, name := range []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
		ti, _ := f.Tensor("blk.0." + name + ".weight")
		parts[p] = strata.PartShape{Type: ti.Type, Ne0: ti.Dims[0], Ne1: ti.Dims[1]}
	}
	layers := make([]uint32, c.Layers)
	for i := range layers {
		layers[i] = uint32(i)
	}
	h, err := strata.NewHeader(layers, c.Experts, parts)
	if err != nil {
		t.Fatal(err)
	}
	xf, err := strata.CreateExperts(filepath.Join(dir, strata.ExpertsFile), h)
	if err != nil {
		t.Fatal(err)
	}
	for l := 0; l < c.Layers; l++ {
		var data [3][]byte
		for p, name := range []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
			ti, _ := f.Tensor(fmt.Sprintf("blk.%d.%s.weight", l, name))
			data[p], _ = f.Bytes(ti)
		}
		for e := 0; e < c.Experts; e++ {
			var sl [3][]byte
			for p := range sl {
				per := len(data[p]) / c.Experts
				sl[p] = data[p][e*per : (e+1)*per]
			}
			if err := xf.WriteSlot(l, e, sl); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := xf.Commit(); err != nil {
		t.Fatal(err)
	}
	k := strata.IdentityKeep(layers, c.Experts)
	for l := range k.Rank {
		k.Rank[l] = make([]uint32, c.Experts)
		for i := range k.Rank[l] {
			k.Rank[l][i] = uint32(c.Experts - 1 - i)
		}
	}
	if err := strata.WriteKeep(filepath.Join(dir, strata.KeepFile), k); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, strata.ExpertsFile))
	kv := append([]gguf.KV(nil), f.KV...)
	kv = append(kv,
		gguf.KV{Key: strata.KeyFormatVersion, Value: gguf.Uint32(strata.FormatVersion)},
		gguf.KV{Key: strata.KeyExpertsFile, Value: gguf.String(strata.ExpertsFile)},
		gguf.KV{Key: strata.KeyExpertsBytes, Value: gguf.Uint64(uint64(st.Size()))},
		gguf.KV{Key: strata.KeySlotBytes, Value: gguf.Uint64(h.SlotBytes)},
		gguf.KV{Key: strata.KeySourceNExpert, Value: gguf.Uint32(uint32(c.Experts))},
	)
	var specs []gguf.TensorSpec
	payload := map[string][]byte{}
	for _, s := range f.Specs() {
		if strings.HasSuffix(s.Name, "_exps.weight") {
			continue
		}
		ti, _ := f.Tensor(s.Name)
		b, _ := f.Bytes(ti)
		specs = append(specs, s)
		payload[s.Name] = b
		if strings.HasSuffix(s.Name, "ffn_gate_inp.weight") {
			m, err := kernels.NewMatrix(ti.Type, b, int(ti.Dims[0]), int(ti.Dims[1]))
			if err != nil {
				t.Fatal(err)
			}
			all := make([]float32, m.Rows*m.Cols)
			for r := 0; r < m.Rows; r++ {
				if err := m.DecodeRowTo(r, all[r*m.Cols:]); err != nil {
					t.Fatal(err)
				}
			}
			b, _, _ := gguf.SplitBlockName(s.Name)
			name := strata.RouterCopyName(b)
			specs = append(specs, gguf.TensorSpec{Name: name, Type: quant.Q8_0, Dims: s.Dims})
			q8 := make([]byte, len(all)/32*34)
			if err := quant.Quantize(quant.Q8_0, all, q8, nil); err != nil {
				t.Fatal(err)
			}
			payload[name] = q8
		}
	}
	w, err := gguf.Create(filepath.Join(dir, strata.ModelFile), kv, specs)
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
}

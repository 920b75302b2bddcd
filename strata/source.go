package strata

import (
	"fmt"

	"github.com/stratactl/stratactl/gguf"
)

// SourceKV is the record of k (a keep map over the original model's
// experts) that a pruned GGUF carries: KeySourceNExpert and KeySourceKeep.
func (k *Keep) SourceKV() []gguf.KV {
	ids := make([]uint32, 0, len(k.Keep)*k.NKeep())
	for _, l := range k.Keep {
		ids = append(ids, l...)
	}
	return []gguf.KV{
		{Key: KeySourceNExpert, Value: gguf.Uint32(k.NExpert)},
		{Key: KeySourceKeep, Value: gguf.MustArray(ids)},
	}
}

// SourceKeep is the record a pruned GGUF f (whose MoE is m) carries of the
// original model's experts it holds: a keep map over the original ids, one
// entry per expert of f, without ranking. It is nil when f carries no
// KeySourceKeep (not pruned, or pruned before the record existed).
func SourceKeep(f *gguf.File, m *gguf.MoE) (*Keep, error) {
	v, ok := f.Get(KeySourceKeep)
	if !ok {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return &gguf.FormatError{File: f.Path, Offset: f.KeyOffset(KeySourceKeep), Key: KeySourceKeep, Msg: fmt.Sprintf(format, args...)}
	}
	ids, ok := v.Any().([]uint32)
	if v.Type != gguf.TypeArray || !ok {
		return nil, bad("holds %s, want an array of u32", v.TypeName())
	}
	n, err := f.Uint32(KeySourceNExpert)
	if err != nil {
		return nil, bad("%s: %v", KeySourceNExpert, err)
	}
	if want := len(m.Layers) * m.Experts; len(ids) != want {
		return nil, bad("%d ids, want %d (%d MoE layers x %d experts)", len(ids), want, len(m.Layers), m.Experts)
	}
	k := &Keep{NExpert: n}
	for l, ml := range m.Layers {
		row := ids[l*m.Experts : (l+1)*m.Experts]
		for i, id := range row {
			if id >= n || (i > 0 && id <= row[i-1]) {
				return nil, bad("layer %d (block %d): id %d at %d: the ids must ascend below %s = %d", l, ml.Block, id, i, KeySourceNExpert, n)
			}
		}
		k.Layers = append(k.Layers, uint32(ml.Block))
		k.Keep = append(k.Keep, row)
	}
	return k, nil
}

// Compose is the keep map over the original experts of local, a keep map
// of the pruned model whose record is rec (SourceKeep): kept expert i of
// layer l is original expert rec.Keep[l][local.Keep[l][i]]. The ranking
// (over kept positions) carries over; statistics, which describe the pruned
// model's experts, do not.
func (rec *Keep) Compose(local *Keep) *Keep {
	out := &Keep{NExpert: rec.NExpert, Layers: append([]uint32(nil), local.Layers...), Rank: local.Rank}
	for l, ids := range local.Keep {
		row := make([]uint32, len(ids))
		for i, id := range ids {
			row[i] = rec.Keep[l][id]
		}
		out.Keep = append(out.Keep, row)
	}
	return out
}

// Local is the inverse of Compose: the keep map over the pruned model's
// experts (rec its record) of orig, a keep map over the original experts,
// refusing an original expert the pruned model does not hold.
func (rec *Keep) Local(orig *Keep) (*Keep, error) {
	if orig.NExpert != rec.NExpert || len(orig.Keep) != len(rec.Keep) {
		return nil, fmt.Errorf("the keep map is for %d experts in %d layers, the pruned model holds experts of %d in %d layers", orig.NExpert, len(orig.Keep), rec.NExpert, len(rec.Keep))
	}
	out := &Keep{NExpert: uint32(rec.NKeep()), Layers: append([]uint32(nil), orig.Layers...), Rank: orig.Rank}
	for l, ids := range orig.Keep {
		pos := make(map[uint32]uint32, len(rec.Keep[l]))
		for i, id := range rec.Keep[l] {
			pos[id] = uint32(i)
		}
		row := make([]uint32, len(ids))
		for i, id := range ids {
			p, ok := pos[id]
			if !ok {
				return nil, fmt.Errorf("layer %d keeps original expert %d, which the pruned model does not hold", l, id)
			}
			row[i] = p
		}
		out.Keep = append(out.Keep, row)
	}
	return out, nil
}

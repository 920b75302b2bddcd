package profile

import (
	"fmt"

	"github.com/stratactl/stratactl/strata"
)

// Keep is the profile as a keep.strp: every expert kept (n_keep = n_expert),
// each layer ranked by routed-token count (hottest first, ties to the lower
// id), and the statistics in the STAT block.
func (s *Stats) Keep() *strata.Keep {
	layers := make([]uint32, len(s.Blocks))
	for l, b := range s.Blocks {
		layers[l] = uint32(b)
	}
	k := strata.IdentityKeep(layers, s.NExpert)
	k.Rank = make([][]uint32, len(s.Blocks))
	for l := range s.Blocks {
		k.Rank[l] = toU32(s.ByCount(l))
	}
	k.Stats = s.StrataStats()
	return k
}

// ByCount is layer l's expert ids by routed-token count, hottest first, ties
// to the lower id.
func (s *Stats) ByCount(l int) []int {
	return s.order(func(e int) float64 { return float64(s.Count[l][e]) })
}

// StrataStats is the STAT block of the profile: Fields, values by layer,
// source expert and field.
func (s *Stats) StrataStats() *strata.Stats {
	st := &strata.Stats{Fields: append([]string(nil), Fields...)}
	for _, byExpert := range s.Table() {
		for _, v := range byExpert {
			st.Values = append(st.Values, v...)
		}
	}
	return st
}

// FromKeep reads the statistics of a keep.strp (a profile, or a keep map
// that carries its profile).
func FromKeep(k *strata.Keep, name string) (*Stats, error) {
	if k.Stats == nil {
		return nil, fmt.Errorf("%s: no STAT statistics block: not a profile (make one with `stratactl profile`)", name)
	}
	blocks := make([]int, len(k.Layers))
	for i, b := range k.Layers {
		blocks[i] = int(b)
	}
	n, nf := int(k.NExpert), len(k.Stats.Fields)
	values := make([][][]float64, len(blocks))
	for l := range values {
		values[l] = make([][]float64, n)
		for e := range values[l] {
			o := (l*n + e) * nf
			values[l][e] = k.Stats.Values[o : o+nf]
		}
	}
	s, err := FromTable(blocks, n, k.Stats.Fields, values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func toU32(ids []int) []uint32 {
	out := make([]uint32, len(ids))
	for i, x := range ids {
		out[i] = uint32(x)
	}
	return out
}

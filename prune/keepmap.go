package prune

import (
	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/strata"
)

// KeepMap is plan as a keep.strp. With the profile s, each layer's kept
// experts are ranked by routed-token count (the order an engine should fill
// its cache in) and the profile's statistics travel in the STAT block; with
// s nil the map has no ranking and no statistics.
func KeepMap(plan *Plan, s *profile.Stats) *strata.Keep {
	k := &strata.Keep{NExpert: uint32(plan.NExpert)}
	for l, b := range plan.Blocks {
		k.Layers = append(k.Layers, uint32(b))
		k.Keep = append(k.Keep, u32(plan.Keep[l]))
	}
	if s != nil {
		for _, r := range Hotness(s, plan.Keep) {
			k.Rank = append(k.Rank, u32(r))
		}
		k.Stats = s.StrataStats()
	}
	return k
}

// PlanFromKeep is the plan a keep map describes.
func PlanFromKeep(k *strata.Keep) *Plan {
	p := &Plan{NExpert: int(k.NExpert)}
	for l, b := range k.Layers {
		p.Blocks = append(p.Blocks, int(b))
		ids := make([]int, len(k.Keep[l]))
		for i, e := range k.Keep[l] {
			ids[i] = int(e)
		}
		p.Keep = append(p.Keep, ids)
	}
	return p
}

// PlanFromProfile keeps the k best experts of every layer under c.
func PlanFromProfile(s *profile.Stats, c Criterion, k int) (*Plan, error) {
	keep, err := Select(s, c, k)
	if err != nil {
		return nil, err
	}
	return &Plan{Blocks: append([]int(nil), s.Blocks...), NExpert: s.NExpert, Keep: keep}, nil
}

func u32(ids []int) []uint32 {
	out := make([]uint32, len(ids))
	for i, x := range ids {
		out[i] = uint32(x)
	}
	return out
}

package prune

import (
	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/strata"
)

// Choose keeps the k best experts of every layer of the profile s under c.
// The keep map ranks each layer's kept experts by routed-token count (the
// order an engine should fill its cache in) and carries the profile's
// statistics in its STAT block.
func Choose(s *profile.Stats, c Criterion, k int) (*strata.Keep, error) {
	return ChooseGroups(s, c, k, 0)
}

// ChooseGroups is Choose for a model that routes by groups of consecutive
// experts (strata.ExpertGroups; groups <= 1: no groups): it keeps the
// k/groups best of every group, so that the keep is group-balanced.
func ChooseGroups(s *profile.Stats, c Criterion, k, groups int) (*strata.Keep, error) {
	keep, err := SelectGroups(s, c, k, groups)
	if err != nil {
		return nil, err
	}
	km := &strata.Keep{NExpert: uint32(s.NExpert), Stats: s.StrataStats()}
	for l, b := range s.Blocks {
		km.Layers = append(km.Layers, uint32(b))
		km.Keep = append(km.Keep, u32(keep[l]))
	}
	for _, r := range Hotness(s, keep) {
		km.Rank = append(km.Rank, u32(r))
	}
	return km, nil
}

func u32(ids []int) []uint32 {
	out := make([]uint32, len(ids))
	for i, x := range ids {
		out[i] = uint32(x)
	}
	return out
}

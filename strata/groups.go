package strata

import (
	"fmt"

	"github.com/stratactl/stratactl/gguf"
)

// Grouped routing (DeepSeek-V3's layout): {arch}.expert_group_count G
// splits each layer's experts into G groups of consecutive ids, and a token
// first picks {arch}.expert_group_used_count groups (by the sum of each
// group's two best expert scores), then its experts among those groups.
// Pruning keeps that routing only when every group keeps the same number of
// experts: kept ids are in ascending order, so group g of the pruned layer
// is again consecutive, and the group keys stay as they are.

// ExpertGroups returns model's expert_group_count and
// expert_group_used_count (0, 0 when it does not route by groups).
func ExpertGroups(f *gguf.File) (groups, used int) {
	g, err := f.Uint32(f.ArchKey("expert_group_count"))
	if err != nil || g <= 1 {
		return 0, 0
	}
	u, _ := f.Uint32(f.ArchKey("expert_group_used_count"))
	return int(g), int(u)
}

// FitsGroups refuses a keep map that would break the grouped routing of
// model f (moe its MoE): each layer must keep the same number of experts
// from every group, at least two (the group score), and enough for a
// token's experts within the groups it picks.
func (k *Keep) FitsGroups(f *gguf.File, moe *gguf.MoE) error {
	g, used := ExpertGroups(f)
	if g == 0 {
		return nil
	}
	gk, uk := f.ArchKey("expert_group_count"), f.ArchKey("expert_group_used_count")
	if moe.Experts%g != 0 {
		return fmt.Errorf("%s: %s = %d does not divide the %d experts per layer", f.Path, gk, g, moe.Experts)
	}
	per := moe.Experts / g
	n := k.NKeep()
	if n%g != 0 {
		return fmt.Errorf("%s routes by %d groups of %d experts (%s): keeping %d per layer cannot keep the same number from each group; keep a multiple of %d",
			f.Path, g, per, gk, n, g)
	}
	kg := n / g
	if kg < 2 {
		return fmt.Errorf("%s routes by %d groups (%s): keeping %d per layer leaves %d per group, and a group's score is the sum of its two best experts; keep at least %d",
			f.Path, g, gk, n, kg, 2*g)
	}
	if used > 0 && moe.ExpertsUsed > used*kg {
		return fmt.Errorf("%s: a token picks %d groups (%s) and %d experts among them: %d per group kept leaves only %d to pick from",
			f.Path, used, uk, moe.ExpertsUsed, kg, used*kg)
	}
	for l, ids := range k.Keep {
		count := make([]int, g)
		for _, e := range ids {
			count[int(e)/per]++
		}
		for grp, c := range count {
			if c != kg {
				return fmt.Errorf("%s routes by %d groups of %d experts (%s): the keep map keeps %d of group %d (experts %d-%d) in block %d, want %d from every group (group-balanced)",
					f.Path, g, per, gk, c, grp, grp*per, (grp+1)*per-1, k.Layers[l], kg)
			}
		}
	}
	return nil
}

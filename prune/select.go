// Package prune removes experts from a Mixture-of-Experts GGUF: it chooses,
// per MoE layer, the experts to keep from a profile (package profile) and
// writes an ordinary GGUF holding only those, plus the keep map
// (keep.strp) that records which source experts survived.
package prune

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/strata"
)

// Criterion is how experts are scored; the highest scores are kept.
type Criterion string

const (
	// REAP keeps the experts with the largest mean gate-weighted output norm
	// over the tokens routed to them (Lasby et al., "REAP the Experts").
	REAP Criterion = "reap"
	// Frequency keeps the experts that the most tokens are routed to.
	Frequency Criterion = "frequency"
	// EAN keeps the experts with the largest total gate-weighted output norm
	// (frequency and size of contribution together).
	EAN Criterion = "ean"
)

// Criteria lists the accepted criteria.
var Criteria = []Criterion{REAP, Frequency, EAN}

// ParseCriterion accepts a criterion by name ("freq" and "count" mean
// frequency).
func ParseCriterion(s string) (Criterion, error) {
	switch strings.ToLower(s) {
	case "reap":
		return REAP, nil
	case "frequency", "freq", "count":
		return Frequency, nil
	case "ean":
		return EAN, nil
	}
	return "", fmt.Errorf("unknown pruning criterion %q (want reap, frequency or ean)", s)
}

// Field is the profile statistic that c ranks by.
func (c Criterion) Field() string {
	switch c {
	case Frequency:
		return profile.FieldCount
	case EAN:
		return profile.FieldEAN
	}
	return profile.FieldREAP
}

// Order is layer l's experts best first under c; equal scores go to the
// lower id, so the order is a pure function of the statistics.
func Order(s *profile.Stats, c Criterion, l int) []int {
	ids, err := s.Order(c.Field(), l)
	if err != nil {
		panic(err) // Field only names fields that exist
	}
	return ids
}

// Select keeps the k best experts of every layer; each layer's kept ids come
// back ascending (the keep map's order).
func Select(s *profile.Stats, c Criterion, k int) ([][]int, error) {
	if k < 1 || k > s.NExpert {
		return nil, fmt.Errorf("keep %d experts of %d: want 1..%d", k, s.NExpert, s.NExpert)
	}
	keep := make([][]int, len(s.Blocks))
	for l := range keep {
		kept := append([]int(nil), Order(s, c, l)[:k]...)
		sort.Ints(kept)
		keep[l] = kept
	}
	return keep, nil
}

// SelectGroups is Select keeping the k/groups best of every group of
// consecutive experts (groups <= 1: Select); k must be a multiple of groups.
func SelectGroups(s *profile.Stats, c Criterion, k, groups int) ([][]int, error) {
	if groups <= 1 {
		return Select(s, c, k)
	}
	if k < 1 || k > s.NExpert {
		return nil, fmt.Errorf("keep %d experts of %d: want 1..%d", k, s.NExpert, s.NExpert)
	}
	if s.NExpert%groups != 0 || k%groups != 0 {
		return nil, fmt.Errorf("keep %d experts of %d in %d groups: want the same number from every group (a multiple of %d)", k, s.NExpert, groups, groups)
	}
	per, kg := s.NExpert/groups, k/groups
	keep := make([][]int, len(s.Blocks))
	for l := range keep {
		taken := make([]int, groups)
		var kept []int
		for _, e := range Order(s, c, l) {
			if g := e / per; taken[g] < kg {
				taken[g]++
				kept = append(kept, e)
			}
		}
		sort.Ints(kept)
		keep[l] = kept
	}
	return keep, nil
}

// Hotness ranks the kept experts of each layer (positions 0..k-1 into
// keep[l]) by routed-token count, hottest first, ties to the lower position:
// the order in which an engine should fill its expert cache.
func Hotness(s *profile.Stats, keep [][]int) [][]int {
	rank := make([][]int, len(keep))
	for l, kept := range keep {
		r := make([]int, len(kept))
		for i := range r {
			r[i] = i
		}
		sort.SliceStable(r, func(a, b int) bool {
			ca, cb := s.Count[l][kept[r[a]]], s.Count[l][kept[r[b]]]
			if ca != cb {
				return ca > cb
			}
			return r[a] < r[b]
		})
		rank[l] = r
	}
	return rank
}

// Retained is the share of a profile's routing that a plan's kept experts
// hold in one layer: of the routed (token, expert) slots, of the gate
// weight, and of EAN. The rest is re-routed once the experts are gone.
type Retained struct {
	Block   int     `json:"block"`
	Count   float64 `json:"count"`
	GateSum float64 `json:"gate_sum"`
	EAN     float64 `json:"ean"`
}

// Retention measures the keep map k against the profile s (which may come
// from other text than the profile k was chosen by).
func Retention(s *profile.Stats, k *strata.Keep) ([]Retained, error) {
	if s.NExpert != int(k.NExpert) || !slices.Equal(s.Blocks, k.Blocks()) {
		return nil, fmt.Errorf("the profile is of MoE layers %v with %d experts, the keep map of %v with %d", s.Blocks, s.NExpert, k.Layers, k.NExpert)
	}
	share := func(v []float64, kept []uint32) float64 {
		var all, in float64
		for _, x := range v {
			all += x
		}
		for _, e := range kept {
			in += v[e]
		}
		if all == 0 {
			return 0
		}
		return in / all
	}
	out := make([]Retained, len(k.Layers))
	for l, kept := range k.Keep {
		counts := make([]float64, s.NExpert)
		for e, c := range s.Count[l] {
			counts[e] = float64(c)
		}
		out[l] = Retained{Block: int(k.Layers[l]), Count: share(counts, kept), GateSum: share(s.GateSum[l], kept), EAN: share(s.EAN[l], kept)}
	}
	return out, nil
}

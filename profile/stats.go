// Package profile measures how a Mixture-of-Experts model uses its experts on
// calibration text: per MoE layer and expert, how many tokens are routed to
// it, the sum of its renormalised gate weights, and the REAP and EAN
// saliencies that weigh each routed token by the size of the expert's
// contribution (gate weight × L2 norm of the expert's output). Package prune
// ranks experts by these figures.
package profile

import (
	"fmt"
	"math"
	"sort"
)

// Field names of the statistics as stored in a keep.strp STAT block.
const (
	FieldCount   = "count"
	FieldGateSum = "gate_sum"
	FieldREAP    = "reap"
	FieldEAN     = "ean"
)

// Fields is the order in which Stats are written to a STAT block.
var Fields = []string{FieldCount, FieldGateSum, FieldREAP, FieldEAN}

// Stats are the routing statistics of one model over a calibration set.
// Sums are float64 and accumulated in token order, so a profile is the same
// at any thread count.
type Stats struct {
	Blocks  []int // block index N of each MoE layer, ascending
	NExpert int
	Tokens  int64 // tokens that went through every MoE layer

	Count   [][]int64   // [layer][expert] tokens whose top-k holds the expert
	GateSum [][]float64 // [layer][expert] sum of its renormalised gate weights
	EAN     [][]float64 // [layer][expert] sum of gate weight × ||expert output||₂
}

// NewStats returns zeroed statistics for the given MoE layers.
func NewStats(blocks []int, nExpert int) *Stats {
	s := &Stats{Blocks: append([]int(nil), blocks...), NExpert: nExpert}
	n := len(blocks)
	s.Count = make([][]int64, n)
	s.GateSum = make([][]float64, n)
	s.EAN = make([][]float64, n)
	for l := range n {
		s.Count[l] = make([]int64, nExpert)
		s.GateSum[l] = make([]float64, nExpert)
		s.EAN[l] = make([]float64, nExpert)
	}
	return s
}

// REAP is the mean over the tokens routed to the expert of gate weight ×
// output norm (REAP, "Router-weighted Expert Activation Pruning"); 0 for an
// expert that no token reached.
func (s *Stats) REAP(layer, expert int) float64 {
	if s.Count[layer][expert] == 0 {
		return 0
	}
	return s.EAN[layer][expert] / float64(s.Count[layer][expert])
}

// Value is the named field of one expert, as stored in a STAT block.
func (s *Stats) Value(field string, layer, expert int) (float64, error) {
	switch field {
	case FieldCount:
		return float64(s.Count[layer][expert]), nil
	case FieldGateSum:
		return s.GateSum[layer][expert], nil
	case FieldREAP:
		return s.REAP(layer, expert), nil
	case FieldEAN:
		return s.EAN[layer][expert], nil
	}
	return 0, fmt.Errorf("unknown statistic %q (have %v)", field, Fields)
}

// Table is the statistics as [layer][expert][field] in the order of Fields,
// the layout of a STAT block.
func (s *Stats) Table() [][][]float64 {
	t := make([][][]float64, len(s.Blocks))
	for l := range t {
		t[l] = make([][]float64, s.NExpert)
		for e := range t[l] {
			t[l][e] = []float64{float64(s.Count[l][e]), s.GateSum[l][e], s.REAP(l, e), s.EAN[l][e]}
		}
	}
	return t
}

// FromTable rebuilds Stats from a STAT block's field names and values
// ([layer][expert][field]). count, gate_sum and ean are required; reap is
// derived from them and, when present, must agree.
func FromTable(blocks []int, nExpert int, fields []string, values [][][]float64) (*Stats, error) {
	idx := map[string]int{}
	for i, f := range fields {
		idx[f] = i
	}
	for _, need := range []string{FieldCount, FieldGateSum, FieldEAN} {
		if _, ok := idx[need]; !ok {
			return nil, fmt.Errorf("statistics lack field %q (have %v)", need, fields)
		}
	}
	if len(values) != len(blocks) {
		return nil, fmt.Errorf("statistics for %d layers, want %d", len(values), len(blocks))
	}
	s := NewStats(blocks, nExpert)
	for l := range values {
		if len(values[l]) != nExpert {
			return nil, fmt.Errorf("layer %d: statistics for %d experts, want %d", blocks[l], len(values[l]), nExpert)
		}
		for e, v := range values[l] {
			if len(v) != len(fields) {
				return nil, fmt.Errorf("layer %d expert %d: %d values, want %d", blocks[l], e, len(v), len(fields))
			}
			c := v[idx[FieldCount]]
			if c < 0 || c != math.Trunc(c) || c > 1<<53 {
				return nil, fmt.Errorf("layer %d expert %d: count %v is not a whole number of tokens", blocks[l], e, c)
			}
			for i, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("layer %d expert %d: %s is %v", blocks[l], e, fields[i], x)
				}
			}
			s.Count[l][e] = int64(c)
			s.GateSum[l][e] = v[idx[FieldGateSum]]
			s.EAN[l][e] = v[idx[FieldEAN]]
			if i, ok := idx[FieldREAP]; ok {
				if r := s.REAP(l, e); math.Abs(r-v[i]) > 1e-9*math.Max(1, math.Abs(r)) {
					return nil, fmt.Errorf("layer %d expert %d: reap %v disagrees with ean/count = %v", blocks[l], e, v[i], r)
				}
			}
		}
	}
	return s, nil
}

// Add merges o (over the same layers) into s, so partial profiles of
// disjoint windows can be combined in a fixed order.
func (s *Stats) Add(o *Stats) error {
	if len(o.Blocks) != len(s.Blocks) || o.NExpert != s.NExpert {
		return fmt.Errorf("profiles of %d layers × %d experts and %d × %d do not combine", len(s.Blocks), s.NExpert, len(o.Blocks), o.NExpert)
	}
	s.Tokens += o.Tokens
	for l := range s.Count {
		for e := range s.Count[l] {
			s.Count[l][e] += o.Count[l][e]
			s.GateSum[l][e] += o.GateSum[l][e]
			s.EAN[l][e] += o.EAN[l][e]
		}
	}
	return nil
}

// Observe records one token's routing in MoE layer l (an index into Blocks):
// the selected experts, their renormalised gate weights, and each selected
// expert's output vector before it is multiplied by its gate weight.
func (s *Stats) Observe(l int, experts []int32, gates []float32, outputs [][]float32) error {
	if len(gates) != len(experts) || len(outputs) != len(experts) {
		return fmt.Errorf("layer %d: %d experts, %d gate weights, %d outputs", s.Blocks[l], len(experts), len(gates), len(outputs))
	}
	for k, e := range experts {
		if e < 0 || int(e) >= s.NExpert {
			return fmt.Errorf("layer %d: expert id %d outside 0..%d", s.Blocks[l], e, s.NExpert-1)
		}
		var ss float64
		for _, x := range outputs[k] {
			ss += float64(x) * float64(x)
		}
		g := float64(gates[k])
		s.Count[l][e]++
		s.GateSum[l][e] += g
		s.EAN[l][e] += g * math.Sqrt(ss)
	}
	return nil
}

// order is the expert ids by score, highest first, ties to the lower
// id, so that the order is a pure function of the statistics.
func (s *Stats) order(score func(e int) float64) []int {
	ids := make([]int, s.NExpert)
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool {
		sa, sb := score(ids[a]), score(ids[b])
		if sa != sb {
			return sa > sb
		}
		return ids[a] < ids[b]
	})
	return ids
}

// Order is layer l's expert ids by the named statistic (a field of Fields),
// best first, ties to the lower id.
func (s *Stats) Order(field string, l int) ([]int, error) {
	if _, err := s.Value(field, l, 0); err != nil {
		return nil, err
	}
	return s.order(func(e int) float64 { v, _ := s.Value(field, l, e); return v }), nil
}

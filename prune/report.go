package prune

// Report is what stratactl prune reports (its --json document): the model
// pruned, how the experts were chosen, the keep map written or applied, the
// kept experts per layer and, given a profile, the share of its routing they
// serve.
type Report struct {
	Model     string     `json:"model"`
	Criterion string     `json:"criterion"`
	KeepMap   string     `json:"keep_map"`
	Keep      [][]uint32 `json:"keep"`
	// Retained: per layer, the share of the profile's routing that the kept
	// experts hold (absent without a profile); RetainedMean its mean over
	// the layers (Block -1).
	Retained     []Retained `json:"retained,omitempty"`
	RetainedMean *Retained  `json:"retained_mean,omitempty"`
	*Result
}

// MeanRetained is the mean of r over its layers (Block -1), or nil for none.
func MeanRetained(r []Retained) *Retained {
	if len(r) == 0 {
		return nil
	}
	m := Retained{Block: -1}
	n := float64(len(r))
	for _, x := range r {
		m.Count += x.Count / n
		m.GateSum += x.GateSum / n
		m.EAN += x.EAN / n
	}
	return &m
}

package profile

// Report is what stratactl profile reports (its --json document): the run
// and, per MoE layer, a summary of the statistics written.
type Report struct {
	Model      string         `json:"model"`
	Mode       string         `json:"mode"` // the engine's arithmetic (engine.Mode): "fast" or "exact"
	Output     string         `json:"output"`
	Source     string         `json:"source"`
	Ctx        int            `json:"ctx"`
	Windows    int            `json:"windows"`
	Tokens     int64          `json:"tokens"`
	NExpert    int            `json:"n_expert"`
	Seconds    float64        `json:"seconds"`
	TokensPerS float64        `json:"tokens_per_s"`
	Layers     []LayerSummary `json:"layers"`
}

// LayerSummary summarises one MoE layer's statistics: the range of routed
// counts and of REAP, the experts never routed to, and the top experts by
// REAP and by count (best first, ties to the lower id).
type LayerSummary struct {
	Block    int     `json:"block"`
	CountMin int64   `json:"count_min"`
	CountMax int64   `json:"count_max"`
	Unused   int     `json:"unused_experts"`
	TopREAP  []int   `json:"top_reap"`
	TopCount []int   `json:"top_count"`
	REAPMin  float64 `json:"reap_min"`
	REAPMax  float64 `json:"reap_max"`
}

// Summary summarises every layer, listing at most top experts in each
// ranking.
func (s *Stats) Summary(top int) []LayerSummary {
	out := make([]LayerSummary, len(s.Blocks))
	n := min(top, s.NExpert)
	for l, b := range s.Blocks {
		pl := LayerSummary{Block: b, CountMin: s.Count[l][0], CountMax: s.Count[l][0], REAPMin: s.REAP(l, 0), REAPMax: s.REAP(l, 0)}
		for e := range s.NExpert {
			c, r := s.Count[l][e], s.REAP(l, e)
			pl.CountMin, pl.CountMax = min(pl.CountMin, c), max(pl.CountMax, c)
			pl.REAPMin, pl.REAPMax = min(pl.REAPMin, r), max(pl.REAPMax, r)
			if c == 0 {
				pl.Unused++
			}
		}
		byREAP, _ := s.Order(FieldREAP, l) // a field that exists
		pl.TopREAP = byREAP[:n]
		pl.TopCount = s.ByCount(l)[:n]
		out[l] = pl
	}
	return out
}

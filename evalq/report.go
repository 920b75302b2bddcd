package evalq

import "github.com/stratactl/stratactl/engine"

// Report is what stratactl eval reports (its --json document): the models,
// the windows, the comparison and, with the candidate run through its
// expert store, the store's figures.
type Report struct {
	Candidate string  `json:"candidate"`
	Reference string  `json:"reference"`
	Mode      string  `json:"mode"` // the candidate's arithmetic (engine.Mode); the reference runs exact
	Source    string  `json:"source"`
	Ctx       int     `json:"ctx"`
	Score     string  `json:"score"`        // the scoring: all or second-half
	FirstPos  int     `json:"first_scored"` // first scored position of each window
	Seconds   float64 `json:"seconds"`
	Result
	// With the candidate through its expert store:
	CacheBonus *float64             `json:"cache_bonus,omitempty"`
	ExactPicks *int                 `json:"exact_picks,omitempty"`
	Stream     *engine.StreamReport `json:"stream,omitempty"`
}

package engine

// RunReport is what stratactl run reports (its --json document): the
// prompt and the tokens generated, the sampling settings, prefill and decode
// speed, and for a pack the expert store's figures of the decode phase.
type RunReport struct {
	Model             string        `json:"model"`
	Kernels           string        `json:"kernels"`
	Threads           int           `json:"threads"`
	Mode              string        `json:"mode"` // "exact" or "fast" (Mode)
	PromptIDs         []int32       `json:"prompt_ids"`
	GeneratedIDs      []int32       `json:"generated_ids"`
	Text              string        `json:"text"`
	StopReason        string        `json:"stop_reason"`
	PromptTokens      int           `json:"prompt_tokens"`
	DecodeSteps       int           `json:"decode_steps"`
	PrefillSeconds    float64       `json:"prefill_seconds"`
	DecodeSeconds     float64       `json:"decode_seconds"`
	PrefillTokensPerS float64       `json:"prefill_tokens_per_s"`
	DecodeTokensPerS  float64       `json:"decode_tokens_per_s"`
	Temp              float64       `json:"temp"`
	TopP              float64       `json:"top_p"`
	Seed              uint64        `json:"seed"`
	LogitsFile        string        `json:"logits_file,omitempty"`
	LogitsRows        int           `json:"logits_rows,omitempty"`
	Vocab             int           `json:"vocab"`
	CacheBonus        *float64      `json:"cache_bonus,omitempty"`
	Stream            *StreamReport `json:"stream,omitempty"`
}

package engine

import (
	"context"
	"fmt"
	"time"
)

// GenerateOptions drive Session.Generate.
type GenerateOptions struct {
	MaxTokens int
	Sampler   *Sampler // nil means greedy
	// Stop ends generation after a token for which it returns true (the
	// token is kept); nil never stops early.
	Stop func(id int32) bool
	// OnToken sees each generated token as soon as it is sampled.
	OnToken func(id int32) error
	// OnLogits, when set, sees the logits of every prompt position, then of
	// every decode step, in order (rows of Vocab, valid during the call).
	OnLogits func(row []float32) error
	// AfterPrefill runs between the prompt and the first decode step.
	AfterPrefill func()
}

// GenerateResult is what one Generate call did and how long it took.
type GenerateResult struct {
	PromptIDs    []int32
	GeneratedIDs []int32
	// PrefillSeconds covers the prompt's forward pass; DecodeSeconds the
	// DecodeSteps single-token passes that followed (sampling included).
	PrefillSeconds float64
	DecodeSeconds  float64
	DecodeSteps    int
	StopReason     string // "length", "stop" or "context"
}

// PrefillTokensPerSecond is prompt tokens over prefill time.
func (r *GenerateResult) PrefillTokensPerSecond() float64 {
	if r.PrefillSeconds <= 0 {
		return 0
	}
	return float64(len(r.PromptIDs)) / r.PrefillSeconds
}

// DecodeTokensPerSecond is decode steps over decode time.
func (r *GenerateResult) DecodeTokensPerSecond() float64 {
	if r.DecodeSeconds <= 0 {
		return 0
	}
	return float64(r.DecodeSteps) / r.DecodeSeconds
}

// Generate runs prompt then samples up to MaxTokens tokens. The first token
// comes from the prompt's last logits; each later one costs one decode step.
func (s *Session) Generate(ctx context.Context, prompt []int32, opt GenerateOptions) (*GenerateResult, error) {
	c := &s.m.Config
	if len(prompt) == 0 {
		return nil, fmt.Errorf("empty prompt")
	}
	sampler := opt.Sampler
	if sampler == nil {
		sampler = NewSampler(0, 1, 0)
	}
	res := &GenerateResult{PromptIDs: prompt, StopReason: "length"}
	s.Reserve(len(prompt) + opt.MaxTokens)
	t0 := time.Now()
	logits, err := s.Forward(prompt, opt.OnLogits != nil)
	if err != nil {
		return nil, err
	}
	res.PrefillSeconds = time.Since(t0).Seconds()
	if opt.OnLogits != nil {
		for r := 0; r < len(prompt); r++ {
			if err := opt.OnLogits(logits[r*c.Vocab : (r+1)*c.Vocab]); err != nil {
				return nil, err
			}
		}
		logits = logits[(len(prompt)-1)*c.Vocab:]
	}
	if opt.AfterPrefill != nil {
		opt.AfterPrefill()
	}
	t1 := time.Now()
	for len(res.GeneratedIDs) < opt.MaxTokens {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(res.GeneratedIDs) > 0 {
			if s.Pos >= c.Context {
				res.StopReason = "context"
				break
			}
			if logits, err = s.Step(res.GeneratedIDs[len(res.GeneratedIDs)-1]); err != nil {
				return nil, err
			}
			res.DecodeSteps++
			if opt.OnLogits != nil {
				if err := opt.OnLogits(logits); err != nil {
					return nil, err
				}
			}
		}
		ts := time.Now()
		id := sampler.sample(logits, s.m.Pool)
		if s.Timing != nil && len(res.GeneratedIDs) > 0 {
			s.Timing.add(PhaseSample, time.Since(ts))
		}
		res.GeneratedIDs = append(res.GeneratedIDs, id)
		if opt.OnToken != nil {
			if err := opt.OnToken(id); err != nil {
				return nil, err
			}
		}
		if opt.Stop != nil && opt.Stop(id) {
			res.StopReason = "stop"
			break
		}
	}
	res.DecodeSeconds = time.Since(t1).Seconds()
	return res, nil
}

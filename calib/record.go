package calib

import (
	"github.com/stratactl/stratactl/optq"
	"github.com/stratactl/stratactl/strata"
)

// RecordOptions writes the quantizer's options into the manifest's
// calibration record (docs/FORMATS.md, "manifest.json").
func RecordOptions(c *strata.Calibration, opt optq.Options) {
	c.Damp, c.RefineDamp, c.Refine, c.Candidates = opt.Damp, opt.RefineDamp, opt.Refine, opt.Candidates
	c.SwiGLU, c.SwiGLUDamp, c.Expert = opt.SwiGLU, opt.SwiGLUDamp, opt.Expert
	c.ExpertPasses, c.ExpertGate, c.WarmDown = opt.ExpertPasses, opt.ExpertGate, opt.WarmDown
	c.ExpertTokens, c.GridTokens, c.PlainTokens = opt.ExpertTokens, opt.GridTokens, opt.PlainTokens
}

// RecordResults writes what q did into the calibration record once its
// experts are quantized: the fallbacks by reason and the experts that
// skipped the expert-output refinement for too few tokens.
func RecordResults(c *strata.Calibration, q *Quantizer) {
	c.Fallbacks, _ = q.Fallbacks()
	c.ExpertSkipped = q.ExpertRefineSkipped()
}

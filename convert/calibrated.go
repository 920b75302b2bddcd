package convert

import (
	"context"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// ExpertQuantizer encodes expert matrices itself, from calibration inputs
// (package calib's Quantizer). The pipelines still decode the source and
// the result to measure the weight error.
type ExpertQuantizer interface {
	// Handles reports whether the tensor's experts are encoded here.
	Handles(tensor string) bool
	// Rows returns the encoding of rows [row0, row0+n) of expert e's
	// matrix of tensor t.
	Rows(ctx context.Context, t *gguf.TensorInfo, e int, row0, n int64) ([]byte, error)
	// OutputError is the calibration output error ‖(W−Ŵ)X‖/‖WX‖ of the
	// tensor over its experts on held-back tokens, and whether any were.
	OutputError(tensor string) (float64, bool)
}

// CalibInfo describes the calibration input, for the output's metadata
// and report.
type CalibInfo = strata.Calibration

// calibKeySource marks a GGUF whose experts were quantized against
// calibration inputs.
const calibKeySource = "stratactl.quantize.calib.source"

// calibKeys records the calibration in GGUF metadata.
func calibKeys(kv []gguf.KV, c *CalibInfo) []gguf.KV {
	kv = setKV(kv, calibKeySource, gguf.String(c.Source))
	kv = setKV(kv, "stratactl.quantize.calib.sha256", gguf.String(c.SHA256))
	kv = setKV(kv, "stratactl.quantize.calib.ctx", gguf.Uint32(uint32(c.Ctx)))
	kv = setKV(kv, "stratactl.quantize.calib.tokens", gguf.Uint64(uint64(c.Tokens)))
	kv = setKV(kv, "stratactl.quantize.calib.held_tokens", gguf.Uint64(uint64(c.HeldTokens)))
	kv = setKV(kv, "stratactl.quantize.calib.damp", gguf.Float32(float32(c.Damp)))
	if c.SelfWindows > 0 {
		kv = setKV(kv, "stratactl.quantize.calib.self_windows", gguf.Uint32(uint32(c.SelfWindows)))
		kv = setKV(kv, "stratactl.quantize.calib.self_seed", gguf.Uint64(c.SelfSeed))
		kv = setKV(kv, "stratactl.quantize.calib.self_sha256", gguf.String(c.SelfSHA256))
	}
	return kv
}

// calibratedSpan gets rows of an expert matrix from eq and measures their
// weight error against the decoded source src.
func calibratedSpan(ctx context.Context, eq ExpertQuantizer, t *gguf.TensorInfo, to quant.Type, src []byte, n int, s *scratch, expert int, row0, rows int64, where span) ([]byte, errStats, error) {
	x, y := s.floats(n)
	if err := dequantize(t.Type, src, x); err != nil {
		return nil, errStats{}, err
	}
	if i := firstNonFinite(x); i >= 0 {
		ti, _ := quant.Info(t.Type)
		return nil, errStats{}, &NonFiniteError{File: where.file, Tensor: where.tensor, Expert: where.expert, Element: where.firstElem + int64(i),
			Offset: where.fileOff + int64(i/ti.BlockElements*ti.BlockBytes), Value: x[i]}
	}
	dst, err := eq.Rows(ctx, t, expert, row0, rows)
	if err != nil {
		return nil, errStats{}, err
	}
	if err := dequantize(to, dst, y); err != nil {
		return nil, errStats{}, err
	}
	return dst, measure(x, y), nil
}

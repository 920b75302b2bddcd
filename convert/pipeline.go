// Package convert turns GGUF models into other GGUF models (quantize) and
// into strata packs (pack), checks packs against their source (verify) and
// makes synthetic models of any shape (synth). Every pipeline streams: data
// is read with pread a bounded window at a time, converted on all cores and
// written in a fixed order, so memory does not grow with the model and the
// output bytes do not depend on the number of workers.
package convert

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/stratactl/stratactl/quant"
	"golang.org/x/sync/errgroup"
)

// Progress receives the number of source bytes done; cli.Progress fits.
type Progress interface {
	Add(n int64)
	Done()
}

// ProgressFunc starts a progress display for total bytes; nil shows none.
type ProgressFunc func(total int64, desc string) Progress

type noProgress struct{}

func (noProgress) Add(int64) {}
func (noProgress) Done()     {}

func (pf ProgressFunc) start(total int64, desc string) Progress {
	if pf == nil {
		return noProgress{}
	}
	return pf(total, desc)
}

func jobsOr(j int) int {
	if j <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return j
}

// ordered calls work(i) for every i in [0, n) on up to jobs goroutines and
// emit(i, result) in index order from a single goroutine. At most 2×jobs
// results exist at once, so memory is bounded by the window, not by n. The
// first error (or ctx's cancellation) stops everything.
func ordered[R any](ctx context.Context, n, jobs int, work func(ctx context.Context, i int) (R, error), emit func(i int, r R) error) error {
	jobs = jobsOr(jobs)
	g, ctx := errgroup.WithContext(ctx)
	win := make(chan struct{}, 2*jobs)
	results := make([]chan R, n)
	for i := range results {
		results[i] = make(chan R, 1)
	}
	g.Go(func() error {
		for i := 0; i < n; i++ {
			select {
			case r := <-results[i]:
				if err := emit(i, r); err != nil {
					return err
				}
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			<-win
		}
		return nil
	})
	sem := make(chan struct{}, jobs)
launch:
	for i := 0; i < n; i++ {
		select {
		case win <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		g.Go(func() error {
			defer func() { <-sem }()
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			r, err := work(ctx, i)
			if err != nil {
				return err
			}
			results[i] <- r
			return nil
		})
	}
	return g.Wait()
}

// interrupted rewords a cancellation so that the user learns what happened
// and that no output was left behind.
func interrupted(err error, what string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s interrupted (%v); partial output removed", what, err)
	}
	return err
}

// NonFiniteError reports a weight that is NaN or infinite in a source
// tensor: conversion refuses such data rather than hide it.
type NonFiniteError struct {
	File    string
	Tensor  string
	Expert  int   // -1 for a tensor that is not per-expert
	Element int64 // index inside the tensor
	Offset  int64 // file offset of the block holding it
	Value   float32
}

func (e *NonFiniteError) Error() string {
	where := ""
	if e.Expert >= 0 {
		where = fmt.Sprintf(" (expert %d)", e.Expert)
	}
	return fmt.Sprintf("%s: byte %d: tensor %q: element %d%s is %v: refusing to convert non-finite weights", e.File, e.Offset, e.Tensor, e.Element, where, e.Value)
}

// scratch is one worker's float buffers, reused across units.
type scratch struct{ x, y, z []float32 }

// extra is a third buffer, for a decode that must not disturb x and y.
func (s *scratch) extra(n int) []float32 {
	if cap(s.z) < n {
		s.z = make([]float32, n)
	}
	return s.z[:n]
}

func (s *scratch) floats(n int) (x, y []float32) {
	if cap(s.x) < n {
		s.x = make([]float32, n)
		s.y = make([]float32, n)
	}
	return s.x[:n], s.y[:n]
}

// errStats accumulates squared error and energy in float64.
type errStats struct {
	Err, Energy float64
	N           int64
}

func (a *errStats) add(b errStats) {
	a.Err += b.Err
	a.Energy += b.Energy
	a.N += b.N
}

// RelMSE is the error relative to the signal: sum (x-y)^2 / sum x^2, 0
// when the signal is 0.
func (a errStats) RelMSE() float64 {
	if a.Energy == 0 {
		if a.Err == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return a.Err / a.Energy
}

// span is a run of elements to convert, for error reports.
type span struct {
	// ctx, when set, is checked between chunks of the encoding, so that a
	// slow search (many Q2_0 candidates) notices cancellation promptly.
	ctx          context.Context
	file, tensor string
	expert       int
	firstElem    int64 // index of src's first element inside the tensor
	fileOff      int64 // file offset of src's first byte
}

// convertSpan decodes src (type from) into float32, refuses non-finite
// values, encodes to type to into dst, decodes dst again and measures the
// error. It is the one place where weights change type.
func convertSpan(from, to quant.Type, src, dst []byte, n int, s *scratch, opt *quant.QuantizeOptions, where span) (errStats, error) {
	x, y := s.floats(n)
	if err := dequantize(from, src, x); err != nil {
		return errStats{}, fmt.Errorf("%s: tensor %q: %w", where.file, where.tensor, err)
	}
	if i := firstNonFinite(x); i >= 0 {
		ti, _ := quant.Info(from)
		return errStats{}, &NonFiniteError{File: where.file, Tensor: where.tensor, Expert: where.expert, Element: where.firstElem + int64(i),
			Offset: where.fileOff + int64(i/ti.BlockElements*ti.BlockBytes), Value: x[i]}
	}
	if err := quantizeChunks(where.ctx, to, x, dst, opt); err != nil {
		if where.ctx != nil && where.ctx.Err() != nil {
			return errStats{}, err
		}
		return errStats{}, fmt.Errorf("%s: tensor %q: %w", where.file, where.tensor, err)
	}
	if err := dequantize(to, dst, y); err != nil {
		return errStats{}, fmt.Errorf("%s: tensor %q: %w", where.file, where.tensor, err)
	}
	return measure(x, y), nil
}

// chunkWork bounds the work between two checks of the context: about this
// many candidate evaluations (elements × candidates per sign).
const chunkWork = 1 << 20

// quantizeChunks encodes x into dst in chunks of whole blocks (whole rows
// where importance weights the columns) and stops between chunks once ctx
// is done. The encodings are blockwise, so the bytes do not depend on the
// chunking.
func quantizeChunks(ctx context.Context, to quant.Type, x []float32, dst []byte, opt *quant.QuantizeOptions) error {
	ti, ok := quant.Info(to)
	if ctx == nil || !ok || ti.BlockElements <= 0 || len(x)%ti.BlockElements != 0 {
		return quantize(to, x, dst, opt)
	}
	cands := quant.DefaultQ2Candidates
	if opt != nil && opt.Q2Candidates > 0 {
		cands = opt.Q2Candidates
	}
	unit := ti.BlockElements
	if opt != nil && opt.Importance != nil {
		if opt.RowLen <= 0 || opt.RowLen%ti.BlockElements != 0 {
			return quantize(to, x, dst, opt)
		}
		unit = opt.RowLen
	}
	step := max(unit, chunkWork/max(cands, 1)/unit*unit)
	for a := 0; a < len(x); a += step {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		b := min(len(x), a+step)
		ba, bb := a/ti.BlockElements*ti.BlockBytes, b/ti.BlockElements*ti.BlockBytes
		if err := quantize(to, x[a:b], dst[ba:bb], opt); err != nil {
			return err
		}
	}
	return nil
}

func measure(x, y []float32) errStats {
	var st errStats
	for i, v := range x {
		d := float64(v) - float64(y[i])
		st.Err += d * d
		st.Energy += float64(v) * float64(v)
	}
	st.N = int64(len(x))
	return st
}

func firstNonFinite(x []float32) int {
	for i, v := range x {
		if b := math.Float32bits(v) & 0x7f800000; b == 0x7f800000 {
			return i
		}
	}
	return -1
}

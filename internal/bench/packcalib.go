package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/stratactl/stratactl/calib"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/optq"
)

// PackCalibration is bench pack's synthetic calibration: windows of
// uniformly random token ids (window i from its own generator seeded with
// seed+i) run through the model being packed, every Hold-th held back, and
// its experts quantized by optq at its defaults.
type PackCalibration struct {
	Windows, Ctx int
	Seed         uint64
	Threads      int // the calibration run's matmul threads (0: all cores)
	Dir          string
}

// Source names the calibration input in the report and manifest.
func (p PackCalibration) Source() string {
	return fmt.Sprintf("random token ids: %d windows of %d, seed %d", p.Windows, p.Ctx, p.Seed)
}

// RandomWindows are p's token windows for a vocabulary of vocab ids.
func (p PackCalibration) RandomWindows(vocab int) [][]int32 {
	out := make([][]int32, p.Windows)
	for i := range out {
		r := rand.New(rand.NewPCG(p.Seed+uint64(i), 0x63616c6962))
		w := make([]int32, p.Ctx)
		for j := range w {
			w[j] = int32(r.IntN(vocab))
		}
		out[i] = w
	}
	return out
}

// Calibrate is a convert.BenchCalibrate: it opens the model at path, runs
// the windows through it and returns the quantizer of its experts.
func (p PackCalibration) Calibrate(ctx context.Context, path string) (eq convert.ExpertQuantizer, info *convert.CalibInfo, times convert.BenchCollectTimes, done func(), err error) {
	if p.Windows < 1 || p.Ctx < 2 {
		return nil, nil, times, nil, fmt.Errorf("synthetic calibration of %d windows of %d tokens: need >= 1 window of >= 2", p.Windows, p.Ctx)
	}
	m, err := engine.Open(path, engine.Options{Threads: p.Threads})
	if err != nil {
		return nil, nil, times, nil, err
	}
	if p.Ctx > m.Config.Context {
		m.Close()
		return nil, nil, times, nil, fmt.Errorf("synthetic calibration: windows of %d tokens exceed the context length %d of %s", p.Ctx, m.Config.Context, path)
	}
	opt := optq.Defaults()
	set, q, err := calib.Prepare(ctx, m, p.RandomWindows(m.Config.Vocab), calib.Options{Dir: p.Dir}, opt)
	if err != nil {
		m.Close()
		return nil, nil, times, nil, err
	}
	info = &convert.CalibInfo{Source: p.Source(), Ctx: p.Ctx, Windows: set.Windows, Tokens: set.Tokens, HeldTokens: set.HeldTokens,
		Seconds: set.Times.Seconds}
	calib.RecordOptions(info, opt)
	times = convert.BenchCollectTimes{Seconds: set.Times.Seconds, CPUSeconds: set.Times.CPUSeconds, Detail: &set.Times}
	done = func() {
		calib.RecordResults(info, q)
		q.Close()
		set.Close()
		m.Close()
	}
	return q, info, times, done, nil
}

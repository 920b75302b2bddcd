// Package bench is the machinery of stratactl's benchmarks: the timing
// harness (thread CPU clock, median of repeated calls), and the quant and
// q2rules measurements with their reports. Each figure it reports is
// measured in the run that reports it.
package bench

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/stratactl/stratactl/internal/cli"
)

// ProgressFunc starts a progress bar of total steps (cli.Env.NewProgress
// with its unit).
type ProgressFunc func(total int64, desc string) *cli.Progress

// Calls summarizes the calls of one measurement.
type Calls struct {
	Wall, Best time.Duration // median and fastest wall-clock call
	CPU        time.Duration // median thread CPU time per call (0 if unknown)
	N          int
}

// PerCore is the median CPU time per call, or the wall time without a CPU
// clock.
func (c Calls) PerCore() time.Duration {
	if c.CPU > 0 {
		return c.CPU
	}
	return c.Wall
}

// OnLockedThread runs f on a new goroutine locked to its OS thread, so that
// the thread CPU clock inside f measures f alone, and returns f's error.
func OnLockedThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- f()
	}()
	return <-errc
}

// TimeCalls runs f once to warm up, then repeatedly for about seconds (at
// least 3 calls), stopping early with ctx's error when ctx is cancelled.
// The caller should run it on a goroutine locked to its OS thread
// (OnLockedThread), so that the thread CPU clock measures f alone.
func TimeCalls(ctx context.Context, seconds float64, f func() error) (Calls, error) {
	if err := f(); err != nil {
		return Calls{}, err
	}
	var walls, cpus []time.Duration
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for len(walls) < 3 || time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return Calls{}, err
		}
		c0, cok := ThreadCPU()
		t0 := time.Now()
		if err := f(); err != nil {
			return Calls{}, err
		}
		walls = append(walls, time.Since(t0))
		if c1, ok := ThreadCPU(); ok && cok && c1 > c0 {
			cpus = append(cpus, c1-c0)
		}
	}
	slices.Sort(walls)
	ct := Calls{Wall: walls[len(walls)/2], Best: walls[0], N: len(walls)}
	if len(cpus) == len(walls) {
		slices.Sort(cpus)
		ct.CPU = cpus[len(cpus)/2]
	}
	return ct, nil
}

// LoadAverage is the system's 1, 5 and 15 minute load averages, or "" where
// the system does not say.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

package main

import (
	"fmt"
	"runtime/pprof"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/gguf"
)

// cpuProfile is a CPU profile being written for the benchmark that runs
// (bench --cpuprofile FILE): started before the benchmark, committed (fsync,
// rename) when it succeeded, removed when it failed, so that a failed run
// leaves no partial profile behind.
type cpuProfile struct {
	path string
	out  *gguf.AtomicFile
}

// profiling is the profile of the current run, nil when none is asked for.
var profiling *cpuProfile

// addCPUProfileFlag gives cmd and its subcommands --cpuprofile.
func addCPUProfileFlag(cmd *cobra.Command) {
	p := &cpuProfile{}
	cmd.PersistentFlags().StringVar(&p.path, "cpuprofile", "", "write a CPU profile of the benchmark (go tool pprof format) to this file")
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error {
		if p.path == "" {
			return nil
		}
		f, err := gguf.CreateAtomic(p.path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Abort()
			return fmt.Errorf("%s: %w", p.path, err)
		}
		p.out = f
		profiling = p
		return nil
	}
}

// finishCPUProfile stops the profile of this run, if one was started, and
// commits it when the run succeeded (err nil) or removes it when it failed.
// It returns the run's error, or the commit's.
func finishCPUProfile(err error) error {
	p := profiling
	if p == nil || p.out == nil {
		return err
	}
	profiling = nil
	pprof.StopCPUProfile()
	if err != nil {
		p.out.Abort()
		return err
	}
	return p.out.Commit()
}

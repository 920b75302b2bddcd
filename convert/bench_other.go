//go:build !linux

package convert

import (
	"errors"
	"os"
)

func dropCache(string) error { return errors.New("dropping the page cache is Linux-only here") }

// selfPeakRSS and childPeakRSS are measured on Linux only; 0 means unknown.
func selfPeakRSS() int64                     { return 0 }
func childPeakRSS(ps *os.ProcessState) int64 { return 0 }

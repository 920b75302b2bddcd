//go:build !linux

package convert

import "errors"

func dropCache(string) error { return errors.New("dropping the page cache is Linux-only here") }

// The peak resident set is measured on Linux only; 0 means unknown.
func selfPeakRSS() int64 { return 0 }
func resetPeakRSS() bool { return false }
func peakRSS() int64     { return 0 }
func anonRSS() int64     { return 0 }

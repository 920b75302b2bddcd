//go:build unix

package kernels

import (
	"syscall"
	"time"
)

// processCPU is the process's user and system CPU time (0 where getrusage
// fails).
func processCPU() time.Duration {
	d, _ := rusageCPU(syscall.RUSAGE_SELF)
	return d
}

// rusageCPU is getrusage(who)'s user and system CPU time.
func rusageCPU(who int) (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

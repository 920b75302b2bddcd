//go:build unix

package osutil

import (
	"syscall"
	"time"
)

// CPUSeconds is the CPU time (user + system, all threads) this process
// used so far; 0 where the system does not tell.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

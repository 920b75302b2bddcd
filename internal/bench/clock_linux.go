//go:build linux

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU is the CPU time the calling OS thread has used. On a machine
// shared with other work, time spent descheduled is not counted, so a rate
// per CPU-second is the rate per core the code achieves.
func ThreadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// ProcessCPU is the CPU time (user and system) the whole process has used.
func ProcessCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

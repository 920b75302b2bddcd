//go:build linux

package convert

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// dropCache syncs a file and asks the kernel to drop its pages from the
// page cache, so that the next read comes from the disk.
func dropCache(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	if err := fh.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(fh.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// selfPeakRSS is this process's peak resident set (getrusage; Linux
// reports KiB).
func selfPeakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// childPeakRSS is a finished child's peak resident set.
func childPeakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}

//go:build linux

package convert

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
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

// resetPeakRSS hands the memory the Go runtime holds back to the kernel
// and resets this process's peak resident set (/proc/self/clear_refs, 5),
// so that peakRSS measures only what runs from now on. It reports whether
// the kernel allowed the reset.
func resetPeakRSS() bool {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS is this process's peak resident set since the last reset
// (VmHWM in /proc/self/status), 0 when unknown.
func peakRSS() int64 { return statusBytes("VmHWM:") }

// anonRSS is this process's resident anonymous memory (RssAnon: its heap
// and stacks, not the pages of files it maps), 0 when unknown.
func anonRSS() int64 { return statusBytes("RssAnon:") }

// statusBytes reads one "Key: N kB" line of /proc/self/status.
func statusBytes(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

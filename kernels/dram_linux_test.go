package kernels

import (
	"bytes"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// threadClock is the calling OS thread's CPU time by
// CLOCK_THREAD_CPUTIME_ID, to the nanosecond (getrusage's, threadCPU, moves
// in scheduler ticks here: too coarse for rounds of a millisecond).
func threadClock(b *testing.B) time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		b.Fatal(e)
	}
	return time.Duration(ts.Nano())
}

// threadCPU is the calling OS thread's CPU time (getrusage RUSAGE_THREAD):
// on a shared machine the time a thread ran, not the time it waited for a
// core.
func threadCPU(b *testing.B) time.Duration {
	d, err := rusageCPU(1 /* RUSAGE_THREAD */)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// mapDRAMFile is n bytes of pattern, repeated, in a file of os.TempDir()
// (removed at once: the mapping keeps it) mapped read-only and shared, as
// gguf.OpenMapped maps a model; unmapped at the end of b.
func mapDRAMFile(b *testing.B, n int, pattern []byte) []byte {
	f, err := os.CreateTemp("", "stratactl-rowsdram-*")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	os.Remove(f.Name())
	chunk := bytes.Repeat(pattern, max(1, (1<<20)/len(pattern)))
	for o := 0; o < n; o += len(chunk) {
		if _, err := f.Write(chunk[:min(len(chunk), n-o)]); err != nil {
			b.Fatal(err)
		}
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Munmap(data) })
	return data
}

//go:build unix

package osutil

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// oNonblock makes opening a FIFO return at once instead of waiting for a
// writer; it changes nothing for a regular file.
const oNonblock = syscall.O_NONBLOCK

// lock takes an exclusive flock on f, held until f is closed (or the
// process dies).
func lock(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("%s: lock: %w", f.Name(), err)
	}
	return nil
}

// tryLock reports whether f's lock was free (and takes it).
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// Free returns the bytes available to this user on the file system that
// holds path (or, for a path not yet there, its folder).
func Free(path string) (int64, error) {
	var st syscall.Statfs_t
	p := path
	if _, err := os.Stat(p); err != nil {
		p = filepath.Dir(path)
	}
	if err := syscall.Statfs(p, &st); err != nil {
		return 0, fmt.Errorf("%s: statfs: %w", p, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

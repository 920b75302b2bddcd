//go:build linux

package calib

import (
	"os"

	"golang.org/x/sys/unix"
)

const canAdvise = true

// adviseWillNeed asks the kernel to read [off, off+n) of fh into the page
// cache (posix_fadvise WILLNEED: the reads are queued, not copied here).
func adviseWillNeed(fh *os.File, off, n int64) {
	_ = unix.Fadvise(int(fh.Fd()), off, n, unix.FADV_WILLNEED)
}

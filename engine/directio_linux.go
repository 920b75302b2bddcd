package engine

import (
	"errors"
	"os"
	"syscall"

	"github.com/stratactl/stratactl/internal/osutil"
)

// openForRead opens path with O_DIRECT when asked and allowed, so that
// streamed experts bypass the page cache (which would otherwise hold a
// second copy and hide the disk's real speed); note says what happened.
func openForRead(path string, direct bool) (*os.File, bool, string) {
	if direct {
		f, err := openDirect(path)
		if err == nil {
			return f, true, ""
		}
		fb, _, berr := osutil.OpenRegular(path)
		if berr != nil {
			return nil, false, berr.Error()
		}
		return fb, false, "the filesystem refused O_DIRECT (" + err.Error() + "); buffered reads"
	}
	f, _, err := osutil.OpenRegular(path)
	if err != nil {
		return nil, false, err.Error()
	}
	return f, false, "buffered reads (asked for)"
}

func isInvalid(err error) bool { return errors.Is(err, syscall.EINVAL) }

// openDirect is a variable so tests can play a filesystem that refuses
// O_DIRECT (tmpfs does, at open).
var openDirect = func(path string) (*os.File, error) {
	f, _, err := osutil.OpenRegularFlag(path, syscall.O_DIRECT)
	return f, err
}

// physicalMemory is the machine's RAM in bytes, 0 when unknown.
func physicalMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

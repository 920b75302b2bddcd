//go:build !linux

package engine

import (
	"os"

	"github.com/stratactl/stratactl/internal/osutil"
)

// openForRead opens path for buffered reads: O_DIRECT is Linux's.
func openForRead(path string, direct bool) (*os.File, bool, string) {
	f, _, err := osutil.OpenRegular(path)
	if err != nil {
		return nil, false, err.Error()
	}
	return f, false, "buffered reads (no O_DIRECT on this platform)"
}

func isInvalid(err error) bool { return false }

// physicalMemory is unknown here; the arena then defaults to every expert.
func physicalMemory() uint64 { return 0 }

package osutil

import (
	"errors"
	"fmt"
)

// errNoStatfs: free space is not known on this system (no statfs).
var errNoStatfs = errors.New("free space unknown on this system")

// NoSpaceError refuses an output that does not fit.
type NoSpaceError struct {
	Path       string
	Need, Free int64
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("%s: needs %d bytes (%s), the file system has %d (%s) free", e.Path, e.Need, human(e.Need), e.Free, human(e.Free))
}

// human is a byte count in binary units, for messages.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// CheckSpace refuses to start writing need bytes at path when the file
// system holding it has less free: the size of an output is known once its
// plan is made, so a conversion that cannot fit fails before its work.
// The whole size is needed even where path replaces a file, since the old
// file stays until the new one is renamed over it.
func CheckSpace(path string, need int64) error {
	free, err := Free(path)
	if errors.Is(err, errNoStatfs) {
		return nil
	}
	if err != nil {
		return err
	}
	if need > free {
		return &NoSpaceError{Path: path, Need: need, Free: free}
	}
	return nil
}

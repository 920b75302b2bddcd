// Package osutil holds file helpers shared by the format packages.
package osutil

import (
	"fmt"
	"os"
)

// OpenRegular opens path for reading and returns it with its size, refusing
// anything that is not a regular file (a directory, a device, a FIFO), whose
// size would mean nothing to a parser that bounds every length by it.
func OpenRegular(path string) (*os.File, int64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file", path)
	}
	return fh, st.Size(), nil
}

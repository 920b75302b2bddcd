// Package osutil holds what stratactl promises about the files it touches,
// in one place: inputs are regular files opened without ever blocking (a
// FIFO or device is refused before it is opened, and again after) and read
// with a size bound and with cancellation; outputs are absent, regular files
// or symlinks to one (never a device, FIFO, socket or directory), never one
// of the command's inputs, written beside their target under a temporary
// name (.NAME.tmp-*) that a later run sweeps when the run that made it is
// gone, and refused up front when the file system lacks the room.
package osutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// kind names what a non-regular file is, for an error message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file"
}

// NotRegularError says that path is something other than a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
	// Output: the path was given as an output.
	Output bool
}

func (e *NotRegularError) Error() string {
	if e.Output {
		return fmt.Sprintf("%s: is %s; an output must be a regular file, a symlink to one, or absent", e.Path, kind(e.Mode))
	}
	return fmt.Sprintf("%s: is %s, not a regular file", e.Path, kind(e.Mode))
}

// OpenRegular opens path for reading and returns it with its size, refusing
// anything that is not a regular file (a directory, a device, a FIFO), whose
// size would mean nothing to a parser that bounds every length by it.
func OpenRegular(path string) (*os.File, int64, error) {
	return OpenRegularFlag(path, 0)
}

// OpenRegularFlag is OpenRegular with extra open flags (O_DIRECT). It never
// blocks on what it opens: path is checked first (stat), then opened
// non-blocking (a FIFO swapped in between cannot hang the open), and the
// opened file is checked again, so a FIFO, device or directory is refused
// whichever way it arrives.
func OpenRegularFlag(path string, flag int) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	fh, err := os.OpenFile(path, os.O_RDONLY|flag|oNonblock, 0)
	if err != nil {
		return nil, 0, err
	}
	ost, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, 0, err
	}
	if !ost.Mode().IsRegular() {
		fh.Close()
		return nil, 0, &NotRegularError{Path: path, Mode: ost.Mode()}
	}
	return fh, ost.Size(), nil
}

// TooLargeError says that an input is larger than its reader accepts.
type TooLargeError struct {
	Path      string
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes, more than the %d this input may hold", e.Path, e.Size, e.Max)
}

// Input size bounds for whole-file reads: far above any real input of the
// kind, far below what would exhaust memory.
const (
	MaxTextBytes = 4 << 30 // calibration and held-out text, token id files
	MaxMetaBytes = 1 << 30 // keep maps, profiles, manifests, small binary inputs
)

// readChunk is how much ReadFile reads between checks of its context.
const readChunk = 8 << 20

// ReadFile reads a regular file whole, refusing one larger than max bytes,
// and stops when ctx is cancelled.
func ReadFile(ctx context.Context, path string, max int64) ([]byte, error) {
	fh, size, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if size > max {
		return nil, &TooLargeError{Path: path, Size: size, Max: max}
	}
	b := make([]byte, size)
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		n, err := fh.ReadAt(b[off:min(size, off+readChunk)], off)
		off += int64(n)
		if err != nil && !(errors.Is(err, io.EOF) && off == size) {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s: shrank from %d to %d bytes while read", path, size, off)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return b, nil
}

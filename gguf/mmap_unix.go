//go:build unix

package gguf

import (
	"fmt"
	"syscall"

	"github.com/stratactl/stratactl/internal/osutil"
)

// OpenMapped opens a GGUF file and maps it read-only, so that tensors can be
// used in place (Bytes) without a copy. The mapping is backed by the page
// cache: it costs address space, not private memory.
func OpenMapped(path string) (*File, error) {
	fh, size, err := osutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if size == 0 {
		return nil, &FormatError{File: path, Msg: "empty file"}
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: %d bytes cannot be mapped on this platform", path, size)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	f, err := NewReader(bytesReaderAt(data), size, path)
	if err != nil {
		syscall.Munmap(data)
		return nil, err
	}
	f.mapped, f.ownMap = data, true
	return f, nil
}

func unmap(b []byte) error { return syscall.Munmap(b) }

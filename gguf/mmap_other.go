//go:build !unix

package gguf

import (
	"context"

	"github.com/stratactl/stratactl/internal/osutil"
)

// OpenMapped reads the whole file where mapping is unavailable.
func OpenMapped(path string) (*File, error) {
	data, err := osutil.ReadFile(context.Background(), path, maxFileSize)
	if err != nil {
		return nil, err
	}
	f, err := NewReader(bytesReaderAt(data), int64(len(data)), path)
	if err != nil {
		return nil, err
	}
	f.mapped = data
	return f, nil
}

func unmap(b []byte) error { return nil }

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package engine

import (
	"fmt"
	"syscall"
)

// mapArena returns n zero bytes starting at a multiple of align, outside
// the Go heap (an anonymous private mapping), and the function that unmaps
// them. The expert arena lives there so that the collector's heap goal (by
// default twice the live heap) is not doubled by it: on the Go heap a 12 GB
// arena let up to 12 GB of the decode's garbage, or a closed store's whole
// arena, stay resident before the next collection. Close unmaps it at
// once.
func mapArena(n, align int) ([]byte, func() error, error) {
	if n <= 0 {
		return nil, func() error { return nil }, nil
	}
	b, err := syscall.Mmap(-1, 0, n+align, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("expert arena of %d bytes: %w", n, err)
	}
	off := alignOffset(b, align)
	return b[off : off+n : off+n], func() error { return syscall.Munmap(b) }, nil
}

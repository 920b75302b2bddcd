//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package osutil

import "unsafe"

// HugePage is the huge page size MapAnon would align to; without
// anonymous mappings through package syscall it only sizes the alignment.
const HugePage = 2 << 20

// MapAnon returns n zero bytes starting at a multiple of align from the Go
// heap (no anonymous mappings through package syscall here); the function
// it returns does nothing: the collector frees them once they are
// unreferenced.
func MapAnon(n, align int) ([]byte, func() error, error) {
	if n <= 0 {
		return nil, func() error { return nil }, nil
	}
	align = max(align, 1)
	b := make([]byte, n+align)
	off := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align))
	if off != 0 {
		off = align - off
	}
	return b[off : off+n : off+n], func() error { return nil }, nil
}

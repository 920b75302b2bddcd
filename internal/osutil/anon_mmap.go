//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package osutil

import (
	"fmt"
	"syscall"
	"unsafe"
)

// HugePage is the transparent huge page size MapAnon aligns large mappings
// to (2 MiB on x86-64 and arm64 with 4 KiB pages).
const HugePage = 2 << 20

// MapAnon returns n zero bytes starting at a multiple of align, outside the
// Go heap (an anonymous private mapping), and the function that unmaps
// them. Where n is at least HugePage (and align divides it) the bytes start
// on a huge page boundary and, on Linux, the mapping asks for transparent
// huge pages (madvise MADV_HUGEPAGE; the kernel's default here is often
// "madvise", huge pages only where asked): streamed weights then cross no
// 4 KiB page boundaries, where the hardware prefetcher stops, and miss the
// TLB 512 times less. The cost is at most one huge page of memory past n
// (the kernel may back the last partial huge page whole).
func MapAnon(n, align int) ([]byte, func() error, error) {
	if n <= 0 {
		return nil, func() error { return nil }, nil
	}
	if align < 1 {
		align = 1
	}
	if n >= HugePage && HugePage%align == 0 {
		align = HugePage
	}
	b, err := syscall.Mmap(-1, 0, n+align, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("anonymous mapping of %d bytes: %w", n, err)
	}
	off := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align))
	if off != 0 {
		off = align - off
	}
	m := b[off : off+n : off+n]
	if align == HugePage {
		adviseHuge(m)
	}
	return m, func() error { return syscall.Munmap(b) }, nil
}

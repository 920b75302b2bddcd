package osutil

import "syscall"

// adviseHuge asks for transparent huge pages over b. An error (a kernel
// without THP, or with it off) leaves b as it is, on small pages.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }

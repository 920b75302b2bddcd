//go:build (darwin || freebsd || netbsd || openbsd || dragonfly) && !linux

package osutil

// adviseHuge: no transparent huge page advice here; b stays as the kernel
// maps it.
func adviseHuge([]byte) {}

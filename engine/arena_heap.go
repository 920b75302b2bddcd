//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package engine

// mapArena returns n zero bytes starting at a multiple of align from the
// Go heap (no anonymous mappings through package syscall here); the
// function it returns does nothing: the collector frees them once the
// store is gone.
func mapArena(n, align int) ([]byte, func() error, error) {
	return alignedBytes(n, align), func() error { return nil }, nil
}

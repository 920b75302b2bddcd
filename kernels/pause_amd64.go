//go:build amd64 && !noasm

package kernels

// spinPause runs n (>= 1) PAUSE instructions (pause_amd64.s).
//
//go:noescape
func spinPause(n int)

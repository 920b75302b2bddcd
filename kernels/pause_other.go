//go:build !amd64 || noasm

package kernels

// spinPause busy-waits for about n spin-loop hints (Go has no portable
// one; the loop is the wait).
func spinPause(n int) {
	for i := 0; i < n; i++ {
		spinSpin(i)
	}
}

//go:noinline
func spinSpin(int) {}

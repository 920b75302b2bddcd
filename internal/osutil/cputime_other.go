//go:build !unix

package osutil

// CPUSeconds is the process's CPU time where the system tells it; here it
// does not (0).
func CPUSeconds() float64 { return 0 }

//go:build !unix

package kernels

import "time"

// processCPU: no getrusage here, so 0 (reportCPURate then reports nothing).
func processCPU() time.Duration { return 0 }

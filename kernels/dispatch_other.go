//go:build !amd64 || noasm

package kernels

// Without assembly (another architecture, or -tags noasm) every step takes
// the portable Go path.
func chooseKernels(cpuFeatures) kernelSet { return kernelSet{} }

// asmBuild: this build has the assembly kernels.
const asmBuild = false

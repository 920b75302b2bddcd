package kernels

import "fmt"

// namedSet is a kernel set under test.
type namedSet struct {
	name string
	k    *kernelSet
}

// testSets is every kernel set this CPU can run: the host's, and what a CPU
// with fewer of the host's extensions would choose (so every partial set is
// checked too). The portable set is the truth they are compared with.
func testSets() []namedSet {
	var out []namedSet
	for mask := 0; mask < 8; mask++ {
		c := cpuFeatures{
			avx:   hostCPU.avx && mask&1 != 0,
			f16c:  hostCPU.f16c && mask&2 != 0,
			avx2:  hostCPU.avx2 && mask&4 != 0,
			brand: hostCPU.brand,
		}
		if (c.f16c || c.avx2) && !c.avx {
			continue // no such CPU
		}
		if c != (cpuFeatures{avx: mask&1 != 0, f16c: mask&2 != 0, avx2: mask&4 != 0, brand: hostCPU.brand}) {
			continue // the host lacks one of them
		}
		k := chooseKernels(c)
		out = append(out, namedSet{fmt.Sprintf("avx=%v,f16c=%v,avx2=%v", c.avx, c.f16c, c.avx2), &k})
	}
	return out
}

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
	for mask := 0; mask < 256; mask++ {
		want := cpuFeatures{avx: mask&1 != 0, f16c: mask&2 != 0, avx2: mask&4 != 0, avx512vnni: mask&8 != 0, avx512bf16: mask&16 != 0,
			avx512gfni: mask&32 != 0, avx512vbmi: mask&64 != 0, bmi2: mask&128 != 0, brand: hostCPU.brand}
		c := cpuFeatures{
			avx:        hostCPU.avx && want.avx,
			f16c:       hostCPU.f16c && want.f16c,
			avx2:       hostCPU.avx2 && want.avx2,
			avx512vnni: hostCPU.avx512vnni && want.avx512vnni,
			avx512bf16: hostCPU.avx512bf16 && want.avx512bf16,
			avx512gfni: hostCPU.avx512gfni && want.avx512gfni,
			avx512vbmi: hostCPU.avx512vbmi && want.avx512vbmi,
			bmi2:       hostCPU.bmi2 && want.bmi2,
			brand:      hostCPU.brand,
		}
		if (c.f16c || c.avx2) && !c.avx || (c.avx512vnni || c.avx512bf16) && !(c.avx2 && c.f16c) || c.avx512gfni && !c.avx512vnni ||
			c.avx512vbmi && !c.avx512vnni || c.avx512gfni && !c.avx512vbmi ||
			!c.bmi2 && !c.avx512vnni && hostCPU.bmi2 {
			// no such CPU, or the same set as another mask (without AVX-512
			// VNNI no kernel asks for BMI2: those sets are tested with it)
			continue
		}
		if c != want {
			continue // the host lacks one of them
		}
		k := chooseKernels(c)
		out = append(out, namedSet{fmt.Sprintf("avx=%v,f16c=%v,avx2=%v,avx512vnni=%v,avx512bf16=%v,avx512gfni=%v,avx512vbmi=%v,bmi2=%v", c.avx, c.f16c, c.avx2, c.avx512vnni, c.avx512bf16, c.avx512gfni, c.avx512vbmi, c.bmi2), &k})
	}
	return out
}

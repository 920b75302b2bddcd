//go:build amd64 && !noasm

package kernels

// rowsDRAMVariants: the dispatched set ("host"), the AVX2 set's row by row
// path ("avx2", what a CPU without AVX-512 VNNI runs), and where the host
// has AVX-512 VNNI the one-row kernel.
func rowsDRAMVariants() []rowsVariant {
	avx2 := hostCPU
	avx2.avx512vnni, avx2.avx512bf16, avx2.avx512gfni = false, false, false
	avx2Set := chooseKernels(avx2)
	vs := []rowsVariant{setVariant("host", &host), setVariant("avx2", &avx2Set)}
	if hostCPU.avx512vnni {
		vs = append(vs, rowsVariant{"1row", func(m *Matrix, x *Q8Row, out []float32) {
			if !rowsQ8_0AVX512(m, 0, m.Rows, x, out) {
				panic("rowsQ8_0AVX512 refused a QuantizeQ8Row row")
			}
		}})
	}
	return vs
}

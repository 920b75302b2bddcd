// Package kernels holds the hot loops (dequantize, dot products, the Q2_0
// scale search) with a portable Go path and vector paths picked once, at
// start-up, from the CPU's features. Every path gives the same bits.
//
// Build with -tags noasm to leave out every assembly file: the package is
// then plain Go on every architecture.
package kernels

import (
	"github.com/klauspost/cpuid/v2"
	"github.com/stratactl/stratactl/quant"
)

// cpuFeatures are the instruction-set extensions the vector kernels use.
// Each kernel is bound only where the CPU has every extension its
// instructions need (see chooseKernels), nothing more.
type cpuFeatures struct {
	avx, avx2, f16c bool
	// avx512vnni: AVX-512 F, BW, VL and VNNI.
	avx512vnni bool
	// avx512vbmi: AVX-512 F, BW, VL and VBMI (VPERMB, VPERMT2B).
	avx512vbmi bool
	// avx512bf16: AVX-512 F, BW and BF16 (VDPBF16PS; the tile kernels'
	// word masks are BW).
	avx512bf16 bool
	// avx512gfni: AVX-512 F, BW, VL, VBMI (VPERMT2B) and GFNI
	// (VGF2P8AFFINEQB).
	avx512gfni bool
	// bmi2: PEXT and PDEP.
	bmi2  bool
	brand string
}

// hostCPU is read once, at start-up.
var hostCPU = cpuFeatures{
	avx:        cpuid.CPU.Supports(cpuid.AVX),
	avx2:       cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2),
	f16c:       cpuid.CPU.Supports(cpuid.AVX, cpuid.F16C),
	avx512vnni: cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512VNNI),
	avx512vbmi: cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512VBMI),
	avx512bf16: cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512BF16),
	avx512gfni: cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512VBMI, cpuid.GFNI),
	bmi2:       cpuid.CPU.Supports(cpuid.BMI2),
	brand:      cpuid.CPU.BrandName,
}

// fusedDot is a dot product that decodes the weights in registers. It takes
// len(x) a positive multiple of unit and a row of at least
// len(x)/blockElems*blockBytes bytes.
type fusedDot struct {
	f                            func(row []byte, x []float32) float32
	unit, blockElems, blockBytes int
}

// kernelSet is one complete choice of kernels. A nil member means that step
// runs the portable Go code, so the zero kernelSet is the portable path.
type kernelSet struct {
	// paths names the vector extensions the set uses ("" for none).
	paths string
	// dotF32 takes n a multiple of 32 (dot.go's order).
	dotF32 func(w, x *float32, n int) float32
	// dotF32x2 is dotF32 on two rows at once (*oi = dotF32(wi, x, n)).
	dotF32x2 func(w0, w1, x *float32, n int, o0, o1 *float32)
	// axpy takes n a multiple of 8.
	axpy func(y *float32, a float32, x *float32, n int)
	// dot is the fused dot product per stored type.
	dot [quant.NumTypes]fusedDot
	// dequant decodes whole blocks (sizes checked by the caller, len(dst) > 0).
	dequant [quant.NumTypes]func(src []byte, dst []float32)
	// q8dot returns the lanes after the first sub-blocks of a DotQ8
	// (qdot.go's order) and how many sub-blocks it took. (Lanes by value,
	// so that nothing of a call escapes to the heap.)
	q8dot [quant.NumTypes]func(row []byte, x *Q8Row) ([8]float32, int)
	// q8rows sets out[r] = DotQ8(row r of m, x) for r in [lo, hi), lo < hi,
	// in one call, or reports false (nothing written) where it does not
	// take x (one without the padding its kernel reads).
	q8rows [quant.NumTypes]func(m *Matrix, lo, hi int, x *Q8Row, out []float32) bool
	// q8lanes is q8rows over lanes[type] (>= 2) lanes of rows, lane rows
	// apart: out[r] for r = row + l*lane + i, l < lanes[type], i < steps
	// (1 <= steps <= lane), each lane one of the kernel's sequential
	// streams; false (nothing written) where it does not take x. The
	// pool's row claims walk a share in lanes (rowPiece), so that the
	// claims of one goroutine continue the same streams.
	q8lanes [quant.NumTypes]func(m *Matrix, row, steps, lane int, x *Q8Row, out []float32) bool
	lanes   [quant.NumTypes]int
	// q8decode decodes groups g0..g0+ng-1 of a row into d's groups
	// at..at+ng-1 for the tiles (MatMulQ8, DotQ8Rows), and q8dotDecoded
	// adds their terms against one activation row to the lanes.
	q8decode     [quant.NumTypes]func(row []byte, g0, ng int, d *q8Decoded, at int)
	q8dotDecoded func(d *q8Decoded, ng int, x *Q8Row, g0 int, l *[8]float32)
	// q8quant is QuantizeQ8Row's loop over whole blocks, codes, scales,
	// sums and the padded plane order q2 (q2PlaneOrder's); false when it
	// met a NaN (the portable loop then quantizes the row).
	q8quant func(x []float32, r *Q8Row) bool
	// q8dotTile2 is q8dotDecoded for two activation rows at once against
	// the first nr rows of a tile (qmm.go's tileDot2).
	q8dotTile2 func(d *[qmmRows]q8Decoded, nr, whole, half int, x0, x1 *Q8Row, g0 int, l0, l1 [][8]float32, o0, o1 []float32)
	// tilePlanes, where set, writes groups of 256 codes in plane order
	// (each sub-block's dword k at 8k+s, not 8s+k), each byte XOR bias,
	// for q8dotTilePlanes, which then runs the tiles of the types
	// q8dotTile2 takes: q8dotTile2 on plane-order weights biased by 0x80
	// against planeInputs from group g0 on, whole groups only, the
	// multipliers skipped unless mul, the lanes starting at +0 where g0 is
	// 0 (not read from l0 and l1).
	tilePlanes      func(dst, src []int8, bias byte)
	q8dotTilePlanes func(d *[qmmRows]q8Decoded, nr, ng int, x0, x1 planeInput, g0 int, mul bool, l0, l1 [][8]float32, o0, o1 []float32)
	// q8decodePlanes decodes whole groups of a type with 32-weight blocks
	// straight to q8dotTilePlanes' layout (q8decode's, then tilePlanes'
	// with bias 0x80), where k has such a decoder for the type.
	q8decodePlanes [quant.NumTypes]func(row []byte, g0, ng int, d *q8Decoded, at int)
	// q8dotTile2H is q8dotTile2 for the types with a multiplier per
	// 16-weight half (q8Decoded.mh; whole groups only).
	// q8decodeHalves decodes whole groups of a tileHalves row (codes,
	// q8Decoded.mh, dw) where k has a vector decoder for the type.
	q8decodeHalves [quant.NumTypes]func(row []byte, g0, ng int, d *q8Decoded)
	q8dotTile2H    func(d *[qmmRows]q8Decoded, nr, ng int, x0, x1 *Q8Row, g0 int, l0, l1 [][8]float32, o0, o1 []float32)
	// kminDecode decodes groups of a K-quant row with a min for the min
	// tiles (qmm_k.go), and kminTile2 is their kernel for two inputs; where
	// k has tilePlanes (kminPlanes) it reads the decoded chunks' and the
	// inputs' codes in plane order (tilePlanes', unbiased).
	kminDecode [quant.NumTypes]func(row []byte, g0, ng int, d *kDecoded)
	kminTile2  [quant.NumTypes]func(d *[qmmRows]kDecoded, nr, ng int, xq0 []int8, kx0 []kxGroup, xq1 []int8, kx1 []kxGroup, l0, l1 [][8]float32, o0, o1 []float32)
	// kminDecodePlanes decodes as kminDecode does, the codes straight to
	// plane order, where k has such a decoder for the type.
	kminDecodePlanes [quant.NumTypes]func(row []byte, g0, ng int, d *kDecoded)
	// kminDecodeRows decodes n rows of one block each (rows, consecutive)
	// as kminDecodePlanes does, row i into d[i], where k has it.
	kminDecodeRows [quant.NumTypes]func(rows []byte, n int, d *[qmmRows]kDecoded)
	// kminTile1G, where set, is kminTile2 for rows of one group (256
	// weights: the whole row one chunk): the lanes start at +0 and are
	// folded into o0 and o1, not read or stored.
	kminTile1G [quant.NumTypes]func(d *[qmmRows]kDecoded, nr int, xq0 []int8, kx0 []kxGroup, xq1 []int8, kx1 []kxGroup, o0, o1 []float32)
	// bf16dot is DotBF16 on a padded row (qdot_bf16.go's order), false
	// when the row is left to the portable path.
	bf16dot func(row []byte, x *BF16Row) (float32, bool)
	// bf16rows sets out[r] = DotBF16(row r of m, x) for r in [lo, hi) in
	// one call, and bf16tiles out[t*m.Rows+r] = DotBF16(row r, xs[t]) for
	// those rows and every input; false (nothing written) where it does
	// not take the rows (unpadded activations, no columns).
	bf16rows  func(m *Matrix, lo, hi int, x *BF16Row, out []float32) bool
	bf16tiles func(m *Matrix, lo, hi int, xs []*BF16Row, out []float32) bool
	// bf16quant is QuantizeBF16Row's loop over n >= 1 activations into v,
	// the row's cleared buffer.
	bf16quant func(x *float32, n int, v *uint16)
	// q2 runs Q2Search's hot loops (nil: quant.Q2SearchRef).
	q2 *quant.Q2SearchKernels
	// attnScores and attnSum are AttnScores' and AttnSum's loops (attn.go):
	// n >= 1 positions, chunks of 32 and blocks of attnSumBlock.
	attnScores func(q, k *float32, stride, n, chunks int, scale float32, out *float32)
	attnSum    func(o, p, v *float32, stride, n, blocks int)
	// swiglu and exp are SwiGLU's and ExpF32's loops over n values, n a
	// positive multiple of 8.
	swiglu func(h, u *float32, n int)
	exp    func(dst, x *float32, n int)
	// add, scaleMulVec, shiftScaleVec and widenVec are AddTo's,
	// ScaleMul's, ShiftScale's and Widen's loops over n values, n a
	// positive multiple of 8.
	add           func(x, o *float32, n int)
	scaleMulVec   func(y, x, w *float32, s float32, n int)
	shiftScaleVec func(x, v *float32, sub, mul float64, n int)
	widenVec      func(p *float64, x *float32, n int)
	// maxF32 and findF32 are Argmax's two passes over n values, n a
	// positive multiple of 8: the largest value that is not NaN (x[0] not
	// NaN), then the first index holding it (n where none does).
	maxF32  func(x *float32, n int) float32
	findF32 func(x *float32, n int, v float32) int
	// xorReadVec is XORRead's loop over n bytes, n a positive multiple of
	// xorReadUnit.
	xorReadVec func(p *byte, n int) uint64
}

// host is the set this CPU runs, chosen once from hostCPU and never changed;
// portable is the plain-Go definition every vector path is tested against.
var (
	host     = chooseKernels(hostCPU)
	portable kernelSet
)

// Describe names the paths in use, for benchmarks and manifests.
func Describe() string {
	if host.paths == "" {
		return "generic (" + hostCPU.brand + ")"
	}
	return host.paths + " (" + hostCPU.brand + ")"
}

// HasVectorQ2Search reports whether QuantizeQ2_0's search runs vector code
// on this CPU.
func HasVectorQ2Search() bool { return host.q2 != nil }

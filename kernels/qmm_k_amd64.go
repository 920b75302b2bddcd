//go:build amd64 && !noasm

package kernels

import "unsafe"

// kDecoded's and kxGroup's layouts as qmm_k_amd64.s reads them (its KG is
// kminGroups): the codes, then the scales at 256*KG, the mins at 288*KG, d
// at 320*KG and dmin at 352*KG, 384*KG bytes in all; a record's scales,
// then its half sums at 32, 64 bytes (compile-time checks: the array
// lengths are negative otherwise).
var (
	_ [384*kminGroups - unsafe.Sizeof(kDecoded{})]struct{}
	_ [unsafe.Sizeof(kDecoded{}) - 384*kminGroups]struct{}
	_ [256*kminGroups - unsafe.Offsetof(kDecoded{}.sc)]struct{}
	_ [unsafe.Offsetof(kDecoded{}.sc) - 256*kminGroups]struct{}
	_ [288*kminGroups - unsafe.Offsetof(kDecoded{}.mn)]struct{}
	_ [unsafe.Offsetof(kDecoded{}.mn) - 288*kminGroups]struct{}
	_ [320*kminGroups - unsafe.Offsetof(kDecoded{}.d)]struct{}
	_ [unsafe.Offsetof(kDecoded{}.d) - 320*kminGroups]struct{}
	_ [352*kminGroups - unsafe.Offsetof(kDecoded{}.dmin)]struct{}
	_ [unsafe.Offsetof(kDecoded{}.dmin) - 352*kminGroups]struct{}
	_ [64 - unsafe.Sizeof(kxGroup{})]struct{}
	_ [unsafe.Sizeof(kxGroup{}) - 64]struct{}
	_ [32 - unsafe.Offsetof(kxGroup{}.hs)]struct{}
	_ [unsafe.Offsetof(kxGroup{}.hs) - 32]struct{}
)

//go:noescape
func kminDecodeQ2KAVX2(w *byte, groups int, d *kDecoded)

//go:noescape
func kminDecodeQ4KAVX2(w *byte, groups int, d *kDecoded)

//go:noescape
func kminDecodeQ5KAVX2(w *byte, groups int, d *kDecoded)

// kminDecoder wraps a min decoder of blockBytes-byte blocks as a
// kernelSet.kminDecode entry.
func kminDecoder(f func(w *byte, groups int, d *kDecoded), blockBytes int) func(row []byte, g0, ng int, d *kDecoded) {
	return func(row []byte, g0, ng int, d *kDecoded) {
		if ng < 1 {
			return
		}
		_ = row[blockBytes*(g0+ng)-1]
		f(&row[blockBytes*g0], ng, d)
	}
}

//go:noescape
func kminDecodeQ4KPlanesAVX512(w *byte, groups int, d *kDecoded, next int)

//go:noescape
func kminDecodeQ5KPlanesAVX512(w *byte, groups int, d *kDecoded, next int)

//go:noescape
func kDecodeQ6KPlanesAVX512(w *byte, groups int, d *kDecoded, next int)

// kPlanesDecoder wraps a plane decoder of blockBytes-byte blocks (next 0:
// a row's groups into one kDecoded; 1: each block into the next) as a
// kernelSet.kminDecodePlanes entry and a kernelSet.kminDecodeRows one.
func kPlanesDecoder(f func(w *byte, groups int, d *kDecoded, next int), blockBytes int) (func(row []byte, g0, ng int, d *kDecoded), func(rows []byte, n int, d *[qmmRows]kDecoded)) {
	return func(row []byte, g0, ng int, d *kDecoded) {
			if ng < 1 {
				return
			}
			_ = row[blockBytes*(g0+ng)-1]
			f(&row[blockBytes*g0], ng, d, 0)
		}, func(rows []byte, n int, d *[qmmRows]kDecoded) {
			if n < 1 {
				return
			}
			_ = d[n-1]
			_ = rows[blockBytes*n-1]
			f(&rows[0], n, &d[0], 1)
		}
}

var (
	kDecodeQ6KPlanes, kDecodeQ6KRows       = kPlanesDecoder(kDecodeQ6KPlanesAVX512, 210)
	kminDecodeQ4KPlanes, kminDecodeQ4KRows = kPlanesDecoder(kminDecodeQ4KPlanesAVX512, 144)
	kminDecodeQ5KPlanes, kminDecodeQ5KRows = kPlanesDecoder(kminDecodeQ5KPlanesAVX512, 176)
	kminDecodeQ2KVector                    = kminDecoder(kminDecodeQ2KAVX2, 84)
	kminDecodeQ4KVector                    = kminDecoder(kminDecodeQ4KAVX2, 144)
	kminDecodeQ5KVector                    = kminDecoder(kminDecodeQ5KAVX2, 176)
)

//go:noescape
func kminTile2AVX2(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)

// kminTile2Vector is the min tiles' kernel on AVX2: the first nr chunks of
// d, ng groups each, against two inputs (codes and records from the chunk's
// first group on) into their lanes, or folded into o0 and o1.
var kminTile2Vector = kminTileKernel(kminTile2AVX2)

//go:noescape
func qmmDecodeQ3KAVX2(w *byte, groups int, out *int8, mh *int16, dw *float32)

// q8decodeQ3KHalves decodes whole groups of a Q3_K row for the halves tiles
// (qmm_k_amd64.s): codes, the 16 scales per block as multipliers, d.
func q8decodeQ3KHalves(row []byte, g0, ng int, d *q8Decoded) {
	if ng < 1 {
		return
	}
	_ = row[110*(g0+ng)-1]
	qmmDecodeQ3KAVX2(&row[110*g0], ng, &d.w[0], &d.mh[0], &d.dw[0])
}

//go:noescape
func kminTilePlanesVNNI(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)

//go:noescape
func kminTilePlanes1VNNI(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)

// kminTileKernel wraps a min tiles' kernel (qmm_k_amd64.s) as a
// kernelSet.kminTile2 entry; the AVX-512 VNNI kernels read d's and the
// inputs' codes in plane order (tilePlanes').
func kminTileKernel(f func(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)) func(d *[qmmRows]kDecoded, nr, ng int, xq0 []int8, kx0 []kxGroup, xq1 []int8, kx1 []kxGroup, l0, l1 [][8]float32, o0, o1 []float32) {
	return func(d *[qmmRows]kDecoded, nr, ng int, xq0 []int8, kx0 []kxGroup, xq1 []int8, kx1 []kxGroup, l0, l1 [][8]float32, o0, o1 []float32) {
		if nr < 1 || ng < 1 {
			return
		}
		_, _ = xq0[256*ng-1], xq1[256*ng-1]
		_, _ = kx0[ng-1], kx1[ng-1]
		_, _ = l0[nr-1], l1[nr-1]
		var p0, p1 *float32
		if o0 != nil {
			_, _ = o0[nr-1], o1[nr-1]
			p0, p1 = &o0[0], &o1[0]
		}
		f(&d[0], nr, ng, &xq0[0], &kx0[0], &xq1[0], &kx1[0], &l0[0], &l1[0], p0, p1)
	}
}

//go:noescape
func kTilePlanesBiasVNNI(d *kDecoded, rows, groups int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, l0, l1 *[8]float32, o0, o1 *float32)

var (
	kTilePlanesBiasVector = kminTileKernel(kTilePlanesBiasVNNI)
	kminTilePlanesVector  = kminTileKernel(kminTilePlanesVNNI)
	kminTilePlanes1Vector = kminTileKernel(kminTilePlanes1VNNI)
)

//go:noescape
func kminTile1GVNNI(d *kDecoded, rows int, xq0 *int8, kx0 *kxGroup, xq1 *int8, kx1 *kxGroup, o0, o1 *float32, kind int)

// kminTile1GKernel wraps kminTile1GVNNI for one kind (0: Q4_K and Q5_K, 1:
// Q2_K, 2: Q6_K) as a kernelSet.kminTile1G entry.
func kminTile1GKernel(kind int) func(d *[qmmRows]kDecoded, nr int, xq0 []int8, kx0 []kxGroup, xq1 []int8, kx1 []kxGroup, o0, o1 []float32) {
	return func(d *[qmmRows]kDecoded, nr int, xq0 []int8, kx0 []kxGroup, xq1 []int8, kx1 []kxGroup, o0, o1 []float32) {
		if nr < 1 {
			return
		}
		_, _ = xq0[255], xq1[255]
		_, _ = kx0[0], kx1[0]
		_, _ = o0[nr-1], o1[nr-1]
		kminTile1GVNNI(&d[0], nr, &xq0[0], &kx0[0], &xq1[0], &kx1[0], &o0[0], &o1[0], kind)
	}
}

var (
	kminTile1G1Vector    = kminTile1GKernel(0)
	kminTile1GMinVector  = kminTile1GKernel(1)
	kminTile1GBiasVector = kminTile1GKernel(2)
)

package quant

import (
	"encoding/binary"
	"math"
	"sync"
)

// The dequantizers here are the reference definitions: float32 arithmetic in
// ggml's order (QUANT-FORMATS.md §1). Every product involved is exact in
// float32, so the only roundings are the single additions of Q4_1/Q5_1 and
// the subtractions of Q2_K/Q4_K/Q5_K; explicit float32(...) conversions keep
// a compiler from fusing those into FMAs (harmless here, but it keeps the
// code's meaning independent of the target). Signs are applied by
// multiplying with ±1, as ggml does, so even NaN signs follow ggml's
// x86 behaviour.
//
// Each function receives exactly len(dst)/block_elements whole blocks
// (Dequantize checks the sizes), so slicing cannot fail on any input bytes.

func init() {
	dequantizers[F32] = dequantF32
	dequantizers[F16] = dequantF16
	dequantizers[BF16] = dequantBF16
}

// signOf maps a sign bit (0 or 1) to the ±1 factor ggml multiplies by.
var signOf = [2]float32{1, -1}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// half reads a little-endian fp16 at b[0:2].
func half(b []byte) float32 { return FP16ToFloat32(le16(b)) }

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(le32(src[4*i:]))
	}
}

// fp16Table holds FP16ToFloat32 of every half (256 KiB), built on the first
// F16 tensor: a load is cheaper than the branches on unpredictable exponents.
var (
	fp16Table     *[1 << 16]float32
	fp16TableOnce sync.Once
)

func dequantF16(src []byte, dst []float32) {
	fp16TableOnce.Do(func() {
		t := new([1 << 16]float32)
		for h := range t {
			t[h] = FP16ToFloat32(uint16(h))
		}
		fp16Table = t
	})
	tab := fp16Table
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = tab[le16(src[2*i:])]
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BF16ToFloat32(le16(src[2*i:]))
	}
}

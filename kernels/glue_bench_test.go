package kernels

import (
	"fmt"
	"testing"
)

// flushBuf is read through to evict the caches.
var flushBuf []float32

func flushCaches() float32 {
	if flushBuf == nil {
		flushBuf = make([]float32, 64<<20/4*2)
	}
	var s float32
	for i := 0; i < len(flushBuf); i += 16 {
		s += flushBuf[i]
	}
	return s
}

// BenchmarkQuantizeQ8Row quantizes rows of the decode's widths, in cache,
// after the caches were flushed with the input read back (cold-out) and
// with nothing read back (cold-all).
func BenchmarkQuantizeQ8Row(b *testing.B) {
	for _, n := range []int{640, 2560, 4096} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%37)*0.013 - 0.2
		}
		var r Q8Row
		QuantizeQ8Row(x, &r)
		for _, cold := range []string{"warm", "cold-out", "cold-all"} {
			b.Run(fmt.Sprint(n, cold), func(b *testing.B) {
				var sink float32
				for i := 0; i < b.N; i++ {
					if cold != "warm" {
						b.StopTimer()
						sink += flushCaches()
						if cold == "cold-out" {
							for j := range x {
								sink += x[j]
							}
						}
						b.StartTimer()
					}
					QuantizeQ8Row(x, &r)
				}
				_ = sink
			})
		}
	}
}

// BenchmarkAttnLayout is a decode layer's AttnScores and AttnSum at 32
// positions (32 query heads over 4 KV heads of 128) with the keys and
// values at a stride of all the KV heads' (position-major) or one head's
// (head-major, the engine's cache).
func BenchmarkAttnLayout(b *testing.B) {
	const n, d, kvh, group = 32, 128, 4, 8
	k := make([]float32, n*kvh*d)
	v := make([]float32, n*kvh*d)
	for i := range k {
		k[i], v[i] = float32(i%13)*0.1, float32(i%7)*0.1
	}
	q := make([]float32, d)
	o := make([]float32, d)
	sc := make([]float32, n)
	for _, hm := range []bool{false, true} {
		b.Run(fmt.Sprint("headmajor=", hm), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for h := 0; h < kvh*group; h++ {
					g := h / group
					if hm {
						AttnScores(sc, q, k[g*n*d:], d, 0.1)
						AttnSum(o, sc, v[g*n*d:], d)
					} else {
						AttnScores(sc, q, k[g*d:], kvh*d, 0.1)
						AttnSum(o, sc, v[g*d:], kvh*d)
					}
				}
			}
		})
	}
}

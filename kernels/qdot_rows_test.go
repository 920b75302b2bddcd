package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// guardedQ8RowQ2 is guardedQ8Row with the plane-order codes too: zero to the
// end of the last group, then a band of 127s.
func guardedQ8RowQ2(r *Q8Row, shift int, pad bool) *Q8Row {
	g := guardedQ8Row(r, shift, pad)
	n := len(r.qs)
	pn := n
	if pad {
		pn = (n + 255) / 256 * 256
	}
	const band = 64
	buf := make([]int8, band+shift+pn+band)
	for i := range buf {
		buf[i] = 127
	}
	lo := band + shift
	g.q2 = buf[lo : lo+n : lo+pn]
	clear(g.q2[:pn])
	if pad {
		q2PlaneOrder(g.q2[:pn], g.qs[:pn])
		// The partial group's planes twice (Q8Row.q2t), between bands too.
		if t := q2TailPlanes(nil, g.q2[:pn], len(g.d)); len(t) > 0 {
			tb := make([]int8, band+len(t)+band)
			for i := range tb {
				tb[i] = 127
			}
			g.q2t = tb[band : band+len(t) : band+len(t)]
			copy(g.q2t, t)
		}
	} else {
		copy(g.q2, r.q2[:n])
	}
	return g
}

// TestQ8RowsMatchPortable: the multi-row kernels (MatVecQ8's path; Q2_0's
// four-row kernel where the CPU has VBMI and GFNI, and the one-row kernel
// of the sets without; each Q2_0 row kernel of q2RowSets; every walk of Q8_0's streams, q8StreamSets) give
// the portable DotQ8's bits for every row, over every whole number of
// blocks up to 4096 weights, on unaligned rows and activations between
// guard bands, any row range, and write nothing outside it.
func TestQ8RowsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	sets := append(testSets(), q8StreamSets()...) // the Q8_0 walks' only on Q8_0's rows
	sets = append(sets, q2RowSets()...)           // and the Q2_0 row kernels' on Q2_0's
	var r Q8Row
	for _, typ := range q8Types {
		ti, _ := quant.Info(typ)
		for n := ti.BlockElements; n <= 4096; n += ti.BlockElements {
			rows := 1 + rng.IntN(12) // the multi-row kernels' parts and the rows left over
			var raw []byte
			for i := 0; i < rows; i++ {
				if rng.IntN(4) == 0 {
					raw = append(raw, randomBlocks(rng, typ, n/ti.BlockElements)...) // special scales too
				} else {
					raw = append(raw, randomRow(rng, typ, n)...)
				}
			}
			data := guardedBytes(raw, rng.IntN(8))
			m, err := NewMatrix(typ, data, n, rows)
			if err != nil {
				t.Fatal(err)
			}
			if err := QuantizeQ8Row(gaussians(rng, n, 1), &r); err != nil {
				t.Fatal(err)
			}
			for xi, x := range []*Q8Row{&r, guardedQ8RowQ2(&r, rng.IntN(8), true), guardedQ8RowQ2(&r, rng.IntN(8), false)} {
				lo := rng.IntN(rows)
				hi := lo + 1 + rng.IntN(rows-lo)
				for _, s := range sets {
					out, ok := guardedFloats(rows, rng.IntN(4))
					for i := range out {
						out[i] = math.Float32frombits(guard)
					}
					// A row kernel takes every row QuantizeQ8Row makes, and
					// padded copies of them (the AVX2 Q8_0 kernel, of the
					// sets without AVX-512 VNNI and its walks, only rows of
					// whole groups of 8 blocks).
					avx2Q8 := typ == quant.Q8_0 && (strings.HasPrefix(s.name, "avx2-") || strings.Contains(s.name, "avx512vnni=false"))
					takes := xi < 2 && (!avx2Q8 || n%256 == 0)
					if f := s.k.q8rows[typ]; f != nil && takes && !f(&m, lo, hi, x, out) {
						t.Fatalf("%s n=%d on %s: the row kernel refused a padded row", typ, n, s.name)
					}
					s.k.dotQ8Range(&m, lo, hi, x, out)
					for i := range out {
						if i < lo || i >= hi {
							if math.Float32bits(out[i]) != guard {
								t.Fatalf("%s n=%d on %s: rows [%d, %d) wrote out[%d]", typ, n, s.name, lo, hi, i)
							}
							continue
						}
						want := portable.dotQ8(typ, m.Row(i), x)
						if !sameFloat(out[i], want) {
							t.Fatalf("%s n=%d rows=%d on %s: row %d: %g (%#08x), portable %g (%#08x)", typ, n, rows, s.name, i, out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
						}
					}
					if !ok() {
						t.Fatalf("%s n=%d on %s: wrote outside out", typ, n, s.name)
					}
				}
			}
		}
	}
}

// TestQ8LanesMatchPortable: the lane kernels (kernelSet.q8lanes, the
// pool's row claims' walk: Q8_0's streams on AVX-512 VNNI, Q2_0's four-row
// kernel with VBMI and GFNI) give the portable DotQ8's bits for every row
// of their lanes, over every whole number of blocks up to 4096 weights, on
// unaligned rows and activations between guard bands, any lane length and
// steps, and write nothing outside the lanes' rows; through rowPiece.dot
// also where they refuse x, and the rows after the lanes.
func TestQ8LanesMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	var r Q8Row
	tested := 0
	for _, typ := range q8Types {
		ti, _ := quant.Info(typ)
		for n := ti.BlockElements; n <= 4096; n += ti.BlockElements {
			for _, s := range testSets() {
				L := s.k.lanes[typ]
				if s.k.q8lanes[typ] == nil {
					continue
				}
				lane := 1 + rng.IntN(6)
				steps := 1 + rng.IntN(lane)
				row := rng.IntN(3)
				rows := row + L*lane + rng.IntN(4) // rows after the lanes too
				var raw []byte
				for i := 0; i < rows; i++ {
					if rng.IntN(4) == 0 {
						raw = append(raw, randomBlocks(rng, typ, n/ti.BlockElements)...)
					} else {
						raw = append(raw, randomRow(rng, typ, n)...)
					}
				}
				m, err := NewMatrix(typ, guardedBytes(raw, rng.IntN(8)), n, rows)
				if err != nil {
					t.Fatal(err)
				}
				if err := QuantizeQ8Row(gaussians(rng, n, 1), &r); err != nil {
					t.Fatal(err)
				}
				for xi, x := range []*Q8Row{&r, guardedQ8RowQ2(&r, rng.IntN(8), true), guardedQ8RowQ2(&r, rng.IntN(8), false)} {
					a := rng.IntN(lane - steps + 1) // steps [a, a+steps) of the lanes
					pc := rowPiece{row: row, rows: rows - row, lanes: L, lane: lane}
					if xi == 2 {
						pc.rows = L * lane // no rows after: the kernel refuses x, the fallback runs
					}
					b := a + steps
					if pc.rows > L*lane && rng.IntN(2) == 0 {
						b = lane + 1 // and the step after the lanes
					}
					want := map[int]bool{}
					for k := range pc.ranges(a, b) {
						lo, hi := pc.rowRange(a, b, k)
						for i := lo; i < hi; i++ {
							want[i] = true
						}
					}
					out, ok := guardedFloats(rows, rng.IntN(4))
					for i := range out {
						out[i] = math.Float32frombits(guard)
					}
					if xi < 2 && !s.k.q8lanes[typ](&m, row+a, steps, lane, x, out) {
						t.Fatalf("%s n=%d on %s: the lane kernel refused a padded row", typ, n, s.name)
					}
					pc.dot(s.k, &m, a, b, x, out)
					for i := range out {
						if !want[i] {
							if math.Float32bits(out[i]) != guard {
								t.Fatalf("%s n=%d on %s: steps [%d, %d) of %d lanes of %d from row %d wrote out[%d]", typ, n, s.name, a, b, L, lane, row, i)
							}
							continue
						}
						if w := portable.dotQ8(typ, m.Row(i), x); !sameFloat(out[i], w) {
							t.Fatalf("%s n=%d on %s: row %d: %g (%#08x), portable %g (%#08x)", typ, n, s.name, i, out[i], math.Float32bits(out[i]), w, math.Float32bits(w))
						}
					}
					if !ok() {
						t.Fatalf("%s n=%d on %s: wrote outside out", typ, n, s.name)
					}
					tested++
				}
			}
		}
	}
	if asmBuild && (hostCPU.avx512vnni) && tested == 0 {
		t.Fatal("no lane kernel tested on a CPU with AVX-512 VNNI")
	}
}

// TestQ2PlaneOrder: QuantizeQ8Row's plane-order copy is the permutation
// Q8Row.q2 documents, zero past the row to the end of its group.
func TestQ2PlaneOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	var r Q8Row
	for _, n := range []int{32, 64, 224, 256, 640, 2560, 4096} {
		if err := QuantizeQ8Row(gaussians(rng, n, 1), &r); err != nil {
			t.Fatal(err)
		}
		pn := (n + 255) / 256 * 256
		q2 := r.q2[:pn]
		for g := 0; g < pn; g += 256 {
			for k := 0; k < 4; k++ {
				for b := 0; b < 4; b++ {
					for i := 0; i < 16; i++ {
						var want int8
						if e := g + 64*b + 4*i + k; e < n {
							want = r.qs[e]
						}
						if got := q2[g+64*k+16*b+i]; got != want {
							t.Fatalf("n=%d group %d plane %d block %d byte %d: %d, want %d", n, g/256, k, b, i, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkMatVecQ8Rows is MatVecQ8 on one thread over about 256 KiB of
// rows (in L2) at the field expert shape's widths: the in-cache rate of the
// multi-row kernels (bytes/s are weight bytes).
func BenchmarkMatVecQ8Rows(b *testing.B) {
	rng := rand.New(rand.NewPCG(77, 78))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q2_0} {
		for _, cols := range []int{640, 2560} {
			rb, _ := quant.RowBytes(typ, int64(cols))
			rows := (256 << 10) / int(rb)
			var data []byte
			for r := 0; r < rows; r++ {
				data = append(data, randomRow(rng, typ, cols)...)
			}
			m, err := NewMatrix(typ, data, cols, rows)
			if err != nil {
				b.Fatal(err)
			}
			var x Q8Row
			if err := QuantizeQ8Row(gaussians(rng, cols, 1), &x); err != nil {
				b.Fatal(err)
			}
			out := make([]float32, rows)
			p := NewPool(1)
			b.Run(fmt.Sprintf("%s/%d", typ, cols), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					p.MatVecQ8(&m, &x, out)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
	}
}

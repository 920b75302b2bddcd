package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestKMinDecodersMatchPortable: every kernel set's decoder of the min
// tiles (and Q3_K's halves decoder, and the one-block rows decoders) writes exactly the portable decoder's
// codes, scales, mins and factors (kSub's), for the groups asked only, on
// raw random blocks (NaN, infinite and subnormal scales among them) between
// guard bands.
func TestKMinDecodersMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	const groups = 20
	for _, typ := range []quant.Type{quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		row := guardedBytes(randomBlocks(rng, typ, groups), rng.IntN(8))
		for _, s := range testSets() {
			for g0 := 0; g0 < groups; g0 += 3 {
				chunk := kminGroups
				if typ == quant.Q3_K {
					chunk = decodedGroups
				}
				for ng := 1; ng <= min(chunk, groups-g0); ng++ {
					if typ == quant.Q3_K {
						if s.k.q8decodeHalves[typ] == nil {
							continue
						}
						var got q8Decoded
						for i := range got.w {
							got.w[i] = 0x55
						}
						s.k.q8decodeHalves[typ](row, g0, ng, &got)
						for i := 0; i < 8*decodedGroups; i++ {
							var w [32]int8
							var m0, m1 int32
							var dw float32
							if i < 8*ng {
								m0, m1, dw = halvesSub(typ, row, 8*g0+i, &w)
							} else {
								w = [32]int8{0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
									0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}
							}
							if [32]int8(got.w[32*i:32*i+32]) != w || i < 8*ng && (int32(got.mh[2*i]) != m0 || int32(got.mh[2*i+1]) != m1 || !sameFloat(got.dw[i], dw)) {
								t.Fatalf("%s groups %d+%d on %s: sub-block %d: w %v mh %d %d dw %g, want %v %d %d %g",
									typ, g0, ng, s.name, i, got.w[32*i:32*i+32], got.mh[2*i], got.mh[2*i+1], got.dw[i], w, m0, m1, dw)
							}
						}
						continue
					}
					var want, got kDecoded
					for i := range got.w {
						got.w[i], want.w[i] = 0x55, 0x55
					}
					for i := range got.sc {
						got.sc[i], want.sc[i], got.mn[i], want.mn[i] = 0x5555, 0x5555, 0x5555, 0x5555
					}
					decodeKMinPortable(typ, row, g0, ng, &want)
					s.k.decodeKMin(typ, row, g0, ng, &got)
					if got.w != want.w || got.sc != want.sc || got.mn != want.mn {
						t.Fatalf("%s groups %d+%d on %s: codes, scales or mins differ from kSub's", typ, g0, ng, s.name)
					}
					for i := range want.d {
						if !sameFloat(got.d[i], want.d[i]) || !sameFloat(got.dmin[i], want.dmin[i]) {
							t.Fatalf("%s groups %d+%d on %s: sub-block %d: d %g dmin %g, want %g %g", typ, g0, ng, s.name, i, got.d[i], got.dmin[i], want.d[i], want.dmin[i])
						}
					}
					// The tiles' layout: plane order where the set's
					// kernel reads it; the rest as decodeKMin's.
					var tile kDecoded
					for i := range tile.w {
						tile.w[i] = 0x55
					}
					for i := range tile.sc {
						tile.sc[i], tile.mn[i] = 0x5555, 0x5555
					}
					for i := range tile.d[:8*ng] {
						tile.d[i], tile.dmin[i] = math.Float32frombits(guard), math.Float32frombits(guard)
					}
					s.k.decodeKMinTile(typ, row, g0, ng, &tile)
					if s.k.kminPlanes() {
						copy(want.w[:], planesRef(want.w[:256*ng], 0))
					}
					same := tile.w == want.w && tile.sc == got.sc && tile.mn == got.mn
					for i := range got.d {
						same = same && sameFloat(tile.d[i], got.d[i]) && sameFloat(tile.dmin[i], got.dmin[i])
					}
					if !same {
						t.Fatalf("%s groups %d+%d on %s: the tiles' decode differs (plane order: %v)", typ, g0, ng, s.name, s.k.kminPlanes())
					}
				}
				// The row's blocks as rows of one block: kminDecodeRows
				// writes each as decodeKMinTile does, nothing past row n.
				dec := s.k.kminDecodeRows[typ]
				if dec == nil {
					continue
				}
				ti, _ := quant.Info(typ)
				for n := 1; n <= min(qmmRows, groups-g0); n++ {
					var got, want [qmmRows]kDecoded
					for i := range got {
						for j := range got[i].w {
							got[i].w[j], want[i].w[j] = 0x55, 0x55
						}
					}
					for i := 0; i < n; i++ {
						s.k.decodeKMinTile(typ, row[ti.BlockBytes*(g0+i):ti.BlockBytes*(g0+i+1)], 0, 1, &want[i])
					}
					dec(row[ti.BlockBytes*g0:ti.BlockBytes*(g0+n)], n, &got)
					for i := range got {
						same := got[i].w == want[i].w && got[i].sc == want[i].sc && got[i].mn == want[i].mn
						for j := range got[i].d {
							same = same && sameFloat(got[i].d[j], want[i].d[j]) && sameFloat(got[i].dmin[j], want[i].dmin[j])
						}
						if !same {
							t.Fatalf("%s rows %d+%d on %s: row %d differs from decodeKMinTile's", typ, g0, n, s.name, i)
						}
					}
				}
			}
		}
	}
}

// TestKTilesGuarded: for the K-quants the tiled product (every kernel set's
// min or halves tiles, MatMulQ8 on 1 and 3 threads, DotQ8Rows) gives the
// per-token DotQ8's bits (the portable path) for every row and input, over
// every whole-block length 0..4096 (256 several times), row counts that leave partial tiles,
// odd and even input counts (an odd last one paired with itself), unaligned
// rows and activations between guard bands, writing nothing outside its
// output.
func TestKTilesGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	// Every whole-block length to 4096, and rows of one block (the
	// one-group kernels, kminTile1G) five times more.
	var lengths []int
	for n := 0; n <= 4096; n += 256 {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 256, 256, 256, 256, 256)
	for _, typ := range []quant.Type{quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		for _, n := range lengths {
			rows := 1 + rng.IntN(2*qmmRows+3)
			ntok := []int{1, 2, 3, 8, 9, 17}[rng.IntN(6)]
			var data []byte
			for r := 0; r < rows; r++ {
				if rng.IntN(4) == 0 {
					data = append(data, randomBlocks(rng, typ, n/256)...)
				} else {
					data = append(data, randomRow(rng, typ, n)...)
				}
			}
			data = guardedBytes(data, rng.IntN(8))
			xs := make([]*Q8Row, ntok)
			for i := range xs {
				var q Q8Row
				if err := QuantizeQ8Row(gaussians(rng, n, []float64{1e-3, 1, 1e3}[rng.IntN(3)]), &q); err != nil {
					t.Fatal(err)
				}
				xs[i] = guardedQ8Row(&q, rng.IntN(8), rng.IntN(2) == 0)
			}
			if n == 0 {
				out := make([]float32, ntok)
				DotQ8Rows(typ, data, xs, out)
				for i, v := range out {
					if v != 0 || math.Signbit(float64(v)) {
						t.Fatalf("%s n=0: DotQ8Rows input %d is %g", typ, i, v)
					}
				}
				continue
			}
			m, err := NewMatrix(typ, data, n, rows)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, ntok*rows)
			for i, x := range xs {
				for r := 0; r < rows; r++ {
					want[i*rows+r] = portable.dotQ8(typ, m.Row(r), x)
				}
			}
			check := func(what string, got []float32, ok func() bool) {
				t.Helper()
				for i := range want {
					if !sameFloat(got[i], want[i]) {
						t.Fatalf("%s n=%d rows=%d inputs=%d %s: input %d row %d is %g, DotQ8 %g", typ, n, rows, ntok, what, i/rows, i%rows, got[i], want[i])
					}
				}
				if !ok() {
					t.Fatalf("%s n=%d %s: wrote outside out", typ, n, what)
				}
			}
			for _, s := range testSets() {
				out, ok := guardedFloats(ntok*rows, rng.IntN(4))
				outs := make([][]float32, ntok)
				for i := range outs {
					outs[i] = out[i*rows : (i+1)*rows]
				}
				s.k.matMulQ8Tiles(&m, xs, outs, 0, rows, new(qmmScratch))
				check(s.name, out, ok)
			}
			for _, th := range []int{1, 3} {
				out, ok := guardedFloats(ntok*rows, rng.IntN(4))
				NewPool(th).MatMulQ8(&m, xs, out)
				check(fmt.Sprintf("MatMulQ8 on %d threads", th), out, ok)
			}
			r := rng.IntN(rows)
			out, ok := guardedFloats(ntok, rng.IntN(4))
			DotQ8Rows(typ, m.Row(r), xs, out)
			for i, x := range xs {
				if w := portable.dotQ8(typ, m.Row(r), x); !sameFloat(out[i], w) {
					t.Fatalf("%s n=%d DotQ8Rows row %d input %d: %g, DotQ8 %g", typ, n, r, i, out[i], w)
				}
			}
			if !ok() {
				t.Fatalf("%s n=%d DotQ8Rows wrote outside out", typ, n)
			}
		}
	}
}

// TestKTilesAgainstExact: on ggml's own K-quant rows (the fixtures) the
// tiled product's error against the exact mode (Dot on the float32
// activations) stays within the activation quantization's bound
// (q8ErrorBound), with the tiles taken (enough inputs for them).
func TestKTilesAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(85, 86))
	for _, typ := range []quant.Type{quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		q, cols, rows := kFixture(t, typ)
		ntok := max(host.tileMinInputs(typ, cols), 9)
		if !tiledQ8(typ) {
			t.Fatalf("%s: not in the tiles", typ)
		}
		ti, _ := quant.Info(typ)
		m, err := NewMatrix(typ, q[:rows*cols/ti.BlockElements*ti.BlockBytes], cols, rows)
		if err != nil {
			t.Fatal(err)
		}
		xf := make([][]float32, ntok)
		xs := make([]*Q8Row, ntok)
		for i := range xs {
			xf[i] = gaussians(rng, cols, 1)
			xs[i] = new(Q8Row)
			if err := QuantizeQ8Row(xf[i], xs[i]); err != nil {
				t.Fatal(err)
			}
		}
		out := make([]float32, ntok*rows)
		NewPool(2).MatMulQ8(&m, xs, out)
		w := make([]float32, cols)
		scratch := make([]float32, cols)
		var worst float64
		for r := 0; r < rows; r++ {
			if err := quant.Dequantize(typ, m.Row(r), w); err != nil {
				t.Fatal(err)
			}
			for i := range xs {
				exact := Dot(typ, m.Row(r), xf[i], scratch)
				e, bound := math.Abs(float64(out[i*rows+r])-float64(exact)), q8ErrorBound(w, xf[i])
				if !(e <= bound) {
					t.Fatalf("%s fixture row %d input %d: tiled %g exact %g, error %g over the bound %g", typ, r, i, out[i*rows+r], exact, e, bound)
				}
				if bound > 0 {
					worst = max(worst, e/bound)
				}
			}
		}
		t.Logf("%s: %d fixture rows x %d inputs: largest error %.3g of the bound", typ, rows, ntok, worst)
	}
}

// BenchmarkMatMulQ8K: the K-quants' tiled product against one DotQ8 per
// element at the field's gate or up shape (640 rows of 2560) and a down
// projection of 2560 rows of 768 (a K-quant row is whole blocks of 256, so
// the field's 640 is none) and the tiny test models' 256 x 256 experts
// (one block a row, a few inputs each), at several input counts, on one thread, in
// multiply-adds per CPU-second (MatMulQ8 takes the tiles from
// tileMinInputs on; "tiles" runs them at every count).
func BenchmarkMatMulQ8K(b *testing.B) {
	rng := rand.New(rand.NewPCG(87, 88))
	for _, typ := range []quant.Type{quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		for _, sh := range []struct{ rows, cols int }{{640, 2560}, {2560, 768}, {256, 256}} {
			data, err := SampleBlocks(typ, sh.rows*sh.cols/256, 7)
			if err != nil {
				b.Fatal(err)
			}
			m, err := NewMatrix(typ, data, sh.cols, sh.rows)
			if err != nil {
				b.Fatal(err)
			}
			for _, ntok := range []int{2, 3, 4, 8, 16, 64} {
				xs := make([]*Q8Row, ntok)
				for i := range xs {
					xs[i] = new(Q8Row)
					if err := QuantizeQ8Row(gaussians(rng, sh.cols, 1), xs[i]); err != nil {
						b.Fatal(err)
					}
				}
				out := make([]float32, ntok*sh.rows)
				outs := make([][]float32, ntok)
				for i := range outs {
					outs[i] = out[i*sh.rows : (i+1)*sh.rows]
				}
				macs := float64(sh.rows * sh.cols * ntok)
				run := func(name string, f func()) {
					b.Run(fmt.Sprintf("%s/%dx%d/%d/%s", typ, sh.rows, sh.cols, ntok, name), func(b *testing.B) {
						cpu := processCPU()
						for b.Loop() {
							f()
						}
						reportCPURate(b, float64(b.N)*macs, processCPU()-cpu, "cpu-GMAC/s")
					})
				}
				sc := new(qmmScratch) // as the pool's, kept between calls
				run("tiles", func() { host.matMulQ8Tiles(&m, xs, outs, 0, sh.rows, sc) })
				run("each", func() {
					for r := 0; r < sh.rows; r++ {
						for t, x := range xs {
							out[t*sh.rows+r] = DotQ8(typ, m.Row(r), x)
						}
					}
				})
			}
		}
	}
}

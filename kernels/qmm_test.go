package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestDecodeChunkMatchesWeightSub: the tiles' decoder (vector decoders for
// whole groups, decodeSub for the rest) writes weightSub's integers,
// multipliers and scales for every sub-block of the row and zeros past its
// end, on every kernel set, over rows with partial last groups.
func TestDecodeChunkMatchesWeightSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, typ := range q8Types {
		if !tiledQ8(typ) || kMinTiled(typ) {
			continue // the min tiles' decoder: TestKMinDecodersMatchPortable
		}
		ti, _ := quant.Info(typ)
		for _, nsub := range []int{1, 7, 8, 9, 20, 24, 33} {
			if 32*nsub%ti.BlockElements != 0 {
				continue
			}
			row := guardedBytes(randomBlocks(rng, typ, 32*nsub/ti.BlockElements), rng.IntN(8))
			groups := (nsub + 7) / 8
			for _, s := range testSets() {
				for g0 := 0; g0 < groups; g0 += 2 {
					ng := min(decodedGroups, groups-g0, 1+rng.IntN(3))
					var d q8Decoded
					var pad [q8GroupBytesMax]byte
					for i := range d.w {
						d.w[i] = 0x55
					}
					for i := range pad {
						pad[i] = 0x55
					}
					s.k.decodeChunk(typ, row, nsub, g0, ng, &d, &pad)
					for i := 0; i < 8*ng; i++ {
						sub := 8*g0 + i
						var w [32]int8
						var m, m0, m1 int32
						var dw float32
						if sub < nsub {
							if tileHalves(typ) {
								m0, m1, dw = halvesSub(typ, row, sub, &w)
							} else {
								m, dw = weightSub(typ, row, sub, &w)
							}
						}
						if tileHalves(typ) && (int32(d.mh[2*i]) != m0 || int32(d.mh[2*i+1]) != m1) {
							t.Fatalf("%s nsub=%d on %s: sub-block %d: multipliers %d %d, want %d %d", typ, nsub, s.name, sub, d.mh[2*i], d.mh[2*i+1], m0, m1)
						}
						if int32(d.m[i]) != m || !sameFloat(d.dw[i], dw) || [32]int8(d.w[32*i:32*i+32]) != w {
							t.Fatalf("%s nsub=%d on %s: sub-block %d: m %d dw %g w %v, want %d %g %v", typ, nsub, s.name, sub, d.m[i], d.dw[i], d.w[32*i:32*i+32], m, dw, w)
						}
					}
				}
			}
		}
	}
}

// planesRef is tilePlanes portably: each group of 256 codes of src in
// plane order (sub-block s's dword k at 8k+s), each byte XOR bias.
func planesRef(src []int8, bias byte) []int8 {
	out := make([]int8, len(src)/256*256)
	for g := 0; g < len(src)/256; g++ {
		for s := 0; s < 8; s++ {
			for k := 0; k < 8; k++ {
				for j := 0; j < 4; j++ {
					out[256*g+32*k+4*s+j] = src[256*g+32*s+4*k+j] ^ int8(bias)
				}
			}
		}
	}
	return out
}

// TestDecodeChunkPlanes: decodeChunkPlanes gives decodeChunk's weights in
// plane order, biased, its scales and, but for the sub-blocks past the
// row (whose terms are +0 whatever their weights), its multipliers; and
// tilePlanes is planesRef.
func TestDecodeChunkPlanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	for _, s := range testSets() {
		if s.k.tilePlanes == nil {
			continue
		}
		src := make([]int8, 256*(1+rng.IntN(20)))
		for i := range src {
			src[i] = int8(rng.Uint32())
		}
		for _, bias := range []byte{0, 0x80} {
			got := make([]int8, len(src)+7)
			for i := range got[len(src):] {
				got[len(src)+i] = 0x55
			}
			s.k.tilePlanes(got[:len(src)], src, bias)
			if want := planesRef(src, bias); !slices.Equal(got[:len(src)], want) || !slices.Equal(got[len(src):], []int8{0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}) {
				t.Fatalf("tilePlanes on %s, bias %#x: %v, want %v", s.name, bias, got, want)
			}
		}
		for _, typ := range q8Types {
			if !tiledQ8(typ) || kMinTiled(typ) || tileHalves(typ) {
				continue
			}
			ti, _ := quant.Info(typ)
			for _, nsub := range []int{1, 7, 8, 9, 20, 24, 33, 64, 70} {
				if 32*nsub%ti.BlockElements != 0 {
					continue
				}
				row := guardedBytes(randomBlocks(rng, typ, 32*nsub/ti.BlockElements), rng.IntN(8))
				groups := (nsub + 7) / 8
				for g0 := 0; g0 < groups; g0 += 2 {
					ng := min(decodedGroups, groups-g0, 1+rng.IntN(decodedGroups))
					var want, got q8Decoded
					var pad [q8GroupBytesMax]byte
					s.k.decodeChunk(typ, row, nsub, g0, ng, &want, &pad)
					s.k.decodeChunkPlanes(typ, row, nsub, g0, ng, &got, &pad)
					wp := planesRef(want.w[:256*ng], 0x80)
					for i := 0; i < 8*ng; i++ {
						if 8*g0+i >= nsub {
							if !sameFloat(got.dw[i], 0) {
								t.Fatalf("%s nsub=%d on %s: padded sub-block %d: dw %g", typ, nsub, s.name, 8*g0+i, got.dw[i])
							}
							continue
						}
						g, sb := i/8, i%8
						for k := 0; k < 8; k++ {
							o := 256*g + 32*k + 4*sb
							if [4]int8(got.w[o:o+4]) != [4]int8(wp[o:o+4]) {
								t.Fatalf("%s nsub=%d g0=%d on %s: sub-block %d plane %d: %v, want %v", typ, nsub, g0, s.name, 8*g0+i, k, got.w[o:o+4], wp[o:o+4])
							}
						}
						if got.m[i] != want.m[i] || !sameFloat(got.dw[i], want.dw[i]) {
							t.Fatalf("%s nsub=%d on %s: sub-block %d: m %d dw %g, want %d %g", typ, nsub, s.name, 8*g0+i, got.m[i], got.dw[i], want.m[i], want.dw[i])
						}
					}
				}
			}
		}
	}
}

// TestMatMulQ8TilesGuarded: the tiled product gives the portable DotQ8's
// bits for every row and input, over every whole-block length 0..4096, row
// counts that leave partial tiles, odd and even input counts, unaligned
// rows and activations between guard bands (padded or not), writing
// nothing outside its output, on every kernel set and at any thread count.
func TestMatMulQ8TilesGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for _, typ := range q8Types {
		ti, _ := quant.Info(typ)
		step := max(ti.BlockElements, 32)
		for n := 0; n <= 4096; n += step {
			if n > 1024 && rng.IntN(3) != 0 {
				continue // every length to 1024, a third of the rest
			}
			rows := 1 + rng.IntN(2*qmmRows+3)
			ntok := []int{1, 2, 3, 4, 7, 17}[rng.IntN(6)]
			var data []byte
			for r := 0; r < rows; r++ {
				if rng.IntN(4) == 0 {
					data = append(data, randomBlocks(rng, typ, n/ti.BlockElements)...)
				} else {
					data = append(data, randomRow(rng, typ, n)...)
				}
			}
			data = guardedBytes(data, rng.IntN(8))
			xs := make([]*Q8Row, ntok)
			pad := rng.IntN(4) != 0
			for i := range xs {
				var q Q8Row
				if err := QuantizeQ8Row(gaussians(rng, n, 1), &q); err != nil {
					t.Fatal(err)
				}
				xs[i] = guardedQ8Row(&q, rng.IntN(8), pad)
			}
			if n == 0 {
				continue // NewMatrix takes no empty rows; DotQ8Rows covers n = 0
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
						t.Fatalf("%s n=%d rows=%d inputs=%d pad=%v %s: input %d row %d is %g, DotQ8 %g", typ, n, rows, ntok, pad, what, i/rows, i%rows, got[i], want[i])
					}
				}
				if !ok() {
					t.Fatalf("%s n=%d %s: wrote outside out", typ, n, what)
				}
			}
			if tilePadded(xs, n/32) && tiledQ8(typ) {
				for _, s := range testSets() {
					out, ok := guardedFloats(ntok*rows, rng.IntN(4))
					outs := make([][]float32, ntok)
					for i := range outs {
						outs[i] = out[i*rows : (i+1)*rows]
					}
					s.k.matMulQ8Tiles(&m, xs, outs, 0, rows, new(qmmScratch))
					check(s.name, out, ok)
				}
			}
			for _, th := range []int{1, 2, 3, 7} {
				out, ok := guardedFloats(ntok*rows, rng.IntN(4))
				NewPool(th).MatMulQ8(&m, xs, out)
				check(fmt.Sprintf("MatMulQ8 on %d threads", th), out, ok)
			}
		}
	}
}

// TestMatMulQ8InputBlocks: calls of more inputs than one tile pass takes
// (qmmInputBlock) give DotQ8's bits for every input, the blocks' edges
// included, on every kernel set and thread count.
func TestMatMulQ8InputBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 60))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q2_0, quant.IQ4_NL, quant.IQ4_XS, quant.IQ2_XS, quant.Q6_K} {
		for _, n := range []int{640, 768} {
			ti, _ := quant.Info(typ)
			if n%ti.BlockElements != 0 {
				continue
			}
			rows := 1 + rng.IntN(qmmRows+5)
			m, err := NewMatrix(typ, randomRow(rng, typ, n*rows), n, rows)
			if err != nil {
				t.Fatal(err)
			}
			ntok := qmmInputBlock + 1 + rng.IntN(qmmInputBlock+8)
			xs := make([]*Q8Row, ntok)
			for i := range xs {
				xs[i] = new(Q8Row)
				if err := QuantizeQ8Row(gaussians(rng, n, 1), xs[i]); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range testSets() {
				out := make([]float32, ntok*rows)
				outs := make([][]float32, ntok)
				for i := range outs {
					outs[i] = out[i*rows : (i+1)*rows]
				}
				s.k.matMulQ8Tiles(&m, xs, outs, 0, rows, new(qmmScratch))
				for i, x := range xs {
					for r := 0; r < rows; r++ {
						if want := portable.dotQ8(typ, m.Row(r), x); !sameFloat(out[i*rows+r], want) {
							t.Fatalf("%s n=%d on %s: input %d of %d row %d is %g, DotQ8 %g", typ, n, s.name, i, ntok, r, out[i*rows+r], want)
						}
					}
				}
			}
			for _, th := range []int{1, 2} {
				out := make([]float32, ntok*rows)
				NewPool(th).MatMulQ8(&m, xs, out)
				for i, x := range xs {
					for r := 0; r < rows; r++ {
						if want := portable.dotQ8(typ, m.Row(r), x); !sameFloat(out[i*rows+r], want) {
							t.Fatalf("%s n=%d on %d threads: input %d row %d is %g, DotQ8 %g", typ, n, th, i, r, out[i*rows+r], want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkMatMulQ8: the tiled product at the field's expert shapes (gate
// or up: 640 rows of 2560; down: 2560 rows of 640) against 64 inputs, on
// one thread, in multiply-adds per second.
func BenchmarkMatMulQ8(b *testing.B) {
	rng := rand.New(rand.NewPCG(55, 56))
	for _, typ := range []quant.Type{quant.Q2_0, quant.Q8_0, quant.IQ4_NL, quant.IQ3_S, quant.IQ4_XS, quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ1_S, quant.MXFP4, quant.IQ2_XS, quant.IQ2_S, quant.IQ1_M, quant.Q6_K} {
		for _, sh := range []struct{ rows, cols int }{{640, 2560}, {2560, 640}} {
			ti, _ := quant.Info(typ)
			if sh.cols%ti.BlockElements != 0 {
				continue
			}
			data, err := SampleBlocks(typ, sh.rows*sh.cols/ti.BlockElements, 7)
			if err != nil {
				b.Fatal(err)
			}
			m, err := NewMatrix(typ, data, sh.cols, sh.rows)
			if err != nil {
				b.Fatal(err)
			}
			const ntok = 64
			xs := make([]*Q8Row, ntok)
			for i := range xs {
				xs[i] = new(Q8Row)
				if err := QuantizeQ8Row(gaussians(rng, sh.cols, 1), xs[i]); err != nil {
					b.Fatal(err)
				}
			}
			out := make([]float32, ntok*sh.rows)
			p := NewPool(1)
			macs := float64(sh.rows * sh.cols * ntok)
			b.Run(fmt.Sprintf("%s/%dx%d/tiled", typ, sh.rows, sh.cols), func(b *testing.B) {
				cpu := processCPU()
				for b.Loop() {
					p.MatMulQ8(&m, xs, out)
				}
				reportCPURate(b, float64(b.N)*macs, processCPU()-cpu, "cpu-GMAC/s")
			})
			b.Run(fmt.Sprintf("%s/%dx%d/each", typ, sh.rows, sh.cols), func(b *testing.B) {
				cpu := processCPU()
				for b.Loop() {
					for r := 0; r < sh.rows; r++ {
						for t, x := range xs {
							out[t*sh.rows+r] = DotQ8(typ, m.Row(r), x)
						}
					}
				}
				reportCPURate(b, float64(b.N)*macs, processCPU()-cpu, "cpu-GMAC/s")
			})
		}
	}
}

// TestQuantizeQ8RowSetsMatchPortable: every kernel set's activation
// quantizer writes the portable quantizer's codes, scales and sums, over
// every length 0..4096 and rows holding infinities, NaN, signed zeros,
// subnormals, huge values and exact halves (amax 127 makes id 1, so x = k
// + 0.5 must round away from zero).
func TestQuantizeQ8RowSetsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)),
		1e-40, -3e-45, 3e38, -3e38, 127, -127, 126.5, -126.5, 0.5, -0.5, 2.5, -3.5, 1.4999999, -1.5000001}
	reused := map[string]*Q8Row{}
	for _, s := range testSets() {
		reused[s.name] = new(Q8Row)
	}
	for n := 0; n <= 4096; n += 32 {
		x := gaussians(rng, n, []float64{1e-30, 1e-3, 1, 1e4, 1e30}[rng.IntN(5)])
		switch k := rng.IntN(4); {
		case k == 0 && n > 0: // one block of exact halves around amax 127
			b := rng.IntN(n / 32)
			for j := 0; j < 32; j++ {
				x[32*b+j] = float32(rng.IntN(254)-127) + 0.5
			}
			x[32*b] = 127
		case k == 1 && n > 0:
			for i := 0; i < 1+rng.IntN(4); i++ {
				x[rng.IntN(n)] = specials[rng.IntN(len(specials))]
			}
		}
		var want Q8Row
		if err := portable.quantizeQ8Row(x, &want); err != nil {
			t.Fatal(err)
		}
		for _, s := range testSets() {
			var got Q8Row
			if err := s.k.quantizeQ8Row(x, &got); err != nil {
				t.Fatal(err)
			}
			checkQ8RowPlanes(t, fmt.Sprintf("n=%d on %s", n, s.name), &got, &want)
			// A row reused after a longer one of other codes: its padding
			// (codes and planes) is zero again.
			if err := s.k.quantizeQ8Row(gaussians(rng, 4096, 1), reused[s.name]); err != nil {
				t.Fatal(err)
			}
			if err := s.k.quantizeQ8Row(x, reused[s.name]); err != nil {
				t.Fatal(err)
			}
			checkQ8RowPlanes(t, fmt.Sprintf("n=%d on %s, reused", n, s.name), reused[s.name], &want)
			for i := range want.qs {
				if got.qs[i] != want.qs[i] {
					t.Fatalf("n=%d on %s: code %d is %d, want %d (x %g)", n, s.name, i, got.qs[i], want.qs[i], x[i])
				}
			}
			for b := range want.d {
				if !sameFloat(got.d[b], want.d[b]) || got.sums[b] != want.sums[b] {
					t.Fatalf("n=%d on %s: block %d: d %g sum %d, want %g %d", n, s.name, b, got.d[b], got.sums[b], want.d[b], want.sums[b])
				}
			}
			if len(got.qs) != n || !got.padded(8*((len(got.d)-1)/8)) && n > 0 {
				t.Fatalf("n=%d on %s: %d codes, padded %v", n, s.name, len(got.qs), got.padded(0))
			}
		}
	}
}

// checkQ8RowPlanes fails unless got holds want's codes, scales and sums
// and its plane orders (q2 over the padded groups, q2t), padding included.
func checkQ8RowPlanes(t *testing.T, what string, got, want *Q8Row) {
	t.Helper()
	nb := len(want.d)
	pb := (nb + 7) / 8 * 8
	if len(got.d) != nb || cap(got.qs) < 32*pb || cap(got.q2) < 32*pb || len(got.q2) != len(want.q2) {
		t.Fatalf("%s: %d blocks (want %d), capacities %d, %d, q2 of %d (want %d)", what, len(got.d), nb, cap(got.qs), cap(got.q2), len(got.q2), len(want.q2))
	}
	for i, c := range want.qs[:32*pb] {
		if g := got.qs[:32*pb][i]; g != c {
			t.Fatalf("%s: code %d is %d, want %d", what, i, g, c)
		}
	}
	for i, c := range want.q2[:32*pb] {
		if g := got.q2[:32*pb][i]; g != c {
			t.Fatalf("%s: plane byte %d is %d, want %d", what, i, g, c)
		}
	}
	if !slices.Equal(got.q2t, want.q2t) {
		t.Fatalf("%s: tail planes %v, want %v", what, got.q2t, want.q2t)
	}
	for b := 0; b < pb; b++ {
		if !sameFloat(got.d[:pb][b], want.d[:pb][b]) || got.sums[:pb][b] != want.sums[:pb][b] {
			t.Fatalf("%s: block %d: d %g sum %d, want %g %d", what, b, got.d[:pb][b], got.sums[:pb][b], want.d[:pb][b], want.sums[:pb][b])
		}
	}
}

// TestMatMulQ8ToFewInputs: MatMulQ8To at the shapes where the row kernels
// take the call instead of the tiles (rowsBeatTiles: few inputs, rows
// shorter than a group) or the packed tiles do (packRows: rows of 1, 2 or
// 4 sub-blocks) and just past them gives DotQ8's bits for every row and
// input, at several thread counts, rows of several chunks (dotsChunkBytes)
// and more inputs than one block of the packed tiles included.
func TestMatMulQ8ToFewInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, typ := range q8Types {
		ti, _ := quant.Info(typ)
		for _, cols := range []int{32, 64, 96, 128, 224, 256, 512} {
			if cols%ti.BlockElements != 0 {
				continue
			}
			rows := 1 + rng.IntN(40)
			if cols == 64 {
				rows = dotsChunkBytes/(cols/ti.BlockElements*ti.BlockBytes) + 1 + rng.IntN(50)
			}
			if cols <= 128 && rng.IntN(3) > 0 {
				rows = rows / 8 * 8 // packable (packRows), most of the time
			}
			rows = max(rows, 1)
			m, err := NewMatrix(typ, randomRow(rng, typ, cols*rows), cols, rows)
			if err != nil {
				t.Fatal(err)
			}
			// (130: the packed tiles' second block of inputs, qmmInputBlock.)
			for _, ntok := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 130} {
				xs := make([]*Q8Row, ntok)
				for i := range xs {
					xs[i] = new(Q8Row)
					if err := QuantizeQ8Row(gaussians(rng, cols, 1), xs[i]); err != nil {
						t.Fatal(err)
					}
				}
				for _, th := range []int{1, 2, 3} {
					p := NewPool(th)
					outs := make([][]float32, ntok)
					for i := range outs {
						outs[i] = make([]float32, rows+1)
						outs[i][rows] = 12345 // past the rows: left alone
					}
					p.MatMulQ8To(&m, xs, outs)
					p.Close()
					for i, x := range xs {
						for r := 0; r < rows; r++ {
							if want := portable.dotQ8(typ, m.Row(r), x); !sameFloat(outs[i][r], want) {
								t.Fatalf("%s %d x %d, %d inputs on %d threads (rows path %v, packed %d): input %d row %d is %g, DotQ8 %g",
									typ, rows, cols, ntok, th, host.rowsBeatTiles(&m, ntok), host.packRows(&m), i, r, outs[i][r], want)
							}
						}
						if outs[i][rows] != 12345 {
							t.Fatalf("%s %d x %d, %d inputs: wrote past the rows", typ, rows, cols, ntok)
						}
					}
				}
			}
		}
	}
}

// BenchmarkMatMulQ8Small: the tiles against the row kernels one input at a
// time over chunks of rows (runMatMulQ8Dots' walk) and, for rows shorter
// than a group, the packed tiles (packRows), at the tiny models' expert
// shapes and a field one, at 2 to 16 inputs, on one thread, in
// multiply-adds per CPU-second: where rowsBeatTiles' crossings come from.
func BenchmarkMatMulQ8Small(b *testing.B) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, typ := range []quant.Type{quant.IQ4_NL, quant.Q8_0, quant.Q4_K, quant.Q6_K} {
		for _, sh := range []struct{ rows, cols int }{{64, 256}, {256, 64}, {256, 256}, {640, 2560}} {
			ti, _ := quant.Info(typ)
			if sh.cols%ti.BlockElements != 0 || host.q8rows[typ] == nil {
				continue
			}
			data, err := SampleBlocks(typ, sh.rows*sh.cols/ti.BlockElements, 7)
			if err != nil {
				b.Fatal(err)
			}
			m, err := NewMatrix(typ, data, sh.cols, sh.rows)
			if err != nil {
				b.Fatal(err)
			}
			for _, ntok := range []int{2, 3, 4, 6, 8, 12, 16} {
				xs := make([]*Q8Row, ntok)
				outs := make([][]float32, ntok)
				for i := range xs {
					xs[i] = new(Q8Row)
					if err := QuantizeQ8Row(gaussians(rng, sh.cols, 1), xs[i]); err != nil {
						b.Fatal(err)
					}
					outs[i] = make([]float32, sh.rows)
				}
				macs := float64(sh.rows * sh.cols * ntok)
				b.Run(fmt.Sprintf("%s/%dx%d/%d/tiles", typ, sh.rows, sh.cols, ntok), func(b *testing.B) {
					sc := new(qmmScratch)
					cpu := processCPU()
					for b.Loop() {
						host.matMulQ8Tiles(&m, xs, outs, 0, sh.rows, sc)
					}
					reportCPURate(b, float64(b.N)*macs, processCPU()-cpu, "cpu-GMAC/s")
				})
				b.Run(fmt.Sprintf("%s/%dx%d/%d/rows", typ, sh.rows, sh.cols, ntok), func(b *testing.B) {
					t := &task{m: &m, q8: xs, outs: outs}
					cpu := processCPU()
					for b.Loop() {
						t.runMatMulQ8Dots(0, sh.rows)
					}
					reportCPURate(b, float64(b.N)*macs, processCPU()-cpu, "cpu-GMAC/s")
				})
				if host.packRows(&m) > 1 {
					b.Run(fmt.Sprintf("%s/%dx%d/%d/packed", typ, sh.rows, sh.cols, ntok), func(b *testing.B) {
						p := NewPool(1)
						cpu := processCPU()
						for b.Loop() {
							p.MatMulQ8To(&m, xs, outs) // packRows: the packed tiles
						}
						reportCPURate(b, float64(b.N)*macs, processCPU()-cpu, "cpu-GMAC/s")
					})
				}
			}
		}
	}
}

// TestMatMulsQ8: several matrices of one column count (and of different
// types and rows, some not a whole tile) in one MatMulsQ8 pass give
// DotQ8's bits for every row of every matrix and input, at several input
// and thread counts, on both paths (tiles and row kernels).
func TestMatMulsQ8(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	for _, cols := range []int{64, 256, 512} {
		var ms []*Matrix
		for _, typ := range q8Types {
			ti, _ := quant.Info(typ)
			if cols%ti.BlockElements != 0 {
				continue
			}
			rows := 1 + rng.IntN(3*qmmRows)
			m, err := NewMatrix(typ, randomRow(rng, typ, cols*rows), cols, rows)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, &m)
		}
		for _, ntok := range []int{1, 2, 3, 5, 8, 17} {
			xs := make([]*Q8Row, ntok)
			for i := range xs {
				xs[i] = new(Q8Row)
				if err := QuantizeQ8Row(gaussians(rng, cols, 1), xs[i]); err != nil {
					t.Fatal(err)
				}
			}
			for _, th := range []int{1, 2, 3} {
				// Groups of 1 to 4 matrices, in turn.
				for g := 0; g < len(ms); {
					n := min(1+rng.IntN(4), len(ms)-g)
					group := ms[g : g+n]
					g += n
					outs := make([][]float32, n)
					for i, m := range group {
						outs[i] = make([]float32, ntok*m.Rows+1)
						outs[i][ntok*m.Rows] = 12345
					}
					p := NewPool(th)
					p.MatMulsQ8(group, xs, outs)
					p.Close()
					for i, m := range group {
						for k, x := range xs {
							for r := 0; r < m.Rows; r++ {
								if want := portable.dotQ8(m.Type, m.Row(r), x); !sameFloat(outs[i][k*m.Rows+r], want) {
									t.Fatalf("%s %d x %d (matrix %d of %d), %d inputs on %d threads: input %d row %d is %g, DotQ8 %g",
										m.Type, m.Rows, cols, i, n, ntok, th, k, r, outs[i][k*m.Rows+r], want)
								}
							}
						}
						if outs[i][ntok*m.Rows] != 12345 {
							t.Fatalf("%s %d x %d: wrote past the outputs", m.Type, m.Rows, cols)
						}
					}
				}
			}
		}
	}
}

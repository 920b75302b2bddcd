package kernels

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// q2Inputs are random and adversarial blocks: gaussian of many scales,
// values on the rounding boundaries of the candidate grids, one-hot blocks,
// ties, signed zeros, subnormals, huge and non-finite values.
func q2Inputs() map[string][]float32 {
	r := rand.New(rand.NewPCG(42, 7))
	in := map[string][]float32{}
	g := func(n int, scale float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
		return x
	}
	for _, s := range []float64{1e-9, 1e-6, 0.02, 1, 300, 6e4, 1e30} {
		in[fmt.Sprintf("gauss%g", s)] = g(64*256, s)
	}
	// Heavy tails and skew: cubes of gaussians, shifted blocks.
	cube := g(64*256, 1)
	for i := range cube {
		cube[i] = cube[i] * cube[i] * cube[i]
	}
	in["cubes"] = cube
	skew := g(64*256, 0.3)
	for i := range skew {
		skew[i] -= 1
	}
	in["skew"] = skew
	// Small integers and halves: many values land exactly on x*inv = k+0.5.
	ints := make([]float32, 64*256)
	for i := range ints {
		ints[i] = float32(r.IntN(9)-4) * 0.5
	}
	in["halves"] = ints
	// Few distinct values, one-hot and constant blocks, signed zeros.
	special := make([]float32, 0, 64*64)
	for b := 0; b < 64; b++ {
		blk := make([]float32, 64)
		switch b % 8 {
		case 0:
			blk[b%64] = float32(b + 1)
		case 1:
			for j := range blk {
				blk[j] = float32(math.Copysign(0, -1))
			}
		case 2:
			for j := range blk {
				blk[j] = 0.75
			}
		case 3:
			for j := range blk {
				blk[j] = math.Float32frombits(uint32(r.IntN(1 << 23))) // subnormals
			}
		case 4:
			for j := range blk {
				blk[j] = float32(j%4) - 1
			}
		case 5:
			blk[3], blk[9] = float32(math.Inf(1)), float32(math.NaN())
			blk[10] = 1
		case 6:
			blk[0], blk[1], blk[2] = math.MaxFloat32, -math.MaxFloat32, 7
		case 7:
			for j := range blk {
				blk[j] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.IntN(40)-20)))
			}
		}
		special = append(special, blk...)
	}
	in["special"] = special
	return in
}

func TestQ2SearchPathsIdentical(t *testing.T) {
	if !HasVectorQ2Search() {
		t.Log("no vector Q2 search on this CPU/build: only the portable path is compared with the reference")
	}
	r := rand.New(rand.NewPCG(3, 4))
	imp := make([]float32, 256)
	for i := range imp {
		v := float32(r.NormFloat64())
		imp[i] = v * v * v * v
	}
	imp[5], imp[6] = 0, float32(math.NaN())
	for name, x := range q2Inputs() {
		for _, opt := range []*quant.QuantizeOptions{
			nil,
			{Q2Candidates: 1},
			{Q2Candidates: 5},
			{Q2Candidates: 33},
			{Importance: imp, RowLen: 256},
			{Importance: imp, RowLen: 256, Q2Candidates: 3},
		} {
			want := make([]byte, len(x)/64*18)
			if err := quant.Quantize(quant.Q2_0, x, want, opt); err != nil {
				t.Fatal(err)
			}
			for _, s := range append(testSets(), namedSet{"portable", &portable}) {
				got := make([]byte, len(want))
				if err := s.k.quantizeQ2_0(x, got, opt); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					i := 0
					for got[i] == want[i] {
						i++
					}
					t.Fatalf("%s opt %+v on %s: first difference at byte %d (block %d): got %x want %x",
						name, opt, s.name, i, i/18, got[i/18*18:i/18*18+18], want[i/18*18:i/18*18+18])
				}
			}
		}
	}
}

func TestQ2KernelsMatchReference(t *testing.T) {
	// The kernels themselves, on single blocks at many inverse scales,
	// including ones that put elements exactly on rounding boundaries.
	if !HasVectorQ2Search() {
		t.Skip("no vector Q2 search kernels on this CPU/build")
	}
	k := host.q2
	r := rand.New(rand.NewPCG(9, 9))
	var x, w [64]float32
	inv := make([]float32, 40)
	for trial := 0; trial < 2000; trial++ {
		for j := range x {
			x[j] = float32(r.NormFloat64())
			if trial%3 == 0 {
				x[j] = float32(r.IntN(13)-6) / 4
			}
			w[j] = float32(r.ExpFloat64())
		}
		for k := range inv {
			inv[k] = float32(r.NormFloat64() * 2)
			if k%4 == 0 {
				inv[k] = float32(r.IntN(8)+1) * 0.5
			}
		}
		for _, wp := range []*[64]float32{nil, &w} {
			// Counts odd and even (the candidates go two at a time), and a
			// guard band after the sums that must stay untouched.
			n := []int{40, 1, 2, 3, 16, 17}[trial%6]
			want, got := make([]float32, 2*n+4), make([]float32, 2*n+4)
			for i := 2 * n; i < len(got); i++ {
				want[i], got[i] = 7, 7
			}
			quant.Q2SearchRef.Score(&x, wp, inv[:n], want[:2*n])
			k.Score(&x, wp, inv[:n], got[:2*n])
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("trial %d weighted=%v, %d scales: sum %d = %g, reference %g", trial, wp != nil, n, i, got[i], want[i])
				}
			}
		}
		for _, iv := range inv {
			var want, got [16]byte
			quant.Q2SearchRef.Pack(&x, iv, want[:])
			k.Pack(&x, iv, got[:])
			if want != got {
				t.Fatalf("trial %d inv %g: packed %x, reference %x", trial, iv, got, want)
			}
		}
	}
}

func benchQ2(b *testing.B, k *kernelSet, opt *quant.QuantizeOptions) {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	q := make([]byte, len(x)/64*18)
	b.SetBytes(int64(len(x) * 4))
	b.ResetTimer()
	for range b.N {
		if err := k.quantizeQ2_0(x, q, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(x))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mweights/s")
}

func BenchmarkQ2SearchAVX2(b *testing.B)    { benchQ2(b, &host, nil) }
func BenchmarkQ2SearchGeneric(b *testing.B) { benchQ2(b, &portable, nil) }
func BenchmarkQ2SearchImatrixAVX2(b *testing.B) {
	imp := make([]float32, 4096)
	for i := range imp {
		imp[i] = float32(i%7) + 0.5
	}
	benchQ2(b, &host, &quant.QuantizeOptions{Importance: imp, RowLen: 4096})
}
func BenchmarkQ2GGML(b *testing.B) { benchQ2(b, &host, &quant.QuantizeOptions{Q2Mode: quant.Q2GGML}) }

// FuzzQ2SearchPaths feeds arbitrary bit patterns (any float32, NaN and Inf
// included) to both paths; they must agree with the reference byte for byte.
func FuzzQ2SearchPaths(f *testing.F) {
	f.Add(make([]byte, 256), uint8(0))
	seed := make([]byte, 512)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(seed, uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, cand uint8) {
		n := len(raw) / 4 / 64 * 64
		if n == 0 {
			return
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		imp := make([]float32, 64)
		for i := range imp {
			imp[i] = float32(math.Abs(float64(x[i])))
		}
		for _, opt := range []*quant.QuantizeOptions{{Q2Candidates: int(cand % 20)}, {Q2Candidates: int(cand % 20), Importance: imp, RowLen: 64}} {
			want := make([]byte, n/64*18)
			if err := quant.Quantize(quant.Q2_0, x, want, opt); err != nil {
				t.Fatal(err)
			}
			for _, s := range append(testSets(), namedSet{"portable", &portable}) {
				got := make([]byte, len(want))
				if err := s.k.quantizeQ2_0(x, got, opt); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: bytes differ from the reference\ngot  %x\nwant %x", s.name, got, want)
				}
			}
		}
	})
}

// TestQ2BlocksIsQuantize: one block at a time through NewQ2Blocks, its
// importance changed in place between blocks, gives QuantizeQ2_0's bytes
// for each block as a row of 64 with that importance.
func TestQ2BlocksIsQuantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, cands := range []int{0, 5} {
		var imp [quant.Q2BlockElements]float32
		for _, weighted := range []bool{false, true} {
			opt := &quant.QuantizeOptions{Q2Candidates: cands}
			if weighted {
				opt.Importance = imp[:]
			}
			b, err := NewQ2Blocks(opt)
			if err != nil {
				t.Fatal(err)
			}
			for trial := 0; trial < 200; trial++ {
				var x [quant.Q2BlockElements]float32
				for i := range x {
					x[i] = float32(rng.NormFloat64() * float64(1+trial%3))
					imp[i] = float32(rng.Float64() + 0.01)
				}
				if trial%50 == 7 {
					x = [quant.Q2BlockElements]float32{}
				}
				var got [quant.Q2BlockBytes]byte
				want := make([]byte, quant.Q2BlockBytes)
				b.Block(&x, &got)
				ro := &quant.QuantizeOptions{Q2Candidates: cands}
				if weighted {
					ro.Importance, ro.RowLen = append([]float32(nil), imp[:]...), quant.Q2BlockElements
				}
				if err := QuantizeQ2_0(x[:], want, ro); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[:], want) {
					t.Fatalf("candidates %d weighted %v block %d: % x, QuantizeQ2_0 % x", cands, weighted, trial, got, want)
				}
			}
		}
	}
	if _, err := NewQ2Blocks(&quant.QuantizeOptions{Importance: make([]float32, 32)}); err == nil {
		t.Fatal("importance of 32 values for blocks of 64 accepted")
	}
	if _, err := NewQ2Blocks(&quant.QuantizeOptions{Q2Mode: quant.Q2GGML}); err == nil {
		t.Fatal("ggml mode accepted for single blocks")
	}
}

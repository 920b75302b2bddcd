package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// kQuantTypes are the K-quants DotQ8 takes (part of q8Types, so every DotQ8
// test in qdot_test.go runs them too).
var kQuantTypes = []quant.Type{quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K}

// kScaleOffsets are the byte offsets of a K-quant block's fp16 scales.
func kScaleOffsets(t quant.Type) []int {
	switch t {
	case quant.Q2_K:
		return []int{80, 82}
	case quant.Q3_K:
		return []int{108}
	case quant.Q4_K, quant.Q5_K:
		return []int{0, 2}
	case quant.Q6_K:
		return []int{208}
	}
	panic("not a K-quant: " + t.String())
}

// finiteKScales keeps every fp16 scale of the K-quant blocks b finite and
// below 2 in magnitude (the exponent's top bit cleared), as randomRow does
// for the other types.
func finiteKScales(t quant.Type, b []byte) {
	ti, _ := quant.Info(t)
	for o := 0; o+ti.BlockBytes <= len(b); o += ti.BlockBytes {
		for _, off := range kScaleOffsets(t) {
			b[o+off+1] &= 0xbf
		}
	}
}

// TestKSubMatchesQuant: each sub-block's integers and scales give quant's
// decoding bit for bit, in quant's order ((d*sc)*q - dmin*m), on raw random
// blocks (NaN, infinite and subnormal scales included).
func TestKSubMatchesQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, typ := range kQuantTypes {
		const blocks = 64
		row := randomBlocks(rng, typ, blocks)
		want := make([]float32, 256*blocks)
		if err := quant.Dequantize(typ, row, want); err != nil {
			t.Fatal(err)
		}
		var k kSubBlock
		for s := 0; s < 8*blocks; s++ {
			kSub(typ, row, s, &k)
			for j, q := range k.q {
				h := j / 16
				got := float32(float32(k.d*float32(k.sc[h])) * float32(q))
				if kHasMin(typ) {
					got = float32(got - float32(k.dmin*float32(k.mn[h])))
				} else if k.mn[h] != 0 {
					t.Fatalf("%s sub-block %d: min %d on a type without mins", typ, s, k.mn[h])
				}
				if !sameFloat(got, want[32*s+j]) || (got == 0 && math.Float32bits(got) != math.Float32bits(want[32*s+j])) {
					t.Fatalf("%s sub-block %d element %d: %g, quant %g", typ, s, j, got, want[32*s+j])
				}
			}
		}
	}
}

// kMinMagnitudes are, per 16 weights of a K-quant row, |dmin*m| as
// quant's own factor helpers form it (zero for the
// types without mins).
func kMinMagnitudes(t *testing.T, typ quant.Type, row []byte, n int) []float64 {
	out := make([]float64, n/16)
	for b := 0; b < n/256; b++ {
		switch typ {
		case quant.Q2_K:
			var f [32]float32
			quant.Q2KFactors(row[84*b:], &f)
			for k := 0; k < 16; k++ {
				out[16*b+k] = math.Abs(float64(f[16+k]))
			}
		case quant.Q4_K, quant.Q5_K:
			ti, _ := quant.Info(typ)
			var f [16]float32
			quant.Q4KFactors(row[ti.BlockBytes*b:], &f)
			for k := 0; k < 16; k++ {
				out[16*b+k] = math.Abs(float64(f[8+k/2]))
			}
		}
	}
	return out
}

// checkKAgainstFloat64 checks DotQ8's portable path on a K-quant row against
// the float64 dot of quant's decoding of the weights with the decoded
// activations (code times block scale, exact in float32), within the
// closed-form bound of the order's rounding: every weight's one rounding in
// quant's decoding (products of an fp16 scale and small integers are exact),
// one rounding of each product term (float32(A_s) and d*dx_s are exact), of
// the difference, and at most nsub/8 + 3 additions per lane and fold, each
// at most eps = 2^-24 relative to the magnitudes M = sum (|w_j| + 2|dmin*m_j|)*|x_j|
// (|d*sc*q| <= |w| + |dmin*m|).
func checkKAgainstFloat64(t *testing.T, typ quant.Type, row []byte, r *Q8Row, what string) {
	t.Helper()
	n := r.Len()
	w := make([]float32, n)
	if err := quant.Dequantize(typ, row, w); err != nil {
		t.Fatal(err)
	}
	mins := kMinMagnitudes(t, typ, row, n)
	var truth, mag float64
	for j := 0; j < n; j++ {
		x := float64(float32(r.qs[j]) * r.d[j/32])
		truth += float64(w[j]) * x
		mag += (math.Abs(float64(w[j])) + 2*mins[j/16]) * math.Abs(x)
	}
	const eps = 0x1p-24
	bound := float64(n/256+6)*eps*mag*1.01 + 1e-30
	got := portable.dotQ8(typ, row, r)
	if e := math.Abs(float64(got) - truth); !(e <= bound) {
		t.Fatalf("%s %s n=%d: DotQ8 %g, float64 truth %g, error %g over the bound %g", typ, what, n, got, truth, e, bound)
	}
}

// TestDotQ8KAgainstFloat64: the portable K-quant terms against an
// independent truth, on random rows of every length 256..4096 and on ggml's
// fixture rows.
func TestDotQ8KAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	var r Q8Row
	for _, typ := range kQuantTypes {
		for n := 256; n <= 4096; n += 256 {
			row := randomRow(rng, typ, n)
			if err := QuantizeQ8Row(gaussians(rng, n, 1), &r); err != nil {
				t.Fatal(err)
			}
			checkKAgainstFloat64(t, typ, row, &r, "random")
		}
		q, cols, rows := kFixture(t, typ)
		ti, _ := quant.Info(typ)
		rb := cols / ti.BlockElements * ti.BlockBytes
		for i := 0; i < rows; i++ {
			if err := QuantizeQ8Row(gaussians(rng, cols, 1), &r); err != nil {
				t.Fatal(err)
			}
			checkKAgainstFloat64(t, typ, q[i*rb:(i+1)*rb], &r, "fixture")
		}
	}
}

// kFixture is ggml's quantization "q" of its fixture for type typ (rows of
// cols weights).
func kFixture(t *testing.T, typ quant.Type) (q []byte, cols, rows int) {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testutil.Path(t, "fixtures", "ggml"), typ.String()+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qi, ok := f.Tensor("q")
	if !ok {
		t.Fatalf("%s fixture: no tensor q", typ)
	}
	q, err = f.ReadTensor(qi)
	if err != nil {
		t.Fatal(err)
	}
	cols = int(qi.Dims[0])
	return q, cols, int(qi.Elements()) / cols
}

// TestDotQ8KFixtureError: on ggml's own K-quant rows the fast mode's error
// against the exact mode (Dot on float32 activations) stays within the
// activation quantization's bound (q8ErrorBound), and its RMS over the rows
// is no larger than what ggml's pairing, activations quantized with one
// step per 256 (q8KStyleDot), gives: the choice of Q8_0 activations for the
// K-quants (qdot.go). With -v it prints both RMS errors, each row's relative
// to its product's standard deviation.
func TestDotQ8KFixtureError(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	var r Q8Row
	for _, typ := range kQuantTypes {
		q, cols, rows := kFixture(t, typ)
		ti, _ := quant.Info(typ)
		rb := cols / ti.BlockElements * ti.BlockBytes
		w := make([]float32, cols)
		scratch := make([]float32, cols)
		var e0, eK, mag float64
		const trials = 8
		for trial := 0; trial < trials; trial++ {
			for i := 0; i < rows; i++ {
				row := q[i*rb : (i+1)*rb]
				x := gaussians(rng, cols, 1)
				if err := QuantizeQ8Row(x, &r); err != nil {
					t.Fatal(err)
				}
				if err := quant.Dequantize(typ, row, w); err != nil {
					t.Fatal(err)
				}
				exact, fast := Dot(typ, row, x, scratch), DotQ8(typ, row, &r)
				if e, bound := math.Abs(float64(fast)-float64(exact)), q8ErrorBound(w, x); e > bound {
					t.Fatalf("%s fixture row %d: fast %g exact %g, error %g over the bound %g", typ, i, fast, exact, e, bound)
				}
				// Each row's errors relative to its exact product's standard
				// deviation over the draws, |w| (activations of sigma 1), so
				// that the fixture's few large rows do not dominate.
				var ww float64
				for _, v := range w {
					ww += float64(v) * float64(v)
				}
				if ww == 0 {
					continue
				}
				e0 += math.Pow(float64(fast)-float64(exact), 2) / ww
				eK += math.Pow(q8KStyleDot(w, x)-float64(exact), 2) / ww
				mag++
			}
		}
		t.Logf("%s: %d fixture rows x %d draws of gaussian activations: RMS error relative to the product's deviation %.3g with Q8_0 activations (fast mode), %.3g with one step per 256",
			typ, rows, trials, math.Sqrt(e0/mag), math.Sqrt(eK/mag))
		if e0 > eK {
			t.Errorf("%s: Q8_0 activations' squared error %g above the per-256 step's %g", typ, e0, eK)
		}
	}
}

// q8KStyleDot is the float64 dot of w with x quantized as ggml's Q8_K
// quantizes activations for the K-quants: per 256, the step amax/127 in
// float32, codes rounded to nearest (halves to even) and clamped to 127.
func q8KStyleDot(w, x []float32) float64 {
	var sum float64
	for b := 0; b < len(x)/256; b++ {
		var amax float32
		for _, v := range x[256*b : 256*b+256] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		if amax == 0 {
			continue
		}
		d := amax / 127
		for j := 256 * b; j < 256*b+256; j++ {
			c := math.Max(-127, math.Min(127, math.RoundToEven(float64(x[j]/d))))
			sum += float64(w[j]) * c * float64(d)
		}
	}
	return sum
}

// TestKQ8VectorPathsPresent: on an AVX2+F16C build every K-quant has its
// DotQ8 kernel (so the bit-for-bit tests above compare real vector code).
func TestKQ8VectorPathsPresent(t *testing.T) {
	if !asmBuild || !hostCPU.avx2 || !hostCPU.f16c {
		t.Logf("no vector paths on this CPU/build (%s)", Describe())
		return
	}
	for _, typ := range kQuantTypes {
		if host.q8dot[typ] == nil {
			t.Errorf("%s: no DotQ8 kernel on an AVX2+F16C CPU", typ)
		}
	}
}

// BenchmarkDotQ8KPaths: each K-quant's DotQ8 on a row of 2560 on the
// portable path ("generic"), on the kernels this CPU would run without
// AVX-512 VNNI ("no-vnni") and on the host's, so the vector kernels compare
// in one run.
func BenchmarkDotQ8KPaths(b *testing.B) {
	const n = 2560
	rng := rand.New(rand.NewPCG(9, 9))
	var r Q8Row
	if err := QuantizeQ8Row(gaussians(rng, n, 1), &r); err != nil {
		b.Fatal(err)
	}
	c := hostCPU
	c.avx512vnni = false
	noVNNI := chooseKernels(c)
	sets := []namedSet{{"generic", &portable}, {"no-vnni", &noVNNI}, {"host", &host}}
	for _, typ := range kQuantTypes {
		row, err := SampleBlocks(typ, n/256, 3)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range sets {
			b.Run(fmt.Sprintf("%s/%s", typ, s.name), func(b *testing.B) {
				b.SetBytes(int64(len(row)))
				for b.Loop() {
					s.k.dotQ8(typ, row, &r)
				}
			})
		}
	}
}

package optq

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// goldenCase is one QuantizeExpert case whose bytes and errors are pinned
// by a hash: speed work on the quantizer must leave every decision as it
// was.
type goldenCase struct {
	name       string
	D, F, n    int
	nh         int
	seed       uint64
	opt        func(*Options)
	wantSHA256 string
}

var goldenCases = []goldenCase{
	{"field-32", 2560, 640, 32, 4, 5, nil, "13761e1ff517f14abd1793ee8235e11cea4b1975652f1b163315710334a8a24f"},
	{"field-13", 2560, 640, 13, 3, 7, nil, "2b07f5d7bd33762e0fdc1d9f31a451a4716637a1334ffa994a991f3a0d387db6"},
	{"field-77", 2560, 640, 77, 4, 9, nil, "69f239da6284c03f39aaab6e03ff7f2dd1fd4978bf9655250432c2b06b8d46cf"},
	{"field-32-all-passes", 2560, 640, 32, 4, 11, func(o *Options) { o.ExpertTokens, o.GridTokens = 0, 0 }, "7d82fe5fa2974f6ddd4e9aa6f23f0d0ba12359fa839c119723b1568a58721b8e"},
	{"lowrank-40", 256, 128, 40, 8, 13, nil, "0f7c76ad6c17676d2fa3c7fb4918f0f73d1292587b10ad4239d9006a4dd2c3c6"},
	{"lowrank-40-all-passes", 256, 128, 40, 8, 15, func(o *Options) { o.ExpertTokens, o.GridTokens = 0, 0 }, "d0e580e1ab41694c3de760509ef29bb811ad4418fd4974e11895809c6ecdb1b9"},
	{"mixed-200", 256, 128, 200, 8, 17, nil, "1a8be5f7e48ef7b5cd6c90342ec25a3e5097d2ab3acf7604e0db86d044e601ab"},
	{"mixed-200-all-passes", 256, 128, 200, 8, 19, func(o *Options) { o.ExpertTokens, o.GridTokens = 0, 0 }, "f655e040acb61b243ae0a9c22556f183ec13d79499153bcdc48a207069483efb"},
	{"dense-300", 256, 128, 300, 8, 21, nil, "c3272bbb69423dc7bf4176c7497d57f4a59b3267d043dcf877f1ee669ffd2b4a"},
	{"dense-300-swiglu", 256, 128, 300, 8, 23, func(o *Options) { o.SwiGLU = 2 }, "4895da02bc3238801c4915c370387f128ef178f98abd0e835b0670d67ba2c107"},
	{"lowrank-7-swiglu", 256, 128, 7, 2, 25, func(o *Options) { o.SwiGLU, o.ExpertTokens, o.GridTokens = 2, 0, 0 }, "25a657072ae7f026206a16c06cf1d6a7b5cf7a9df26a9879a2ecf0c3a0ed9c45"},
	{"self", 256, 128, 300, 8, 27, func(o *Options) {
		o.Damp, o.RefineDamp, o.SwiGLU, o.SwiGLUDamp, o.Refine, o.Candidates = DefaultSelfDamp, DefaultSelfRefineDamp, DefaultSelfSwiGLU, DefaultSelfSwiGLUDamp, DefaultSelfRefine, DefaultSelfCandidates
	}, "13547de44fcf27e01bc0e18a10828eb3f257712ef730eae77542d4d17ba6e9c4"},
	{"field-19-cold-down", 2560, 640, 19, 2, 29, func(o *Options) { o.ExpertTokens, o.WarmDown = 0, false }, "34742dc8fae506ba8e10a7c569f7bfa6124474df2abdf3cf7acfde2bd0eb0a3c"},
}

// goldenHash is the SHA-256 of a result's three matrices, its errors'
// float64 bits, its fallback and its rounds.
func goldenHash(res *ExpertResult) string {
	h := sha256.New()
	h.Write(res.Gate)
	h.Write(res.Up)
	h.Write(res.Down)
	var b [8]byte
	for _, e := range res.Errors {
		for _, v := range []float64{e.Weight, e.WeightEnergy, e.Output, e.OutputEnergy, float64(e.HeldTokens)} {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			h.Write(b[:])
		}
	}
	h.Write([]byte(res.Fallback))
	binary.LittleEndian.PutUint64(b[:], uint64(res.ExpertRounds))
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil))
}

// TestQuantizeExpertGolden: QuantizeExpert's bytes and errors on dense,
// low-rank and mixed cases (field width with 13, 19, 32 and 77 tokens,
// the defaults, every pass on, the SwiGLU refinement, the --calib-self
// settings, a cold second down quantization) hash to the values pinned
// before the speed work of issue 14 (main b54e45f), whatever vector path
// runs (8 and 16 lanes, and with -tags noasm). The field cases are skipped with -short.
func TestQuantizeExpertGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			if testing.Short() && c.D > 1000 {
				t.Skip("field width")
			}
			ex, in := expertFixture(rand.New(rand.NewPCG(c.seed, uint64(c.n))), c.D, c.F, c.n, c.nh)
			opt := Defaults()
			if c.opt != nil {
				c.opt(&opt)
			}
			widths := []bool{false}
			if useWide {
				widths = append(widths, true)
			}
			saved := useWide
			defer func() { useWide = saved }()
			for _, wide := range widths {
				useWide = wide
				res, err := QuantizeExpert(ex, in, opt)
				if err != nil {
					t.Fatal(err)
				}
				if got := goldenHash(res); got != c.wantSHA256 {
					if os.Getenv("OPTQ_GOLDEN_PRINT") != "" {
						t.Logf("GOLDEN %s %s fallback=%q rounds=%d", c.name, got, res.Fallback, res.ExpertRounds)
					}
					t.Errorf("%s (wide lanes %v): hash %s, want %s (fallback %q, rounds %d)", c.name, wide, got, c.wantSHA256, res.Fallback, res.ExpertRounds)
				}
			}
		})
	}
}

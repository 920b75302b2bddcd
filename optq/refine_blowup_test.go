package optq

import (
	"math/rand/v2"
	"testing"
)

// TestExpertRefinementFewTokensLargeInputs: with a handful of tokens and
// inputs large enough that gate pre-activations sit deep in SiLU's flat
// negative tail (what a synthetic model's later layers give), the
// expert-output refinement must not move weights far from the source: the
// weight error stays at the plain search's order, and the expert-output
// error on the quantizer's own tokens is no worse than without it.
func TestExpertRefinementFewTokensLargeInputs(t *testing.T) {
	for _, c := range []struct {
		n     int
		scale float32
	}{{1, 30}, {2, 30}, {3, 100}, {4, 10}, {8, 30}} {
		rng := rand.New(rand.NewPCG(uint64(c.n), 77))
		ex, in := expertFixture(rng, 256, 64, c.n, 0)
		for i := range in.X {
			in.X[i] *= c.scale
		}
		off := Defaults()
		off.Expert = 0
		base, err := QuantizeExpert(ex, in, off)
		if err != nil {
			t.Fatal(err)
		}
		on := Defaults()
		on.ExpertTokens = 0 // the refinement at these few tokens (the default skips it)
		res, err := QuantizeExpert(ex, in, on)
		if err != nil {
			t.Fatal(err)
		}
		for m, name := range []string{"gate", "up", "down"} {
			if r, b := res.Errors[m].RelWeight(), base.Errors[m].RelWeight(); !(r < 4*b+0.5) {
				t.Errorf("n %d scale %g: %s weight error %.4g with the refinement, %.4g without", c.n, c.scale, name, r, b)
			}
		}
		train := &Inputs{Held: in.X, NH: in.N}
		if got, want := expertOutErr(ex, res, train), expertOutErr(ex, base, train); !(got <= want*1.0001) {
			t.Errorf("n %d scale %g: expert output error %.4g with the refinement, %.4g without", c.n, c.scale, got, want)
		}
	}
}

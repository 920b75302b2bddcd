package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestRanges: each bound is inclusive (but an open lower one), the values
// just beyond are refused naming the range, and so are NaN and non-numbers.
func TestRanges(t *testing.T) {
	var n int
	var x, y float64
	fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
	IntVar(fl, &n, "n", 5, -2, 7, "n")
	Float64Var(fl, &x, "x", 0, 0, 1.5, "x")
	Float64VarOpen(fl, &y, "y", 1, 0, 1, "y")
	ok := map[string][]string{"n": {"-2", "7", "0x7"}, "x": {"0", "1.5"}, "y": {"1", "1e-300"}}
	bad := map[string][]string{"n": {"-3", "8", "1.5", "", "9223372036854775808"}, "x": {"-0.001", "1.5000001", "NaN", "Inf", "-Inf"}, "y": {"0", "-0", "1.01", "NaN"}}
	for name, vs := range ok {
		for _, v := range vs {
			if err := fl.Set(name, v); err != nil {
				t.Errorf("--%s %s: %v", name, v, err)
			}
		}
	}
	for name, vs := range bad {
		r := fl.Lookup(name).Value.(Bounded).Range()
		for _, v := range vs {
			if err := fl.Set(name, v); err == nil || !strings.Contains(err.Error(), r) {
				t.Errorf("--%s %q: %v, want a refusal naming %s", name, v, err, r)
			}
		}
	}
	if n != 7 || x != 1.5 || y != 1e-300 {
		t.Errorf("values %d %g %g, want the last good ones", n, x, y)
	}
	if got := fl.Lookup("n").Usage; got != "n (-2..7)" {
		t.Errorf("usage %q", got)
	}
}

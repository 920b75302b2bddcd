package cli

import (
	"slices"
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

// TestListRanges: every number of a list flag is held to the range (an open
// lower bound excluded, an int list refusing fractions), a refusal names the
// range and keeps the last good list, and the usage states the range.
func TestListRanges(t *testing.T) {
	fs, is := []float64{0.5}, []int{1, 2}
	fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
	NumListVar(fl, &fs, "f", 0, 1, true, "f")
	NumListVar(fl, &is, "i", -1, 3, false, "i")
	if got := fl.Lookup("f").Value.String(); got != "0.5" {
		t.Errorf("default %q", got)
	}
	if err := fl.Set("f", "0.25, 1"); err != nil || !slices.Equal(fs, []float64{0.25, 1}) {
		t.Errorf("--f 0.25,1: %v %v", fs, err)
	}
	if err := fl.Set("i", "-1,3"); err != nil || !slices.Equal(is, []int{-1, 3}) {
		t.Errorf("--i -1,3: %v %v", is, err)
	}
	bad := map[string][]string{"f": {"0", "1.01", "0.5,NaN", "", "0.5,"}, "i": {"-2", "4", "1.5", "x", "1e300"}}
	for name, vs := range bad {
		r := fl.Lookup(name).Value.(Bounded).Range()
		for _, v := range vs {
			if err := fl.Set(name, v); err == nil || !strings.Contains(err.Error(), r) {
				t.Errorf("--%s %q: %v, want a refusal naming %s", name, v, err, r)
			}
		}
	}
	if !slices.Equal(fs, []float64{0.25, 1}) || !slices.Equal(is, []int{-1, 3}) {
		t.Errorf("lists %v %v, want the last good ones", fs, is)
	}
	if got := fl.Lookup("f").Usage; got != "f, comma-separated, each over 0, up to 1" {
		t.Errorf("usage %q", got)
	}
}

package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// The flags every command spells the same way. Numeric flags are declared
// with the range of values that makes sense for them; a value outside it is
// refused while the command line is parsed, before any work, with an error
// naming the flag and the range (cobra reports it as
// `invalid argument "V" for "--NAME" flag: want ...`).

// MaxThreads bounds -j/--threads: more workers than this is a typing mistake,
// not a machine.
const MaxThreads = 4096

// Threads adds -j/--threads, the worker count of every command that has
// one (0: all cores, or GOMAXPROCS).
func Threads(fl *pflag.FlagSet, p *int, help string) {
	IntVarP(fl, p, "threads", "j", 0, 0, MaxThreads, help)
}

// Verbose adds -v/--verbose to a command that says more with it; commands
// that have nothing more to say do not offer it.
func Verbose(fl *pflag.FlagSet, env *Env, help string) {
	fl.BoolVarP(&env.Verbose, "verbose", "v", false, help)
}

// intRange is an int flag value limited to [lo, hi].
type intRange struct {
	p      *int
	lo, hi int
}

// IntVarP declares an int flag holding values in [lo, hi] (the default may
// lie outside when it means "not given").
func IntVarP(fl *pflag.FlagSet, p *int, name, short string, def, lo, hi int, usage string) {
	*p = def
	r := &intRange{p: p, lo: lo, hi: hi}
	fl.VarP(r, name, short, fmt.Sprintf("%s (%s)", usage, r.Range()))
}

// Bounded is a flag value declared with its range.
type Bounded interface {
	pflag.Value
	Range() string // "lo..hi", or "over lo, up to hi"
}

// IntVar is IntVarP without a shorthand.
func IntVar(fl *pflag.FlagSet, p *int, name string, def, lo, hi int, usage string) {
	IntVarP(fl, p, name, "", def, lo, hi, usage)
}

func (r *intRange) Range() string  { return fmt.Sprintf("%d..%d", r.lo, r.hi) }
func (r *intRange) String() string { return strconv.Itoa(*r.p) }
func (r *intRange) Type() string   { return "int" }

func (r *intRange) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || n < int64(r.lo) || n > int64(r.hi) {
		return fmt.Errorf("want an integer in %s", r.Range())
	}
	*r.p = int(n)
	return nil
}

// floatRange is a float64 flag value limited to [lo, hi], or (lo, hi] when
// loOpen; never NaN.
type floatRange struct {
	p      *float64
	lo, hi float64
	loOpen bool
}

// Float64Var declares a float64 flag holding finite values in [lo, hi].
func Float64Var(fl *pflag.FlagSet, p *float64, name string, def, lo, hi float64, usage string) {
	*p = def
	r := &floatRange{p: p, lo: lo, hi: hi}
	fl.Var(r, name, fmt.Sprintf("%s (%s)", usage, r.Range()))
}

// Float64VarOpen declares a float64 flag holding values in (lo, hi]: lo
// itself is excluded.
func Float64VarOpen(fl *pflag.FlagSet, p *float64, name string, def, lo, hi float64, usage string) {
	*p = def
	r := &floatRange{p: p, lo: lo, hi: hi, loOpen: true}
	fl.Var(r, name, fmt.Sprintf("%s (%s)", usage, r.Range()))
}

// Range is "lo..hi", or "over lo, up to hi" when lo is excluded.
func (r *floatRange) Range() string {
	lo, hi := strconv.FormatFloat(r.lo, 'f', -1, 64), strconv.FormatFloat(r.hi, 'f', -1, 64)
	if r.loOpen {
		return fmt.Sprintf("over %s, up to %s", lo, hi)
	}
	return lo + ".." + hi
}

func (r *floatRange) String() string { return strconv.FormatFloat(*r.p, 'g', -1, 64) }
func (r *floatRange) Type() string   { return "float" }

func (r *floatRange) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v > r.hi || v < r.lo || (r.loOpen && v == r.lo) {
		return fmt.Errorf("want a number %s", r.Range())
	}
	*r.p = v
	return nil
}

// numList is a comma-separated list flag value whose every number is in
// [lo, hi], or (lo, hi] when loOpen.
type numList[T int | float64] struct {
	p      *[]T
	lo, hi T
	loOpen bool
}

// NumListVar declares a comma-separated list flag of numbers, each in
// [lo, hi] (lo excluded when loOpen); *p holds the default list.
func NumListVar[T int | float64](fl *pflag.FlagSet, p *[]T, name string, lo, hi T, loOpen bool, usage string) {
	v := &numList[T]{p: p, lo: lo, hi: hi, loOpen: loOpen}
	fl.Var(v, name, fmt.Sprintf("%s, comma-separated, each %s", usage, v.Range()))
}

// Range is "lo..hi", or "over lo, up to hi" when lo is excluded.
func (v *numList[T]) Range() string {
	if v.loOpen {
		return fmt.Sprintf("over %v, up to %v", v.lo, v.hi)
	}
	return fmt.Sprintf("%v..%v", v.lo, v.hi)
}

func (v *numList[T]) String() string {
	parts := make([]string, len(*v.p))
	for i, x := range *v.p {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

func (v *numList[T]) Type() string { return "list" }

func (v *numList[T]) Set(s string) error {
	var out []T
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		t := T(x)
		if err != nil || math.IsNaN(x) || float64(t) != x || t > v.hi || t < v.lo || (v.loOpen && t == v.lo) {
			return fmt.Errorf("%q: want numbers %s", f, v.Range())
		}
		out = append(out, t)
	}
	*v.p = out
	return nil
}

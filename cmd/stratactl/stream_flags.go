package main

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/engine"
)

// cacheFlags are --cache-bonus and --exact-picks, as run and eval take them.
type cacheFlags struct {
	bonus float64 // NaN: not given
	exact int
}

func (c *cacheFlags) add(fl *pflag.FlagSet) {
	fl.Float64Var(&c.bonus, "cache-bonus", math.NaN(), "pack: cache-aware routing, adding this to the router logits of resident experts after the first --exact-picks picks (off unless given)")
	fl.IntVar(&c.exact, "exact-picks", 3, "pack: with --cache-bonus, picks made by the true router first")
}

// on is whether --cache-bonus was given.
func (c *cacheFlags) on() bool { return !math.IsNaN(c.bonus) }

// routing checks the flags and returns the session routing they ask for
// (the model's own router when --cache-bonus is not given).
func (c *cacheFlags) routing() (engine.Routing, error) {
	if c.exact < 0 {
		return engine.Routing{}, fmt.Errorf("--exact-picks must be >= 0, have %d", c.exact)
	}
	if !c.on() {
		return engine.Routing{}, nil
	}
	if math.IsInf(c.bonus, 0) {
		return engine.Routing{}, fmt.Errorf("--cache-bonus must be finite")
	}
	return engine.Routing{CacheAware: true, Bonus: float32(c.bonus), Exact: c.exact}, nil
}

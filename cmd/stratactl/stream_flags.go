package main

import (
	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/cli"
)

// maxCacheBonus bounds --cache-bonus: router logits are of order 1-10, so a
// bonus far beyond them only ever picks resident experts.
const maxCacheBonus = 1000

// cacheFlags are --cache-bonus and --exact-picks, as run and eval take them.
type cacheFlags struct {
	bonus float64
	exact int
	given *pflag.Flag // --cache-bonus, whose Changed says whether it was given
}

func (c *cacheFlags) add(fl *pflag.FlagSet) {
	cli.Float64Var(fl, &c.bonus, "cache-bonus", 0, -maxCacheBonus, maxCacheBonus, "pack: cache-aware routing, adding this to the router logits of resident experts after the first --exact-picks picks (off unless given)")
	cli.IntVar(fl, &c.exact, "exact-picks", 3, 0, maxExperts, "pack: with --cache-bonus, picks made by the true router first")
	c.given = fl.Lookup("cache-bonus")
}

// on is whether --cache-bonus was given.
func (c *cacheFlags) on() bool { return c.given != nil && c.given.Changed }

// routing returns the session routing the flags ask for (the model's own
// router when --cache-bonus is not given); the values were checked against
// their ranges when the flags were parsed.
func (c *cacheFlags) routing() engine.Routing {
	if !c.on() {
		return engine.Routing{}
	}
	return engine.Routing{CacheAware: true, Bonus: float32(c.bonus), Exact: c.exact}
}

package evalq

import (
	"context"
	"fmt"
	"time"

	"github.com/stratactl/stratactl/engine"
)

// RoutingSweep is what stratactl bench routing measures: a pack through
// its expert store at each arena of Arenas (fractions of the pack's
// experts), with the model's own routing and with every bonus of Bonuses
// after each exact-picks count of Exact, each against the same pack with
// every expert resident and no bonus.
type RoutingSweep struct {
	Pack    string    // the pack, opened once per configuration
	Threads int       // matmul threads (0: GOMAXPROCS); results do not depend on it
	Arenas  []float64 // arena sizes, fractions of the pack's experts in (0, 1]
	Bonuses []float64 // cache bonuses to measure besides no bonus
	Exact   []int     // exact picks to measure with each bonus
}

// RoutingConfig is one configuration of a sweep.
type RoutingConfig struct {
	ArenaFrac  float64
	Bonus      *float64 // nil: the model's own routing
	ExactPicks *int
}

// Configs lists the sweep's configurations in the order Run measures them:
// for each arena, the model's own routing, then each bonus with each exact
// picks count.
func (s RoutingSweep) Configs() []RoutingConfig {
	var cs []RoutingConfig
	for _, a := range s.Arenas {
		cs = append(cs, RoutingConfig{ArenaFrac: a})
		for _, b := range s.Bonuses {
			for _, j := range s.Exact {
				cs = append(cs, RoutingConfig{a, &b, &j})
			}
		}
	}
	return cs
}

// RoutingRow is one configuration of a sweep.
type RoutingRow struct {
	ArenaFrac   float64  `json:"arena_fraction"`
	ArenaMB     float64  `json:"arena_mb"`
	ArenaSlots  int      `json:"arena_slots"`
	Bonus       *float64 `json:"cache_bonus,omitempty"` // nil: the model's own routing
	ExactPicks  *int     `json:"exact_picks,omitempty"`
	KLDMean     float64  `json:"kld_mean"`
	Top1        float64  `json:"top1_agreement"`
	PPLRatio    float64  `json:"ppl_ratio"`
	HitRate     float64  `json:"hit_rate"`
	BeladyHit   float64  `json:"belady_hit_rate"`
	OfBelady    float64  `json:"hit_rate_of_belady"`
	MissesPerT  float64  `json:"misses_per_token"`
	ReadMBPerT  float64  `json:"read_mb_per_token"`
	ReadAheadPT float64  `json:"readahead_hits_per_token"`
}

// RoutingReport is bench routing's --json document.
type RoutingReport struct {
	Pack       string       `json:"pack"`
	Source     string       `json:"source"`
	Ctx        int          `json:"ctx"`
	Windows    int          `json:"windows"`
	Tokens     int          `json:"tokens"`
	TotalSlots int          `json:"total_slots"`
	SlotBytes  int64        `json:"slot_bytes"`
	Seconds    float64      `json:"seconds"`
	Rows       []RoutingRow `json:"rows"`
}

// Run measures every configuration of the sweep over windows (all of one
// length) against ref, the pack opened with every expert resident; each row
// equals what RunThroughStore gives for the same arena and routing. It
// fills every field of the report but Source.
func (s RoutingSweep) Run(ctx context.Context, ref *engine.Model, windows [][]int32, progress func(tokens int)) (*RoutingReport, error) {
	ps := ref.Stream()
	if ps == nil {
		return nil, fmt.Errorf("%s is not a pack: bench routing needs an expert store", s.Pack)
	}
	full := ps.Report(engine.StreamCounters{}, engine.StreamCounters{}, 0)
	if full.ArenaSlots < full.TotalSlots {
		return nil, fmt.Errorf("%s: the reference needs every expert resident, but %d of %d slots fit in half the memory", s.Pack, full.ArenaSlots, full.TotalSlots)
	}
	rep := &RoutingReport{Pack: s.Pack, Windows: len(windows), TotalSlots: full.TotalSlots, SlotBytes: full.SlotBytes}
	if len(windows) > 0 {
		rep.Ctx = len(windows[0])
	}
	rep.Tokens = len(windows) * rep.Ctx
	start := time.Now()
	for _, c := range s.Configs() {
		slots := max(1, int(c.ArenaFrac*float64(full.TotalSlots)))
		// Half a slot more than the slots, so the division gives them.
		mb := (float64(slots) + 0.5) * float64(full.SlotBytes) / (1 << 20)
		cand, err := engine.Open(s.Pack, engine.Options{Threads: s.Threads, Mode: ref.Mode, Stream: engine.StreamOptions{ArenaMB: mb}})
		if err != nil {
			return nil, err
		}
		var routing engine.Routing
		if c.Bonus != nil {
			routing = engine.Routing{CacheAware: true, Bonus: float32(*c.Bonus), Exact: *c.ExactPicks}
		}
		res, st, err := RunThroughStore(ctx, ref, cand, windows, ScoreAll, routing, progress)
		cand.Close()
		if err != nil {
			return nil, err
		}
		st0 := st.Stream
		row := RoutingRow{ArenaFrac: c.ArenaFrac, ArenaMB: mb, ArenaSlots: st0.ArenaSlots, Bonus: c.Bonus, ExactPicks: c.ExactPicks,
			KLDMean: res.KLDMean, Top1: res.Top1Agreement, PPLRatio: res.PPLRatio,
			HitRate: st0.HitRate, BeladyHit: *st0.BeladyHitRate, MissesPerT: st0.MissesPerToken, ReadMBPerT: st0.ReadMBPerToken,
			ReadAheadPT: st0.ReadAheadHitsPerToken}
		if row.BeladyHit > 0 {
			row.OfBelady = row.HitRate / row.BeladyHit
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

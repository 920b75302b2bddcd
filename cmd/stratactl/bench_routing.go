package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { registerBench(newBenchRoutingCmd) }

type benchRoutingFlags struct {
	tokens  tokenFlags
	ctx     int
	chunks  int
	threads int
	arenas  []float64
	bonuses []float64
	exact   []int
}

func newBenchRoutingCmd(env *cli.Env) *cobra.Command {
	var f benchRoutingFlags
	cmd := &cobra.Command{
		Use:   "routing PACK (--text FILE | --ids FILE)",
		Short: "Quality and hit rate of cache-aware routing through the expert store, against the all-resident pack and Belady's MIN",
		Long: `bench routing evaluates PACK through its expert store (as eval --arena-mb does:
every window in order through one arena, one token at a time) at each arena of
--arenas (fractions of the pack's experts), with the model's own routing and
with every --cache-bonus of --bonuses after each --exact-picks of --exact, each
against the same pack with every expert resident and no bonus. Each row gives
the mean KLD and top-1 agreement against that reference, the store's hit rate,
Belady's MIN hit rate on the same demands (with the same read-ahead), their
ratio, and misses and MB read per token. Each row equals the figures of
  stratactl eval PACK --ref PACK --arena-mb M [--cache-bonus B --exact-picks J]
with M the row's arena_mb.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return benchRouting(cmd, env, args[0], &f) },
	}
	fl := cmd.Flags()
	f.tokens.add(fl, "evaluation")
	cli.IntVar(fl, &f.ctx, "ctx", 256, 2, maxCtx, "tokens per window")
	cli.IntVar(fl, &f.chunks, "chunks", 4, 0, math.MaxInt32, "windows to evaluate (0: all)")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS); results do not depend on it")
	f.arenas, f.bonuses, f.exact = []float64{0.25, 0.5}, []float64{0.5, 0.85, 1.5}, []int{1, 2, 3}
	numList(fl, &f.arenas, "arenas", 0, 1, true, "arena sizes, as fractions of the pack's experts")
	numList(fl, &f.bonuses, "bonuses", -maxCacheBonus, maxCacheBonus, false, "cache bonuses to measure (besides no bonus)")
	numList(fl, &f.exact, "exact", 0, maxExperts, false, "exact picks to measure with each bonus")
	return cmd
}

// routingRow is one configuration of bench routing.
type routingRow struct {
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

// routingReport is bench routing's --json document.
type routingReport struct {
	Pack       string       `json:"pack"`
	Source     string       `json:"source"`
	Ctx        int          `json:"ctx"`
	Windows    int          `json:"windows"`
	Tokens     int          `json:"tokens"`
	TotalSlots int          `json:"total_slots"`
	SlotBytes  int64        `json:"slot_bytes"`
	Seconds    float64      `json:"seconds"`
	Rows       []routingRow `json:"rows"`
}

func benchRouting(cmd *cobra.Command, env *cli.Env, pack string, f *benchRoutingFlags) error {
	ref, err := engine.Open(pack, engine.Options{Threads: f.threads})
	if err != nil {
		return err
	}
	defer ref.Close()
	ps := ref.Stream()
	if ps == nil {
		return fmt.Errorf("%s is not a pack: bench routing needs an expert store", pack)
	}
	full := ps.Report(engine.StreamCounters{}, engine.StreamCounters{}, 0)
	if full.ArenaSlots < full.TotalSlots {
		return fmt.Errorf("%s: the reference needs every expert resident, but %d of %d slots fit in half the memory", pack, full.ArenaSlots, full.TotalSlots)
	}
	windows, src, err := loadWindows(ref, f.tokens, f.ctx, f.chunks)
	if err != nil {
		return err
	}
	type config struct {
		frac  float64
		bonus *float64
		exact *int
	}
	var configs []config
	for _, a := range f.arenas {
		configs = append(configs, config{frac: a})
		for _, b := range f.bonuses {
			for _, j := range f.exact {
				configs = append(configs, config{a, &b, &j})
			}
		}
	}
	rep := routingReport{Pack: pack, Source: src, Ctx: f.ctx, Windows: len(windows), Tokens: len(windows) * f.ctx,
		TotalSlots: full.TotalSlots, SlotBytes: full.SlotBytes}
	prog := env.NewProgress(int64(len(configs)*rep.Tokens), "bench routing", cli.Tokens)
	start := time.Now()
	for _, c := range configs {
		slots := max(1, int(c.frac*float64(full.TotalSlots)))
		// Half a slot more than the slots, so the division gives them.
		mb := (float64(slots) + 0.5) * float64(full.SlotBytes) / (1 << 20)
		cand, err := engine.Open(pack, engine.Options{Threads: f.threads, Stream: engine.StreamOptions{ArenaMB: mb}})
		if err != nil {
			prog.Done()
			return err
		}
		var routing engine.Routing
		if c.bonus != nil {
			routing = engine.Routing{CacheAware: true, Bonus: float32(*c.bonus), Exact: *c.exact}
		}
		res, st, err := evalq.RunThroughStore(cmd.Context(), ref, cand, windows, evalq.ScoreAll, routing, func(n int) { prog.Add(int64(n)) })
		cand.Close()
		if err != nil {
			prog.Done()
			return err
		}
		s := st.Stream
		row := routingRow{ArenaFrac: c.frac, ArenaMB: mb, ArenaSlots: s.ArenaSlots, Bonus: c.bonus, ExactPicks: c.exact,
			KLDMean: res.KLDMean, Top1: res.Top1Agreement, PPLRatio: res.PPLRatio,
			HitRate: s.HitRate, BeladyHit: *s.BeladyHitRate, MissesPerT: s.MissesPerToken, ReadMBPerT: s.ReadMBPerToken,
			ReadAheadPT: s.ReadAheadHitsPerToken}
		if row.BeladyHit > 0 {
			row.OfBelady = row.HitRate / row.BeladyHit
		}
		rep.Rows = append(rep.Rows, row)
	}
	prog.Done()
	rep.Seconds = time.Since(start).Seconds()
	if env.JSON {
		return env.PrintJSON(rep)
	}
	fmt.Fprintf(env.Out, "%s through its expert store against itself all resident, no bonus: %d windows of %d tokens from %s (%.0f s)\n\n",
		pack, rep.Windows, rep.Ctx, src, rep.Seconds)
	tw := tabwriter.NewWriter(env.Out, 0, 4, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| arena\t slots\t bonus\t exact\t KLD\t top-1\t hit rate\t Belady\t of Belady\t misses/token\t MB/token\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, r := range rep.Rows {
		bonus, exact := "none", "-"
		if r.Bonus != nil {
			bonus, exact = fmt.Sprintf("%g", *r.Bonus), fmt.Sprint(*r.ExactPicks)
		}
		fmt.Fprintf(tw, "| %g\t %d\t %s\t %s\t %.5f\t %.4f\t %.4f\t %.4f\t %.3f\t %.3f\t %.3f\t\n", r.ArenaFrac, r.ArenaSlots, bonus, exact,
			r.KLDMean, r.Top1, r.HitRate, r.BeladyHit, r.OfBelady, r.MissesPerT, r.ReadMBPerT)
	}
	return tw.Flush()
}

// numListValue is a comma-separated list flag whose every number is in
// [lo, hi] (lo excluded when loOpen).
type numListValue[T int | float64] struct {
	p      *[]T
	lo, hi T
	loOpen bool
}

func numList[T int | float64](fl *pflag.FlagSet, p *[]T, name string, lo, hi T, loOpen bool, usage string) {
	v := &numListValue[T]{p: p, lo: lo, hi: hi, loOpen: loOpen}
	fl.Var(v, name, fmt.Sprintf("%s, comma-separated, each %s", usage, v.Range()))
}

func (v *numListValue[T]) Range() string {
	if v.loOpen {
		return fmt.Sprintf("over %v, up to %v", v.lo, v.hi)
	}
	return fmt.Sprintf("%v..%v", v.lo, v.hi)
}

func (v *numListValue[T]) String() string {
	parts := make([]string, len(*v.p))
	for i, x := range *v.p {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

func (v *numListValue[T]) Type() string { return "list" }

func (v *numListValue[T]) Set(s string) error {
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

package main

import (
	"fmt"
	"math"
	"text/tabwriter"

	"github.com/spf13/cobra"
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
with every --cache-bonus of --bonuses after each of --exact-picks, each
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
	cli.NumListVar(fl, &f.arenas, "arenas", 0, 1, true, "arena sizes, as fractions of the pack's experts")
	cli.NumListVar(fl, &f.bonuses, "bonuses", -maxCacheBonus, maxCacheBonus, false, "cache bonuses to measure (besides no bonus)")
	cli.NumListVar(fl, &f.exact, "exact-picks", 0, maxExperts, false, "exact picks to measure with each bonus (eval's --exact-picks)")
	return cmd
}

func benchRouting(cmd *cobra.Command, env *cli.Env, pack string, f *benchRoutingFlags) error {
	ref, err := engine.Open(pack, engine.Options{Threads: f.threads, Mode: engine.Exact})
	if err != nil {
		return err
	}
	defer ref.Close()
	windows, src, err := loadWindows(ref, f.tokens, f.ctx, f.chunks)
	if err != nil {
		return err
	}
	sweep := evalq.RoutingSweep{Pack: pack, Threads: f.threads, Arenas: f.arenas, Bonuses: f.bonuses, Exact: f.exact}
	prog := env.NewProgress(int64(len(sweep.Configs())*len(windows)*f.ctx), "bench routing", cli.Tokens)
	rep, err := sweep.Run(cmd.Context(), ref, windows, func(n int) { prog.Add(int64(n)) })
	prog.Done()
	if err != nil {
		return err
	}
	rep.Source = src
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

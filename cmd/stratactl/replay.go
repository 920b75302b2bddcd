package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { register(newReplayCmd) }

func newReplayCmd(env *cli.Env) *cobra.Command {
	var slots int
	cmd := &cobra.Command{
		Use:   "replay TRACE",
		Short: "Replay an expert-demand trace (run/eval --trace) under the store's rule, LRU and Belady's MIN",
		Long: `replay reads a trace written by run --trace or eval --trace and replays its
expert demands through an arena of --slots slots (0: the live store's size),
from the arena content the trace starts with, under the store's own rule
(recency plus frequency of demands, docs/FORMATS.md), plain LRU, and
Belady's MIN (evict the expert next demanded farthest in the future), each
with the recorded read-ahead guesses (when the live store read ahead) and
without. At the live size with the live read-ahead setting, the store-rule replay
gives the live store's counters exactly; it says whether it did. With
cache-aware routing the demands themselves depend on what was resident, so a
replay at another size or policy is what that policy would do on these
demands, not what a live run with it would demand.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := cachesim.ReadFile(args[0])
			if err != nil {
				return err
			}
			if slots > t.Layers*t.Experts {
				return fmt.Errorf("--slots %d: the trace has only %d experts", slots, t.Layers*t.Experts)
			}
			rep, err := cachesim.Replays(t, slots)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if env.JSON {
				return env.PrintJSON(rep)
			}
			fmt.Fprintf(env.Out, "%s: %d layers x %d experts, %d tokens, %d demands; arena %d slots (live %d)\n",
				args[0], t.Layers, t.Experts, t.Tokens, t.Live.Demands, rep.Slots, rep.LiveSlots)
			tw := tabwriter.NewWriter(env.Out, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "policy\tread-ahead\thit rate\tmisses/token\thits\tmisses\tread-ahead hits\treads\t")
			for _, r := range append([]cachesim.Run{rep.Live}, rep.Runs...) {
				fmt.Fprintf(tw, "%s\t%v\t%.4f\t%.3f\t%d\t%d\t%d\t%d\t\n", r.Policy, r.ReadAhead, r.HitRate, r.MissesPerToken,
					r.Counts.Hits, r.Counts.Misses, r.Counts.ReadAheadHits, r.Counts.Reads)
			}
			tw.Flush()
			if rep.LiveMatches {
				fmt.Fprintln(env.Out, "the store-rule replay at the live size reproduces the live counters exactly")
			} else {
				fmt.Fprintln(env.Out, "the store-rule replay at the live size does NOT reproduce the live counters")
			}
			return nil
		},
	}
	cli.IntVar(cmd.Flags(), &slots, "slots", 0, 0, maxLayers*maxExperts, "arena size in slots (0: the live store's)")
	return cmd
}

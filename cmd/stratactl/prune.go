package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/profile"
	"github.com/stratactl/stratactl/prune"
	"github.com/stratactl/stratactl/strata"
)

func init() { register(newPruneCmd) }

type pruneFlags struct {
	profile, keepMap, by, out, keepOut string
	keep                               int
	split                              splitFlags
	carryMTP                           bool
}

func newPruneCmd(env *cli.Env) *cobra.Command {
	var f pruneFlags
	cmd := &cobra.Command{
		Use:   "prune MODEL (--profile P --keep K [--by reap|frequency|ean] | --keep-map keep.strp) -o OUT.gguf",
		Short: "Keep K experts per MoE layer, chosen from a profile or given by a keep map",
		Long: `prune writes OUT.gguf, an ordinary GGUF holding, in every MoE layer, only the
kept experts: every per-expert tensor (ffn_*_exps, the router ffn_gate_inp and
any expert bias) is cut to the kept slices, {arch}.expert_count becomes K,
strata.source.n_expert and stratactl.prune.criterion record where it came
from, and every other tensor and key is copied unchanged. Multi-token-prediction
blocks ({arch}.nextn_predict_layers, never run and in no profile or keep map)
are dropped, the key set to 0, unless --carry-mtp keeps them whole.

With --profile (from stratactl profile) it keeps the K experts of each layer
that score highest by --by (reap: mean gate-weighted output norm over the
tokens routed to the expert; frequency: tokens routed to it; ean: total
gate-weighted output norm), ties to the lower id, and writes the keep map
(ranking by routed tokens, with the profile's statistics) to --keep-out,
by default OUT with .gguf replaced by .keep.strp. pack --keep-map accepts it.
A model that routes by expert groups ({arch}.expert_group_count, DeepSeek-V3's
layout) keeps the same number from every group (the best K/G of each), and
its group keys stay; a keep map that is not group-balanced is refused.
With --keep-map it applies an existing keep map instead; given a --profile too
(of any text), it also reports how much of that profile's routing the kept
experts serve.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPrune(cmd, env, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", "", "profile (keep.strp with statistics) from stratactl profile")
	cli.IntVar(fl, &f.keep, "keep", 0, 1, maxExperts, "experts to keep per MoE layer")
	fl.StringVar(&f.by, "by", "reap", "criterion: reap, frequency or ean")
	fl.StringVar(&f.keepMap, "keep-map", "", "apply this keep map instead of choosing from a profile")
	fl.StringVarP(&f.out, "output", "o", "", "pruned GGUF to write")
	fl.StringVar(&f.keepOut, "keep-out", "", "where to write the keep map (default: OUT with .keep.strp for .gguf)")
	fl.BoolVar(&f.carryMTP, "carry-mtp", false, "keep the multi-token-prediction blocks (nextn_predict_layers), every expert, instead of dropping them")
	f.split.add(fl)
	cli.Verbose(fl, env, "also list the experts each layer keeps")
	cmd.MarkFlagRequired("output")
	return cmd
}

// keepMapPath is where prune writes the keep map by default.
func keepMapPath(out string) string {
	return strings.TrimSuffix(out, ".gguf") + ".keep.strp"
}

func runPrune(cmd *cobra.Command, env *cli.Env, path string, f *pruneFlags) error {
	if f.profile == "" && f.keepMap == "" {
		return fmt.Errorf("give --profile (with --keep) or --keep-map")
	}
	src, err := gguf.OpenModel(path, false)
	if err != nil {
		return err
	}
	defer src.Close()

	var keep *strata.Keep
	var stats *profile.Stats
	criterion := "keep-map"
	keepOut := f.keepOut
	if f.profile != "" {
		pk, err := strata.ReadKeep(f.profile)
		if err != nil {
			return err
		}
		if !pk.IsIdentity() {
			return fmt.Errorf("%s: keeps %d of %d experts: a profile must be of the unpruned model", f.profile, pk.NKeep(), pk.NExpert)
		}
		if stats, err = profile.FromKeep(pk, f.profile); err != nil {
			return err
		}
	}
	if f.keepMap == "" {
		if f.keep == 0 {
			return fmt.Errorf("--keep K (experts per layer) is required with --profile")
		}
		c, err := prune.ParseCriterion(f.by)
		if err != nil {
			return err
		}
		criterion = string(c)
		// A model routing by expert groups keeps the same number from each.
		groups, _ := strata.ExpertGroups(src)
		if keep, err = prune.ChooseGroups(stats, c, f.keep, groups); err != nil {
			return fmt.Errorf("%s: %w", f.profile, err)
		}
		if keepOut == "" {
			keepOut = keepMapPath(f.out)
		}
	} else {
		if cmd.Flags().Changed("keep") || cmd.Flags().Changed("by") {
			return fmt.Errorf("--keep and --by choose from a profile; --keep-map already says what to keep")
		}
		if keep, err = strata.ReadKeep(f.keepMap); err != nil {
			return err
		}
	}
	split, err := f.split.options()
	if err != nil {
		return err
	}
	if err := checkFiles([]string{path, f.profile, f.keepMap}, append(outputs(f.out, split), keepOut)); err != nil {
		return err
	}

	var retained []prune.Retained
	if stats != nil {
		if retained, err = prune.Retention(stats, keep); err != nil {
			return fmt.Errorf("%s against %s: %w", f.keepMap, f.profile, err)
		}
	}

	var total int64
	for i := range src.Tensors {
		total += src.Tensors[i].Size
	}
	prog := env.NewProgress(total*int64(keep.NKeep())/int64(keep.NExpert), "prune", cli.Bytes)
	res, err := prune.Write(cmd.Context(), src, keep, f.out, prune.Options{Criterion: criterion, Progress: prog.Add, Split: split, KeepMap: keepOut, CarryMTP: f.carryMTP})
	prog.Done()
	if err != nil {
		return err
	}
	rep := prune.Report{Model: path, Criterion: criterion, KeepMap: keepOut, Keep: keep.Keep, Retained: retained,
		RetainedMean: prune.MeanRetained(retained), Result: res}
	if keepOut == "" {
		rep.KeepMap = f.keepMap
	}
	if env.JSON {
		return env.PrintJSON(rep)
	}
	fmt.Fprintf(env.Out, "pruned %s to %d of %d experts per layer by %s: %d per-expert tensors sliced, %d copied; %d -> %d bytes\n",
		path, res.NKeep, res.NExpert, criterion, res.SlicedTensors, res.CopiedTensors, res.SourceBytes, res.Bytes)
	if res.MTP != nil {
		fmt.Fprintf(env.Out, "%s\n", res.MTP)
	}
	if m := rep.RetainedMean; m != nil {
		fmt.Fprintf(env.Out, "on the profile, the kept experts serve %.1f%% of the routed (token, expert) slots, %.1f%% of the gate weight, %.1f%% of EAN (mean over layers)\n",
			100*m.Count, 100*m.GateSum, 100*m.EAN)
	}
	if env.Verbose {
		for l, b := range keep.Layers {
			fmt.Fprintf(env.Out, "  layer %d keeps %v\n", b, keep.Keep[l])
		}
	}
	fmt.Fprintf(env.Out, "wrote %s\n", f.out)
	if keepOut != "" {
		fmt.Fprintf(env.Out, "wrote %s\n", keepOut)
	}
	return nil
}

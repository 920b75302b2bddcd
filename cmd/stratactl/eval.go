package main

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/cachesim"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { register(newEvalCmd) }

type evalFlags struct {
	ref         string
	tokens      tokenFlags
	score       string
	ctx, chunks int
	threads     int
	exact       bool
	arenaMB     float64
	cache       cacheFlags
	trace       string
}

func newEvalCmd(env *cli.Env) *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval CANDIDATE --ref REFERENCE (--text FILE | --ids FILE)",
		Short: "Compare a model's next-token distributions with a reference's: perplexity, KL divergence, top-1 agreement",
		Long: `eval runs CANDIDATE and REFERENCE (GGUF files or packs) over the same windows of
--ctx tokens, each on its own from position 0 with no BOS, and reports the
perplexity of both (NLL of tokens 1..ctx-1), the KL divergence
KL(P_ref || P_cand) of the next-token distributions at positions 0..ctx-2
(softmax in float64), its mean, median and percentiles, top-1 agreement, and
the change in probability of the actual next token (Δp) with the percentiles
llama-perplexity --kl-divergence prints. By default every position of a
window is scored; --score second-half scores only what llama-perplexity
scores (the logits at positions ctx/2..ctx-2, predicting tokens
ctx/2+1..ctx-1), so the figures compare with llama.cpp's. Unlike
llama-perplexity, no probability is dropped or quantized.

The windows come from --ids (little-endian int32 token ids) or --text
(tokenized with the reference's tokenizer), cut into --ctx tokens; --chunks
limits how many are used.

With --arena-mb, --cache-bonus or --trace, a pack CANDIDATE runs through its
expert store as run decodes: every window in order through one arena of
--arena-mb (0: every expert), one token at a time, with cache-aware routing
when --cache-bonus is given (REFERENCE is run as before; it may be the same
pack, then all resident). The report adds the store's figures (hit rate and
Belady's MIN hit rate on the same demands, misses, MB read, read-ahead hits
and wait per token); --trace FILE writes the demands (docs/FORMATS.md, STRC).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd, env, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.ref, "ref", "", "reference model (GGUF or pack)")
	f.tokens.add(fl, "evaluation")
	ctxFlag(fl, &f.ctx)
	cli.IntVar(fl, &f.chunks, "chunks", 0, 0, maxTokenCount, "windows to evaluate (0: all)")
	fl.StringVar(&f.score, "score", evalq.ScoreAll.String(), "positions scored in each window: "+strings.Join(evalq.ScoringNames(), " or ")+" (llama-perplexity's)")
	cli.Threads(fl, &f.threads, "matmul threads (0: GOMAXPROCS); results do not depend on it")
	exactFlag(fl, &f.exact, "the candidate (REFERENCE stays exact)")
	cli.Float64Var(fl, &f.arenaMB, "arena-mb", 0, 0, maxArenaMB, "pack candidate: run it through its expert store with this much memory for resident experts, in MiB (0: every expert)")
	f.cache.add(fl)
	fl.StringVar(&f.trace, "trace", "", "pack candidate: write its expert demands to this file (STRC, docs/FORMATS.md; stratactl replay reads it)")
	cmd.MarkFlagRequired("ref")
	return cmd
}

// tokenFlags are the token input of profile and eval: a text file or a file
// of token ids, exactly one (run's prompt is --prompt TEXT or the same --ids).
type tokenFlags struct{ text, ids string }

func (t *tokenFlags) add(fl *pflag.FlagSet, role string) {
	fl.StringVar(&t.text, "text", "", role+" text file, tokenized with the model's tokenizer")
	idsFlag(fl, &t.ids, role+" token ids (little-endian int32)")
}

// idsFlag declares --ids, the token-id file of every command that reads one.
func idsFlag(fl *pflag.FlagSet, p *string, usage string) { fl.StringVar(p, "ids", "", usage) }

// maxCtx and maxTokenCount bound --ctx and the token and window counts: a
// window longer than any model's context, or more tokens than a file of ids
// could hold in memory, is a mistake.
const (
	maxCtx        = 1 << 20
	maxTokenCount = math.MaxInt32
)

// ctxFlag declares --ctx, the window length of profile and eval.
func ctxFlag(fl *pflag.FlagSet, p *int) {
	cli.IntVar(fl, p, "ctx", 512, 2, maxCtx, "tokens per window")
}

// loadWindows reads the token windows of --text or --ids (exactly one) for
// model m, at most max windows of ctx tokens.
func loadWindows(m *engine.Model, in tokenFlags, ctx, max int) ([][]int32, string, error) {
	if (in.text == "") == (in.ids == "") {
		return nil, "", fmt.Errorf("give exactly one of --text and --ids")
	}
	if ctx > m.Config.Context {
		return nil, "", fmt.Errorf("--ctx %d exceeds the model's context length %d", ctx, m.Config.Context)
	}
	t := evalq.Tokens{Text: in.text, IDs: in.ids}
	w, err := t.Windows(m, ctx, max)
	return w, t.Source(), err
}

func runEval(cmd *cobra.Command, env *cli.Env, candPath string, f *evalFlags) error {
	score, err := evalq.ParseScoring(f.score)
	if err != nil {
		return fmt.Errorf("--score: %w", err)
	}
	if score.Scored(f.ctx) < 1 {
		return fmt.Errorf("--ctx %d leaves no position to score under --score %s", f.ctx, score)
	}
	if err := checkFiles([]string{candPath, f.ref, f.tokens.text, f.tokens.ids}, []string{f.trace}); err != nil {
		return err
	}
	ref, err := engine.Open(f.ref, engine.Options{Threads: f.threads, Mode: engine.Exact})
	if err != nil {
		return err
	}
	defer ref.Close()
	routing := f.cache.routing()
	streaming := f.arenaMB > 0 || f.cache.on() || f.trace != ""
	cand, err := engine.Open(candPath, engine.Options{Threads: f.threads, Mode: modeOf(f.exact), Stream: engine.StreamOptions{ArenaMB: f.arenaMB}})
	if err != nil {
		return err
	}
	defer cand.Close()
	ps := cand.Stream()
	if streaming && ps == nil {
		return fmt.Errorf("--arena-mb, --cache-bonus and --trace need a pack candidate (%s is a GGUF: every expert is resident)", candPath)
	}
	windows, src, err := loadWindows(ref, f.tokens, f.ctx, f.chunks)
	if err != nil {
		return err
	}
	prog := env.NewProgress(int64(len(windows)*f.ctx), "eval", cli.Tokens)
	start := time.Now()
	progress := func(n int) { prog.Add(int64(n)) }
	var res evalq.Result
	var st *evalq.Streamed
	if streaming {
		res, st, err = evalq.RunThroughStore(cmd.Context(), ref, cand, windows, score, routing, progress)
	} else {
		res, _, err = evalq.Run(cmd.Context(), ref, cand, windows, score, progress)
	}
	prog.Done()
	if err != nil {
		return err
	}
	rep := evalq.Report{Candidate: candPath, Reference: f.ref, Mode: cand.Mode.String(), Source: src, Ctx: f.ctx, Score: score.String(), FirstPos: score.First(f.ctx), Seconds: time.Since(start).Seconds(), Result: res}
	if streaming {
		rep.Stream = st.Stream
		if f.trace != "" {
			if err := cachesim.WriteFile(f.trace, st.Trace); err != nil {
				return err
			}
		}
		if f.cache.on() {
			rep.CacheBonus, rep.ExactPicks = &f.cache.bonus, &f.cache.exact
		}
	}
	if env.JSON {
		return env.PrintJSON(rep)
	}
	printEval(env, &rep)
	return nil
}

func printEval(env *cli.Env, r *evalq.Report) {
	w := env.Out
	fmt.Fprintf(w, "%s (%s mode) against %s (exact mode): %d windows of %d tokens from %s, %d positions scored (%d..%d of each window; %.1f s)\n\n",
		r.Candidate, r.Mode, r.Reference, r.Windows, r.Ctx, r.Source, r.Tokens, r.FirstPos, r.Ctx-2, r.Seconds)
	fmt.Fprintln(w, "====== Perplexity statistics ======")
	fmt.Fprintf(w, "PPL(cand)           : %10.6f ± %10.6f\n", r.PPL, r.PPLErr)
	fmt.Fprintf(w, "PPL(ref)            : %10.6f ± %10.6f\n", r.PPLRef, r.PPLRefErr)
	fmt.Fprintf(w, "ln(PPL(cand)/PPL(ref)): %10.6f\n", r.LogPPLRatio)
	fmt.Fprintf(w, "PPL(cand)/PPL(ref)  : %10.6f\n\n", r.PPLRatio)
	fmt.Fprintln(w, "====== KL divergence statistics ======")
	fmt.Fprintf(w, "Mean    KLD: %10.6f ± %10.6f\n", r.KLDMean, r.KLDMeanErr)
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for _, p := range r.KLDPercentiles {
		fmt.Fprintf(tw, "%s\tKLD:\t%10.6f\n", label(p.Label), p.Value)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "====== Token probability statistics ======")
	fmt.Fprintf(w, "Mean    Δp: %7.3f ± %5.3f %%\n", 100*r.DeltaPMean, 100*r.DeltaPMeanErr)
	for _, p := range r.DeltaPPercentiles {
		fmt.Fprintf(tw, "%s\tΔp:\t%7.3f%%\n", label(p.Label), 100*p.Value)
	}
	tw.Flush()
	fmt.Fprintf(w, "RMS Δp    : %7.3f %%\n", 100*r.DeltaPRMS)
	fmt.Fprintf(w, "Same top p: %7.3f ± %5.3f %%\n", 100*r.Top1Agreement, 100*r.Top1AgreementErr)
	if st := r.Stream; st != nil {
		bonus := "no cache bonus"
		if r.CacheBonus != nil {
			bonus = fmt.Sprintf("cache bonus %g after %d exact picks", *r.CacheBonus, *r.ExactPicks)
		}
		fmt.Fprintf(w, "\n====== Expert store (candidate, %d of %d slots, %s) ======\n", st.ArenaSlots, st.TotalSlots, bonus)
		fmt.Fprintf(w, "hit rate %.4f (Belady's MIN %.4f); per token: misses %.3f, read %.3f MB, read-ahead hits %.3f (of %.3f reads), waiting %.3f ms\n",
			st.HitRate, *st.BeladyHitRate, st.MissesPerToken, st.ReadMBPerToken, st.ReadAheadHitsPerToken, st.GuessesPerToken, st.WaitMsPerToken)
	}
}

// label prints a percentile's name as llama-perplexity does.
func label(l string) string {
	switch l {
	case "max":
		return "Maximum"
	case "min":
		return "Minimum"
	case "median":
		return "Median"
	}
	return l
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { register(newDemoCmd) }

type demoOptions struct {
	model, calib, heldout, out, by, prompt string
	keep, ctx, tokens                      int
}

func newDemoCmd(env *cli.Env) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole pipeline (inspect, profile, prune, pack, verify, run, eval) on the small model in testdata/ or any supported model",
		Long: `demo runs, one after the other, the commands a user would run to convert a model,
each with --json, and prints their command lines and one summary table of what they
measured. By default it works on the small model in testdata/ (run it from the
repository root); --model runs the same pipeline on any model the engine supports
(` + strings.Join(engine.SupportedArchitectures(), ", ") + `), with --calib and --heldout texts for its tokenizer.
It writes into a new temporary folder, which it keeps.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return demoRun(cmd, env, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", filepath.Join("testdata", "tiny-qwen3moe-iq3s.gguf"), "source model (GGUF)")
	f.StringVar(&o.calib, "calib", filepath.Join("testdata", "calib.txt"), "calibration text for profile")
	f.StringVar(&o.heldout, "heldout", filepath.Join("testdata", "heldout.txt"), "held-out text for eval")
	f.StringVarP(&o.out, "output", "o", "", "folder for every output (default: a new temporary folder)")
	cli.IntVar(f, &o.keep, "keep", 0, 0, maxExperts, "experts to keep per layer (0: half of them)")
	f.StringVar(&o.by, "by", "reap", "pruning criterion: reap, frequency or ean")
	cli.IntVar(f, &o.ctx, "ctx", 256, 2, maxCtx, "tokens per window for profile and eval")
	f.StringVar(&o.prompt, "prompt", "def main(", "prompt for the smoke decode")
	cli.IntVar(f, &o.tokens, "tokens", 32, 1, maxCtx, "tokens to generate in the smoke decode")
	return cmd
}

// demoStep is one command of the pipeline and what it printed.
type demoStep struct {
	Name    string         `json:"name"`
	Command string         `json:"command"`
	Seconds float64        `json:"seconds"`
	Result  map[string]any `json:"result"`
	Summary string         `json:"summary"`
}

// demoOutputs are the names demo writes in its folder, removed again when a
// step fails so that a failed demo leaves nothing half made.
var demoOutputs = []string{"profile.strp", "pruned.gguf", "keep.strp", "pack"}

func demoRun(cmd *cobra.Command, env *cli.Env, o *demoOptions) (err error) {
	for _, p := range []string{o.model, o.calib, o.heldout} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("demo: %w (run it from the repository root, or pass --model/--calib/--heldout)", err)
		}
	}
	dir := o.out
	created := false
	if dir == "" {
		d, err := os.MkdirTemp("", "stratactl-demo-")
		if err != nil {
			return err
		}
		dir, created = d, true
	} else {
		if _, statErr := os.Stat(dir); errors.Is(statErr, fs.ErrNotExist) {
			created = true
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	defer func() {
		if err == nil {
			return
		}
		if created {
			os.RemoveAll(dir)
			return
		}
		for _, name := range demoOutputs {
			os.RemoveAll(filepath.Join(dir, name))
		}
	}()
	var steps []demoStep
	step := func(name string, summarize func(doc) string, args ...string) (doc, error) {
		line := "stratactl " + quoteArgs(args)
		if !env.JSON {
			fmt.Fprintf(env.Err, "==> %s\n", line)
		}
		var out, errOut bytes.Buffer
		// The step's error is repeated in demo's own, so that the last line
		// says both what failed and why; a terminal still sees progress bars.
		var stepErr io.Writer = &errOut
		terminal := env.Terminal && !env.JSON
		if terminal {
			stepErr = io.MultiWriter(env.Err, &errOut)
		}
		sub := &cli.Env{Stdin: env.Stdin, Out: &out, Err: stepErr, Terminal: terminal, Args: append([]string{"stratactl"}, args...)}
		start := time.Now()
		code := run(cmd.Context(), sub, append(append([]string(nil), args...), "--json"))
		secs := time.Since(start).Seconds()
		var missing []string
		d := doc{missing: &missing}
		if code != 0 {
			why := strings.TrimPrefix(lastLine(errOut.String()), "stratactl: ")
			return d, fmt.Errorf("demo: step %s failed (exit %d): %s: %s", name, code, line, why)
		}
		if !terminal {
			env.Err.Write(errOut.Bytes())
		}
		if err := json.Unmarshal(out.Bytes(), &d.m); err != nil {
			return d, fmt.Errorf("demo: %s printed no JSON document: %v", name, err)
		}
		summary := summarize(d)
		if len(missing) > 0 {
			return d, fmt.Errorf("demo: %s --json lacks %s", name, strings.Join(missing, ", "))
		}
		steps = append(steps, demoStep{Name: name, Command: line, Seconds: secs, Result: d.m, Summary: summary})
		return d, nil
	}
	path := func(name string) string { return filepath.Join(dir, name) }

	ins, err := step("inspect", func(r doc) string {
		m := r.obj("moe")
		return fmt.Sprintf("%s: %d MoE layers x %d experts (%d used), experts %.1f%% of %s",
			r.str("architecture"), m.num("layers"), m.num("experts"), m.num("experts_used"), 100*m.flt("expert_share"), size(r.flt("file_bytes")))
	}, "inspect", o.model)
	if err != nil {
		if v, ok := ins.m["moe"]; ok && v == nil {
			why, _ := ins.m["moe_error"].(string)
			if why == "" {
				why = "no mixture-of-experts layers"
			}
			return fmt.Errorf("demo: %s: %s", o.model, why)
		}
		return err
	}
	keep := o.keep
	if keep == 0 {
		keep = ins.obj("moe").num("experts") / 2
	}
	ctx := strconv.Itoa(o.ctx)
	if _, err := step("profile", func(r doc) string {
		return fmt.Sprintf("%d tokens in %d windows, %.0f tokens/s", r.num("tokens"), r.num("windows"), r.flt("tokens_per_s"))
	}, "profile", o.model, "--text", o.calib, "--ctx", ctx, "-o", path("profile.strp")); err != nil {
		return err
	}
	if _, err := step("prune", func(r doc) string {
		return fmt.Sprintf("%d of %d experts per layer by %s; GGUF %s -> %s", r.num("n_expert"), r.num("n_expert_source"), r.str("criterion"), size(r.flt("source_bytes")), size(r.flt("bytes")))
	}, "prune", o.model, "--profile", path("profile.strp"), "--keep", strconv.Itoa(keep), "--by", o.by, "-o", path("pruned.gguf"), "--keep-out", path("keep.strp")); err != nil {
		return err
	}
	pk, err := step("pack", func(r doc) string {
		var sizes []string
		for _, out := range r.arr("outputs") {
			if m, ok := out.(map[string]any); ok {
				o := doc{m: m, missing: r.missing, prefix: "outputs[]."}
				sizes = append(sizes, fmt.Sprintf("%s %s", o.str("path"), size(o.flt("bytes"))))
			}
		}
		return fmt.Sprintf("%s experts, rel. MSE %.4f; %s", r.obj("parameters").str("type"), r.flt("rel_mse"), strings.Join(sizes, ", "))
	}, "pack", o.model, "--keep-map", path("keep.strp"), "-o", path("pack"))
	if err != nil {
		return err
	}
	if _, err := step("verify", func(r doc) string {
		verdict := "FAILED"
		if r.boolean("ok") {
			verdict = "OK"
		}
		return fmt.Sprintf("%s: %d checks, %d slots against the source, rel. MSE %.4f", verdict, len(r.arr("checks")), r.num("slots_checked"), r.flt("rel_mse"))
	}, "verify", path("pack"), "--source", o.model); err != nil {
		return err
	}
	// A quarter of the kept experts fit in the arena, so the decode streams;
	// never fewer than a token's experts and one more, the engine's minimum.
	model := pk.obj("model")
	slots := max(model.num("n_expert")*model.num("moe_layers")/4, ins.obj("moe").num("experts_used")+1)
	arenaMB := float64(slots) * model.flt("slot_bytes") / (1 << 20)
	if _, err := step("run", func(r doc) string {
		s := r.obj("stream")
		io := "buffered"
		if s.boolean("direct_io") {
			io = "O_DIRECT"
		}
		return fmt.Sprintf("%d tokens at %.1f tokens/s; arena %d of %d slots, hit rate %.2f, %.2f MB read per token (%s); %q",
			len(r.arr("generated_ids")), r.flt("decode_tokens_per_s"), s.num("arena_slots"), s.num("total_slots"), s.flt("hit_rate"), s.flt("read_mb_per_token"), io, r.str("text"))
	}, "run", path("pack"), "--prompt", o.prompt, "-n", strconv.Itoa(o.tokens), "--arena-mb", strconv.FormatFloat(arenaMB, 'f', -1, 64)); err != nil {
		return err
	}
	if _, err := step("eval", func(r doc) string {
		return fmt.Sprintf("%d tokens: PPL %.2f (source %.2f), mean KLD %.4f, median KLD %.4f, top-1 agreement %.3f",
			r.num("tokens"), r.flt("ppl"), r.flt("ppl_ref"), r.flt("kld_mean"), r.flt("kld_median"), r.flt("top1_agreement"))
	}, "eval", path("pack"), "--ref", o.model, "--text", o.heldout, "--ctx", ctx); err != nil {
		return err
	}

	if env.JSON {
		return env.PrintJSON(map[string]any{"output": dir, "steps": steps})
	}
	fmt.Fprintf(env.Out, "\nstratactl demo: %s -> %s\n\n", o.model, dir)
	tw := tabwriter.NewWriter(env.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "step\ttime\tresult")
	for _, s := range steps {
		fmt.Fprintf(tw, "%s\t%.1f s\t%s\n", s.Name, s.Seconds, s.Summary)
	}
	tw.Flush()
	fmt.Fprintln(env.Out, "\ncommands (each also takes --json):")
	for _, s := range steps {
		fmt.Fprintf(env.Out, "  %s\n", s.Command)
	}
	return nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`()") {
			q[i] = strconv.Quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// doc reads a command's decoded --json output. A field that is missing or of
// another type is remembered, and the step fails: a summary must never show
// a zero that nobody measured.
type doc struct {
	m       map[string]any
	missing *[]string
	prefix  string
}

func (d doc) get(k string) (any, bool) {
	v, ok := d.m[k]
	if !ok {
		*d.missing = append(*d.missing, d.prefix+k)
	}
	return v, ok
}

func (d doc) obj(k string) doc {
	v, _ := d.get(k)
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		*d.missing = append(*d.missing, d.prefix+k+" (not an object)")
	}
	return doc{m: m, missing: d.missing, prefix: d.prefix + k + "."}
}

func (d doc) arr(k string) []any {
	v, _ := d.get(k)
	a, _ := v.([]any)
	return a
}

func (d doc) str(k string) string {
	v, _ := d.get(k)
	s, _ := v.(string)
	return s
}

func (d doc) flt(k string) float64 {
	v, ok := d.get(k)
	f, isNum := v.(float64)
	if ok && !isNum {
		*d.missing = append(*d.missing, d.prefix+k+" (not a number)")
	}
	return f
}

func (d doc) num(k string) int { return int(d.flt(k)) }

func (d doc) boolean(k string) bool {
	v, _ := d.get(k)
	b, _ := v.(bool)
	return b
}

// size prints a byte count with a unit that keeps it readable.
func size(bytes float64) string {
	switch {
	case bytes >= 1e9:
		return fmt.Sprintf("%.2f GB", bytes/1e9)
	case bytes >= 1e6:
		return fmt.Sprintf("%.2f MB", bytes/1e6)
	case bytes >= 1e3:
		return fmt.Sprintf("%.1f kB", bytes/1e3)
	}
	return fmt.Sprintf("%.0f B", bytes)
}

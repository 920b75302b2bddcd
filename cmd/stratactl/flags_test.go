package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/internal/cli"
)

// allCommands is every runnable command of the tree, by its path
// ("bench decode").
func allCommands() map[string]*cobra.Command {
	var out, errb bytes.Buffer
	cmds := map[string]*cobra.Command{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			cmds[strings.TrimPrefix(c.CommandPath(), "stratactl ")] = c
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(cli.Test(&out, &errb)))
	return cmds
}

// TestNumericFlagsAreBounded: every numeric flag of every command is declared
// with a range (internal/cli's IntVar, Float64Var...), so that a value that
// makes no sense is refused before any work; only a seed, where every value
// is as good as another, may take any number.
func TestNumericFlagsAreBounded(t *testing.T) {
	numeric := []string{"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
		"float", "float32", "float64", "duration", "intSlice", "floatSlice", "count"}
	n := 0
	for path, c := range allCommands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Value.(cli.Bounded); ok {
				n++
				return
			}
			if f.Name != "seed" && slices.Contains(numeric, f.Value.Type()) {
				t.Errorf("%s --%s (%s) has no range", path, f.Name, f.Value.Type())
			}
		})
	}
	if n < 40 {
		t.Errorf("only %d bounded flags found: the walk missed commands", n)
	}
}

// TestOneSpelling: the flags shared across commands are spelled one way:
// the worker count is -j/--threads, a keep count --keep (an int), a keep
// map --keep-map (a file), token ids --ids; the names they replaced are gone.
func TestOneSpelling(t *testing.T) {
	for path, c := range allCommands() {
		fl := c.Flags()
		for _, gone := range []string{"jobs", "calib-ids"} {
			if fl.Lookup(gone) != nil {
				t.Errorf("%s still has --%s", path, gone)
			}
		}
		if f := fl.ShorthandLookup("j"); f != nil && f.Name != "threads" {
			t.Errorf("%s: -j is --%s, want --threads", path, f.Name)
		}
		if f := fl.Lookup("threads"); f != nil && f.Shorthand != "j" {
			t.Errorf("%s: --threads has no -j", path)
		}
		if f := fl.Lookup("keep"); f != nil && f.Value.Type() != "int" {
			t.Errorf("%s: --keep is a %s, want a count", path, f.Value.Type())
		}
		if f := fl.Lookup("keep-map"); f != nil && f.Value.Type() != "string" {
			t.Errorf("%s: --keep-map is a %s, want a file", path, f.Value.Type())
		}
		if f := fl.Lookup("ids"); f != nil && f.Value.Type() != "string" {
			t.Errorf("%s: --ids is a %s, want a file", path, f.Value.Type())
		}
	}
	for _, path := range []string{"profile", "eval", "run"} {
		if allCommands()[path].Flags().Lookup("ids") == nil {
			t.Errorf("%s has no --ids", path)
		}
	}
	for _, path := range []string{"profile", "eval"} {
		if allCommands()[path].Flags().Lookup("text") == nil {
			t.Errorf("%s has no --text", path)
		}
	}
}

// TestVerboseSaysMore: every command that offers -v prints more with it, and
// -v is not accepted elsewhere.
func TestVerboseSaysMore(t *testing.T) {
	in := newHostileInputs(t)
	out := t.TempDir()
	// A GGUF with requantized experts: verify -v lists the tensors it
	// copied unchanged as well.
	q := filepath.Join(out, "verify.gguf")
	mustRun(t, "quantize", in.model, "-o", q, "--type", "q2_0")
	cases := map[string][]string{
		"quantize": {"quantize", in.model, "-o", filepath.Join(out, "q.gguf"), "--type", "q8_0"},
		"prune":    {"prune", in.model, "--keep-map", in.keepMap, "-o", filepath.Join(out, "p.gguf")},
		"verify":   {"verify", q, "--source", in.model},
		"bench decode": {"bench", "decode", "--experts", "4", "--used", "2", "--arena-frac", "1", "--layers", "1", "--embd", "64", "--heads", "1", "--heads-kv", "1",
			"--head-dim", "64", "--ff", "64", "--vocab", "300", "--prompt", "1", "-n", "2", "--mem-mb", "1", "--disk-slots", "1", "--dir", out},
	}
	lines := func(args ...string) int {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), cli.Test(&stdout, &stderr), args); code != 0 {
			t.Fatalf("stratactl %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		return strings.Count(stdout.String()+stderr.String(), "\n")
	}
	for path, c := range allCommands() {
		if c.Flags().ShorthandLookup("v") == nil {
			code := run(context.Background(), cli.Test(&bytes.Buffer{}, &bytes.Buffer{}), append(strings.Fields(path), "-v", "--help"))
			if code == 0 {
				t.Errorf("%s accepts -v without offering it", path)
			}
			continue
		}
		args, ok := cases[path]
		if !ok {
			t.Errorf("%s offers -v and this test does not check that it says more", path)
			continue
		}
		plain, verbose := lines(args...), lines(append(args, "-v")...)
		if verbose <= plain {
			t.Errorf("%s: %d lines with -v, %d without", path, verbose, plain)
		}
	}
}

// TestInterrupt: SIGINT or SIGTERM during work prints "interrupted" and exits
// 130, through the same signal context main uses. The signal goes to this
// process after the handler is installed, so it never kills the test.
func TestInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, stop := cli.SignalContext(context.Background())
			defer stop()
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			// Ten minutes of measuring unless the signal stops it.
			code := run(ctx, cli.Test(&stdout, &stderr), []string{"bench", "quant", "--seconds", "600", "--mib", "1", "--type", "q8_0"})
			if code != cli.ExitInterrupted || stderr.String() != "stratactl: interrupted\n" {
				t.Errorf("exit %d, stderr %q; want %d and \"stratactl: interrupted\"", code, stderr.String(), cli.ExitInterrupted)
			}
		})
	}
}

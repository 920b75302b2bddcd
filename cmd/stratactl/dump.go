package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"golang.org/x/term"
)

func init() { register(newDumpCmd) }

func newDumpCmd(env *cli.Env) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "dump FILE TENSOR",
		Short: "Write a tensor's weights, dequantized, as raw little-endian float32",
		Long: `Dequantize one tensor of a GGUF file exactly as ggml does and write its
weights as raw little-endian float32 (no header, ne0 fastest) to -o OUT
(written atomically) or to stdout.

With --json the raw weights go only to -o OUT (if given), and stdout gets a
JSON summary: tensor, type, dims, elements, bytes written, min/max/mean/rms
of the finite weights and counts of NaN and infinity. --json without -o
decodes the whole tensor for the summary and writes no weights anywhere.
Raw weights are never written to a terminal.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDump(cmd.Context(), env, args[0], args[1], out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the weights to this file instead of stdout")
	return cmd
}

func runDump(ctx context.Context, env *cli.Env, path, name, out string) error {
	if err := checkFiles([]string{path}, []string{out}); err != nil {
		return err
	}
	f, err := gguf.OpenModel(path, false)
	if err != nil {
		return err
	}
	defer f.Close()
	ti, ok := f.Tensor(name)
	if !ok {
		return fmt.Errorf("%s: tensor %q does not exist (the file has %d tensors)", path, name, len(f.Tensors))
	}
	var w io.Writer
	var atomic *gguf.AtomicFile
	switch {
	case out != "":
		if atomic, err = gguf.CreateAtomic(out); err != nil {
			return err
		}
		defer atomic.Abort() // no effect after Commit
		w = atomic
	case !env.JSON:
		if fd, ok := env.Out.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
			return errors.New("refusing to write raw float32 to a terminal: use -o FILE, redirect stdout, or --json for a summary")
		}
		w = env.Out
	}

	dest := out
	if dest == "" {
		dest = "stdout"
	}
	sum, err := convert.Dump(ctx, f, ti, w, dest, progressFor(env))
	if err != nil {
		return err
	}
	if atomic != nil {
		if err := atomic.Commit(); err != nil {
			return err
		}
	}
	sum.Output = out
	switch {
	case env.JSON:
		return env.PrintJSON(sum)
	case out != "":
		fmt.Fprintf(env.Out, "%s: %s %s %v: %d weights, %d bytes written to %s\n",
			path, name, sum.Type, ti.Dims, sum.Elements, sum.BytesWritten, out)
	}
	return nil
}

// Command stratactl converts Mixture-of-Experts GGUF models into packs that
// stream experts from SSD, and checks, runs and measures them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/internal/cli"
)

// commands is filled by each verb's file in init, so verbs never edit a
// shared list.
var commands []func(*cli.Env) *cobra.Command

func register(f func(*cli.Env) *cobra.Command) { commands = append(commands, f) }

// newRoot builds the command tree over env.
func newRoot(env *cli.Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "stratactl",
		Short:         "Turn MoE GGUF models into SSD-streaming packs, verify and run them",
		Version:       cli.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&env.JSON, "json", false, "print one JSON document for machines")
	root.SetOut(env.Out)
	root.SetErr(env.Err)
	for _, f := range commands {
		root.AddCommand(f(env))
	}
	return root
}

// run executes args and returns the exit status, printing a one-line error.
// A command that fails after ctx was cancelled (SIGINT or SIGTERM in main)
// was interrupted: whatever error the cancellation surfaced as, it prints
// "interrupted" and exits with cli.ExitInterrupted.
func run(ctx context.Context, env *cli.Env, args []string) int {
	root := newRoot(env)
	root.SetArgs(args)
	err := cli.Interrupted(ctx, finishCPUProfile(root.ExecuteContext(ctx)))
	if err != nil {
		var ee *cli.ExitError
		if !(errors.As(err, &ee) && ee.Silent) {
			fmt.Fprintf(env.Err, "stratactl: %v\n", err)
		}
	}
	return cli.ExitCode(err)
}

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	code := run(ctx, cli.Default(), os.Args[1:])
	stop()
	os.Exit(code)
}

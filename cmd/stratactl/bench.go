package main

import (
	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/internal/cli"
)

// benchCommands is filled by each benchmark's file in init.
var benchCommands []func(*cli.Env) *cobra.Command

func registerBench(f func(*cli.Env) *cobra.Command) { benchCommands = append(benchCommands, f) }

func init() { register(newBenchCmd) }

func newBenchCmd(env *cli.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure speed against the physical limits and ggml, measured in the same run",
	}
	addCPUProfileFlag(cmd)
	for _, f := range benchCommands {
		cmd.AddCommand(f(env))
	}
	return cmd
}

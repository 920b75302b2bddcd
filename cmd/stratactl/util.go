package main

import (
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
)

// progressFor gives the pipelines a byte progress bar, shown on a terminal only.
func progressFor(env *cli.Env) convert.ProgressFunc {
	return func(total int64, desc string) convert.Progress { return env.NewProgress(total, desc, cli.Bytes) }
}

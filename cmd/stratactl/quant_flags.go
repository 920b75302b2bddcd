package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/quant"
)

// maxQ2Candidates bounds --q2-candidates (and bench q2rules --candidates):
// the search's time grows linearly with it, and beyond 16 the error no longer
// falls (docs/QUALITY.md), so 64 already costs 8 times the default for
// nothing.
const maxQ2Candidates = 64

// quantFlags are the target type and Q2_0 settings shared by quantize and
// pack.
type quantFlags struct {
	typ, q2mode string
	q2cand      int
}

func (q *quantFlags) add(fl *pflag.FlagSet, typeDefault, typeHelp string) {
	fl.StringVar(&q.typ, "type", typeDefault, typeHelp)
	fl.StringVar(&q.q2mode, "q2-mode", "search", "Q2_0 scale rule: search or ggml")
	cli.IntVar(fl, &q.q2cand, "q2-candidates", 0, 0, maxQ2Candidates, fmt.Sprintf("Q2_0 search: candidate scales per sign (0: the default, %d)", quant.DefaultQ2Candidates))
}

func (q *quantFlags) parse() (quant.Type, convert.Q2Params, error) {
	t, err := quant.ParseType(q.typ)
	if err != nil {
		return 0, convert.Q2Params{}, err
	}
	mode, err := convert.ParseQ2Mode(q.q2mode)
	if err != nil {
		return 0, convert.Q2Params{}, err
	}
	return t, convert.Q2Params{Mode: mode, Candidates: q.q2cand}, nil
}

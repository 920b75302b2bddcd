package engine

import (
	"context"
	"fmt"
)

// Group runs several independent sequences through the layers together,
// the calibration run's shape (many short windows, each from position 0):
// every weight product of a layer (attention's projections, the router,
// each expert) takes all the sequences' tokens at once, so an expert's
// weights are decoded once for every token of every sequence routed to
// it, while attention and the recurrent mixers run per sequence on its
// own cache and state. Each element is the arithmetic a Session gives the
// same sequence alone (the products' bits do not depend on the batch;
// Mode), so a group changes the speed of a run, not its result.
type Group struct {
	// Observer, when set, sees each layer once per sequence, in sequence
	// order, LayerTrace.Seq naming it.
	Observer Observer
	// TraceExpertAct is Session.TraceExpertAct.
	TraceExpertAct bool
	// Stats counts the group's work.
	Stats SessionStats
	// Timing, when set, accumulates each Forward's time by phase, a
	// Forward counted as one step (Session.Timing).
	Timing *StepTimes

	lead  *Session // the batch's scratch and MoE bookkeeping
	seqs  []*Session
	spans []seqSpan
	ids   []int32
}

// NewGroup starts a group of no sequences.
func (m *Model) NewGroup() *Group { return &Group{lead: m.NewSession()} }

// Forward runs sequence i, ids[i], from position 0 (each sequence starts
// afresh), all in one batch, and returns no logits. The batch's memory
// grows with the tokens of all the sequences together: callers bound it
// by how many they pass at once.
func (g *Group) Forward(ids [][]int32) error {
	lead := g.lead
	c := &lead.m.Config
	for i, w := range ids {
		if err := c.checkTokens(0, w); err != nil {
			return fmt.Errorf("sequence %d: %w", i, err)
		}
	}
	for len(g.seqs) < len(ids) {
		g.seqs = append(g.seqs, lead.m.NewSession())
	}
	g.spans, g.ids = g.spans[:0], g.ids[:0]
	for i, w := range ids {
		s := g.seqs[i]
		s.Reset()
		g.spans = append(g.spans, seqSpan{s: s, n: len(w)})
		g.ids = append(g.ids, w...)
	}
	lead.Observer, lead.TraceExpertAct, lead.Stats, lead.Timing = g.Observer, g.TraceExpertAct, g.Stats, g.Timing
	if g.Timing != nil {
		g.Timing.begin(lead.m.Pool)
		defer g.Timing.end()
	}
	_, _, _, err := lead.layers(g.ids, g.spans)
	g.Stats = lead.Stats
	lead.trace = nil
	if err != nil {
		for _, s := range g.seqs[:len(ids)] {
			s.Reset()
		}
	}
	return err
}

// DefaultWindowTokens is RunWindows' batch when its options name none: 8
// windows of 256 together, so that each of 512 experts of the field shape
// sees about 32 tokens per decode of its weights, while the batch's
// buffers (the routed experts' outputs are the largest, 168 MB at n_embd
// 2560) stay far below a converter's memory.
const DefaultWindowTokens = 2048

// WindowsOptions tune RunWindows.
type WindowsOptions struct {
	// BatchTokens bounds the tokens of the windows run together through
	// the layers (0: DefaultWindowTokens). It changes the memory and the
	// speed of the run, not its results.
	BatchTokens int
	// Observer sees every layer of every window, each layer's windows in
	// order (LayerTrace.Seq counts from the batch's first window).
	Observer Observer
	// TraceExpertAct is Session.TraceExpertAct.
	TraceExpertAct bool
	// Timing, when set, accumulates the batched windows' time by phase
	// (a batch is one step; a window longer than BatchTokens, run alone,
	// is not timed).
	Timing *StepTimes
	// Before, when set, is told each batch's windows lo <= i < hi before
	// they run; After once they ran. An error from either stops the run,
	// returned with the batch's windows named.
	Before, After func(lo, hi int) error
}

// RunWindows runs windows, each on its own from position 0 (as profile and
// calibration use them), in batches of consecutive windows of up to
// BatchTokens tokens together through a Group; a longer window runs alone
// through a Session in batches of BatchTokens. Every window's traces are
// those it gives alone, and each layer sees the windows in order, so the
// batching changes no result.
func (m *Model) RunWindows(ctx context.Context, windows [][]int32, opt WindowsOptions) error {
	budget := opt.BatchTokens
	if budget <= 0 {
		budget = DefaultWindowTokens
	}
	g := m.NewGroup()
	g.Observer, g.TraceExpertAct, g.Timing = opt.Observer, opt.TraceExpertAct, opt.Timing
	s := m.NewSession()
	s.Observer, s.TraceExpertAct, s.MaxBatch = opt.Observer, opt.TraceExpertAct, budget
	for lo := 0; lo < len(windows); {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi, n := lo, 0
		for hi < len(windows) && (hi == lo || n+len(windows[hi]) <= budget) {
			n += len(windows[hi])
			hi++
		}
		if err := m.runBatch(g, s, windows, lo, hi, n > budget, opt); err != nil {
			if hi-lo == 1 {
				return fmt.Errorf("window %d: %w", lo, err)
			}
			return fmt.Errorf("windows %d-%d: %w", lo, hi-1, err)
		}
		lo = hi
	}
	return nil
}

// runBatch runs windows lo <= i < hi, alone through s when long.
func (m *Model) runBatch(g *Group, s *Session, windows [][]int32, lo, hi int, long bool, opt WindowsOptions) error {
	if opt.Before != nil {
		if err := opt.Before(lo, hi); err != nil {
			return err
		}
	}
	var err error
	if long {
		s.Reset()
		_, err = s.Forward(windows[lo], false)
	} else {
		err = g.Forward(windows[lo:hi])
	}
	if err != nil {
		return err
	}
	if opt.After != nil {
		return opt.After(lo, hi)
	}
	return nil
}

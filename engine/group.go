package engine

import "fmt"

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
	lead.Observer, lead.TraceExpertAct, lead.Stats = g.Observer, g.TraceExpertAct, g.Stats
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

package engine

import (
	"fmt"
	"math"
	"slices"

	"github.com/stratactl/stratactl/kernels"
)

// LayerTrace is what an Observer sees after each decoder layer for a batch of
// Tokens consecutive positions starting at Pos0. Slices are valid only during
// the call.
type LayerTrace struct {
	Layer int
	// Seq is the sequence's index in a Group's Forward (0 for a
	// Session's); Pos0 is its first position.
	Seq    int
	Pos0   int
	Tokens int
	// Probs is the router softmax over all experts, [Tokens][Experts].
	Probs []float32
	// IDs are the selected experts in descending router probability (ties
	// to the lower id), [Tokens][ExpertsUsed]; Weights their gate weights
	// (renormalised when the model says so), same layout.
	IDs     []int32
	Weights []float32
	// ExpertOut is each selected expert's output vector before weighting,
	// [Tokens][ExpertsUsed][Embd] (REAP: weight x L2 norm of it).
	ExpertOut []float32
	// MoEInput is the normed hidden state the router and every selected
	// expert's gate and up projections read, [Tokens][Embd].
	MoEInput []float32
	// ExpertAct is each selected expert's SwiGLU product silu(gate x) *
	// (up x), the input of its down projection, [Tokens][ExpertsUsed]
	// [ExpertFF]; nil unless Session.TraceExpertAct is set.
	ExpertAct []float32
	// Hidden is the residual stream after the layer, [Tokens][Embd].
	Hidden []float32
	// MixerOut is the token mixer's output (attention or gated delta net,
	// after its output projection, before the residual add), [Tokens][Embd].
	MixerOut []float32
	// SharedGate is sigmoid(ffn_gate_inp_shexp . x) per token and
	// SharedOut the shared expert's output before that gate,
	// [Tokens][Embd]; both nil for a model without a shared expert.
	SharedGate []float32
	SharedOut  []float32
}

// Observer is called by the forward pass after each layer.
type Observer interface {
	Layer(tr *LayerTrace)
}

// Routing tunes expert selection. The zero value is the model's own router.
type Routing struct {
	// CacheAware makes the picks after the first Exact ones compare the
	// router logits plus Bonus for experts resident in the store, so that
	// the cache serves more of them. The weights stay the true
	// renormalised probabilities of the experts picked.
	CacheAware bool
	Bonus      float32
	Exact      int
}

// Session is one sequence being decoded: positions so far, the KV cache of
// each attention layer and the recurrent state of each gated delta net.
type Session struct {
	m   *Model
	Pos int
	// kcache/vcache per attention layer, per KV head: position-major
	// [pos][dim], each head's positions contiguous (a query head's scores
	// and sums walk one head's keys and values: at a stride of all the heads'
	// the positions of one head met in a few of L1's sets and evicted each
	// other).
	kcache, vcache [][][]float32
	// delta per layer: the recurrent state, nil for attention layers.
	delta    []*deltaState
	Observer Observer
	// TraceExpertAct makes the Observer's traces carry ExpertAct (costs
	// Tokens x ExpertsUsed x ExpertFF floats per layer).
	TraceExpertAct bool
	Routing        Routing
	// MaxBatch bounds the tokens run through the layers at once in prefill
	// (memory); it changes no result.
	MaxBatch int
	// Stats counts the work of this session; a pack's hits and misses are
	// the store's (Model.Stream).
	Stats SessionStats
	// Timing, when set, accumulates each Step's time by phase (and the
	// sampler's in Generate).
	Timing *StepTimes

	trace *LayerTrace
	// self is the one span of a Session's own batch (layers).
	self [1]seqSpan
	// sc is the working memory of a batch, reused by the next one; logits
	// and one are Step's output and input.
	sc      scratch
	logits  []float32
	one     [1]int32
	ra      []raLayer // read-ahead's record per layer and distance (readahead.go)
	raDepth int       // the distances ra holds per layer
	// raActs and raGuesses are read-ahead's activations and each kind's
	// last guess (raGuess), reused.
	raActs    [raKinds]acts
	raGuesses [raKinds][]int
}

// SessionStats are counters of one session.
type SessionStats struct {
	Tokens        int // tokens run through the layers
	ExpertUses    int // (token, layer, expert) picks
	DistinctLoads int // expert Gets (one per distinct expert per layer per batch)
}

// NewSession starts an empty sequence.
func (m *Model) NewSession() *Session {
	s := &Session{
		m:        m,
		kcache:   make([][][]float32, m.Config.Layers),
		vcache:   make([][][]float32, m.Config.Layers),
		delta:    make([]*deltaState, m.Config.Layers),
		MaxBatch: 64,
	}
	for l := range m.Layers {
		if m.Layers[l].Delta != nil {
			s.delta[l] = newDeltaState(&m.Config.SSM)
			continue
		}
		s.kcache[l], s.vcache[l] = make([][]float32, m.Config.HeadsKV), make([][]float32, m.Config.HeadsKV)
	}
	return s
}

// Reserve makes room in the attention layers' key and value caches for n
// positions past the current one (at most the context), so that the next
// n tokens append to them without reallocating: Generate reserves its
// prompt and its token budget.
func (s *Session) Reserve(n int) {
	c := &s.m.Config
	n = min(s.Pos+max(n, 0), c.Context)
	for l := range s.kcache {
		if s.delta[l] != nil {
			continue
		}
		for h := range s.kcache[l] {
			s.kcache[l][h] = slices.Grow(s.kcache[l][h], n*c.HeadDim-len(s.kcache[l][h]))
			s.vcache[l][h] = slices.Grow(s.vcache[l][h], n*c.ValueDim-len(s.vcache[l][h]))
		}
	}
}

// Model is the session's model.
func (s *Session) Model() *Model { return s.m }

// Reset forgets the sequence.
func (s *Session) Reset() {
	s.Pos = 0
	for i := range s.kcache {
		for h := range s.kcache[i] {
			s.kcache[i][h] = s.kcache[i][h][:0]
			s.vcache[i][h] = s.vcache[i][h][:0]
		}
		if s.delta[i] != nil {
			s.delta[i].reset()
		}
	}
}

// Forward runs ids at the next positions and returns logits: for every
// position ([len(ids)][Vocab]) when all is set, else for the last one.
func (s *Session) Forward(ids []int32, all bool) ([]float32, error) {
	return s.forward(ids, all, nil)
}

// Step runs one token at the next position and returns its logits, which
// stay valid only until the session's next Step or Forward: the decode
// step, whose buffers are all the session's own, reused from step to step.
func (s *Session) Step(id int32) ([]float32, error) {
	s.one[0] = id
	if s.Timing != nil {
		s.Timing.begin(s.m.Pool)
		defer s.Timing.end()
	}
	logits, err := s.forward(s.one[:], false, s.logits)
	if err == nil {
		s.logits = logits
	}
	return logits, err
}

// forward is Forward with the last position's logits in dst when dst has
// room for them (all unset).
func (s *Session) forward(ids []int32, all bool, dst []float32) ([]float32, error) {
	c := &s.m.Config
	if err := c.checkTokens(s.Pos, ids); err != nil {
		return nil, err
	}
	var out []float32
	if all {
		out = make([]float32, 0, len(ids)*c.Vocab)
	}
	mb := s.MaxBatch
	if mb <= 0 {
		mb = len(ids)
	}
	for lo := 0; lo < len(ids); lo += mb {
		hi := min(lo+mb, len(ids))
		last := hi == len(ids)
		logits, err := s.batch(ids[lo:hi], all, last, dst)
		if err != nil {
			// Drop the keys and values the failed batch appended, so the
			// session stays usable at its last good position (the failed
			// batch's recurrent states were never committed).
			for l := range s.kcache {
				for h := range s.kcache[l] {
					s.kcache[l][h] = s.kcache[l][h][:s.Pos*c.HeadDim]
					s.vcache[l][h] = s.vcache[l][h][:s.Pos*c.ValueDim]
				}
			}
			s.trace = nil
			return nil, err
		}
		if all {
			out = append(out, logits...)
		} else if last {
			out = logits
		}
	}
	return out, nil
}

// checkTokens checks that ids, run from position pos, are tokens of the
// vocabulary that fit in the context.
func (c *Config) checkTokens(pos int, ids []int32) error {
	if len(ids) == 0 {
		return fmt.Errorf("no tokens to run")
	}
	if pos+len(ids) > c.Context {
		return fmt.Errorf("sequence of %d tokens exceeds the context length %d", pos+len(ids), c.Context)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= c.Vocab {
			return fmt.Errorf("token %d (at %d) is outside the vocabulary of %d", id, i, c.Vocab)
		}
	}
	return nil
}

// batch runs T tokens through every layer; it returns logits for every
// token (all), for the last (last; in dst when it has room), or none.
func (s *Session) batch(ids []int32, all, last bool, dst []float32) ([]float32, error) {
	m := s.m
	c := &m.Config
	T, D := len(ids), c.Embd
	sc := &s.sc
	s.self[0] = seqSpan{s: s, n: T}
	x, xn, batchMark, err := s.layers(ids, s.self[:])
	if err != nil {
		return nil, err
	}
	if !all && !last {
		return nil, nil
	}
	first := 0
	if !all {
		first = T - 1
	}
	n := T - first
	sc.rewind(batchMark)
	rmsNormRows(xn[:n*D], x[first*D:], m.OutNorm, D, c.Eps)
	var logits []float32
	if !all && cap(dst) >= c.Vocab {
		logits = dst[:c.Vocab]
	} else {
		logits = make([]float32, n*c.Vocab)
	}
	s.lap(PhaseNorm)
	xa := sc.newActs(xn[:n*D], D, m.Mode)
	xa.prepare(m.Pool, &m.Output)
	s.lap(PhaseQuant)
	matMul(m.Pool, &m.Output, xa, logits)
	s.lapProducts(PhaseHead, &m.Output)
	if i := firstNonFinite(logits); i >= 0 {
		return nil, fmt.Errorf("%s: non-finite logit %v (token %d): output.weight or output_norm.weight holds NaN or infinity", m.File.Path, logits[i], i%c.Vocab)
	}
	s.lap(PhaseNorm)
	return logits, nil
}

// seqSpan is one sequence's part of a batch: n consecutive tokens of the
// batch, session s's at its positions s.Pos...
type seqSpan struct {
	s *Session
	n int
}

// spanOf is the span of token t of a batch and the token's position.
func spanOf(spans []seqSpan, t int) (int, int) {
	for i, sp := range spans {
		if t < sp.n {
			return i, sp.s.Pos + t
		}
		t -= sp.n
	}
	panic("engine: token past the batch's spans")
}

// layers runs the tokens ids of the sequences spans (each span's tokens
// after the previous span's) through every layer, in s's scratch, and
// advances each span's session past its tokens. Each layer's weight
// products take the whole batch; attention and the recurrent mixers run
// on each span's own cache and state. It returns the hidden states after
// the last layer x [T][Embd], xn with room for T rows, and the scratch's
// mark after both.
func (s *Session) layers(ids []int32, spans []seqSpan) (x, xn []float32, batchMark scratchMark, err error) {
	m := s.m
	c := &m.Config
	T, D := len(ids), c.Embd
	sc := &s.sc
	sc.reset()
	x = sc.floats(T * D)
	if err := s.embed(ids, x); err != nil {
		return nil, nil, batchMark, err
	}
	xn = sc.floats(T * D)
	batchMark = sc.mark() // each layer's buffers come after x and xn
	s.lap(PhaseEmbed)
	s.readAhead(0, x, T)
	s.lapReadAhead(0)
	for l := range m.Layers {
		L := &m.Layers[l]
		sc.rewind(batchMark)
		xa := s.normActs(x, nil, xn, L.AttnNorm, T, L.mixerInput())
		s.lap(PhaseNorm)
		var o []float32
		if L.Delta != nil {
			o = s.deltaNets(l, L, xa, T, spans)
		} else {
			a := s.attention(l, L, xa, T, spans)
			o = sc.floats(T * D)
			a.prepare(m.Pool, &L.O)
			s.lap(PhaseQuant)
			matMul(m.Pool, &L.O, a, o)
			s.lapProducts(PhaseO, &L.O)
		}
		xm := s.normActs(x, o, xn, L.FFNNorm, T, s.expertInput(l))
		s.raMixer(l, o, T)
		s.lap(PhaseNorm)
		moeOut, added, err := s.moe(l, L, xm, x, T)
		if err != nil {
			return nil, nil, batchMark, err
		}
		i := -1
		if added {
			i = firstOfRows(s.sc.first, D)
		} else {
			i = s.addRowsFinite(x, moeOut, T)
		}
		if i >= 0 {
			_, pos := spanOf(spans, i/D)
			return nil, nil, batchMark, fmt.Errorf("%s: layer %d gave a non-finite hidden value (%v at position %d, element %d): the weights of blk.%d.* or earlier hold NaN or infinity, or overflow",
				m.File.Path, l, x[i], pos, i%D, l)
		}
		if s.Observer != nil {
			s.traceHidden(x, o, spans)
		}
		s.lap(PhaseNorm)
		s.readAhead(l+1, x, T)
		s.lapReadAhead(l + 1)
	}
	for _, sp := range spans {
		for _, st := range sp.s.delta {
			if st != nil {
				st.commit()
			}
		}
		sp.s.Pos += sp.n
	}
	s.Stats.Tokens += T
	return x, xn, batchMark, nil
}

// embed writes the embeddings of ids to x, a batch's rows in parallel.
func (s *Session) embed(ids []int32, x []float32) error {
	m := s.m
	D := m.Config.Embd
	if len(ids) == 1 {
		return m.embedRow(ids, x, 0)
	}
	// The first failing token's error (the order a loop would give).
	errs := make([]error, len(ids))
	m.Pool.Parallel(len(ids), 2*D, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			errs[t] = m.embedRow(ids, x, t)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// embedRow writes the embedding of ids[t] to row t of x.
func (m *Model) embedRow(ids []int32, x []float32, t int) error {
	D := m.Config.Embd
	if err := m.Embd.DecodeRowTo(int(ids[t]), x[t*D:(t+1)*D]); err != nil {
		return fmt.Errorf("token_embd row %d: %w", ids[t], err)
	}
	return nil
}

// addRowsFinite adds the T rows o to x, a batch's rows in parallel, and
// returns firstNonFinite of the sums (the first in row order), in the
// same pass.
func (s *Session) addRowsFinite(x, o []float32, T int) int {
	if T == 1 {
		addTo(x, o)
		return firstNonFinite(x)
	}
	D := s.m.Config.Embd
	first := grow(&s.sc.first, T)
	s.m.Pool.Parallel(T, 3*D, func(lo, hi int) {
		addTo(x[lo*D:hi*D], o[lo*D:hi*D])
		for t := lo; t < hi; t++ {
			first[t] = firstNonFinite(x[t*D : (t+1)*D])
		}
	})
	return firstOfRows(first, D)
}

// firstOfRows is the index in rows of n of the first non-finite value,
// first[t] being row t's firstNonFinite; -1 when there is none.
func firstOfRows(first []int, n int) int {
	for t, i := range first {
		if i >= 0 {
			return t*n + i
		}
	}
	return -1
}

// deltaNets runs layer l's gated delta net on each span's tokens of xa,
// each on its session's state (and in its scratch, s's for its own).
func (s *Session) deltaNets(l int, L *Layer, xa *acts, T int, spans []seqSpan) []float32 {
	if len(spans) == 1 && spans[0].s == s {
		return s.deltaNet(l, L, xa, T)
	}
	D := s.m.Config.Embd
	xn := xa.f32()
	o := s.sc.floats(T * D)
	lo := 0
	for _, sp := range spans {
		sp.s.sc.reset()
		ea := sp.s.sc.newActs(xn[lo*D:(lo+sp.n)*D], D, s.m.Mode)
		copy(o[lo*D:(lo+sp.n)*D], sp.s.deltaNet(l, L, ea, sp.n))
		lo += sp.n
	}
	return o
}

// normActs sets y to rmsNormRows of the T rows x with weights w, after
// adding the rows o to x when o is not nil, and returns y's wrapper with
// its rows quantized (or rounded) for mat's products when mat is not nil
// and the batch has several: a batch's rows in parallel, all of it in one
// pass. Each row is the same as the separate passes' (add, norm, then
// acts.prepare).
func (s *Session) normActs(x, o, y, w []float32, T int, mat *kernels.Matrix) *acts {
	m := s.m
	c := &m.Config
	D := c.Embd
	a := s.sc.newActs(y[:T*D], D, m.Mode)
	if T == 1 {
		if o != nil {
			addTo(x, o)
		}
		rmsNormRows(y, x, w, D, c.Eps)
		return a
	}
	q, b := a.rowsFor(mat)
	m.Pool.Parallel(T, 6*D, func(lo, hi int) {
		if o != nil {
			addTo(x[lo*D:hi*D], o[lo*D:hi*D])
		}
		rmsNormRows(y[lo*D:hi*D], x[lo*D:hi*D], w, D, c.Eps)
		a.quantizeRows(q, b, lo, hi)
	})
	a.setRows(q, b)
	return a
}

func addTo(x, o []float32) { kernels.AddTo(x, o) }

// traceHidden completes the layer trace from moe (routing, expert outputs)
// to the end of the layer (hidden state) and hands it to the Observer, a
// trace per span.
func (s *Session) traceHidden(x, mixer []float32, spans []seqSpan) {
	tr := s.trace
	if tr == nil {
		return
	}
	s.trace = nil
	tr.Hidden = x
	tr.MixerOut = mixer
	if len(spans) == 1 {
		s.Observer.Layer(tr)
		return
	}
	lo := 0
	for i, sp := range spans {
		sub := tr.rows(lo, lo+sp.n)
		sub.Seq, sub.Pos0 = i, sp.s.Pos
		s.Observer.Layer(&sub)
		lo += sp.n
	}
}

// rows is the trace of tokens lo <= t < hi of tr's.
func (tr *LayerTrace) rows(lo, hi int) LayerTrace {
	T := tr.Tokens
	cut := func(v []float32) []float32 {
		if v == nil {
			return nil
		}
		n := len(v) / T
		return v[lo*n : hi*n]
	}
	n := len(tr.IDs) / T
	return LayerTrace{Layer: tr.Layer, Tokens: hi - lo, Probs: cut(tr.Probs), IDs: tr.IDs[lo*n : hi*n], Weights: cut(tr.Weights),
		ExpertOut: cut(tr.ExpertOut), MoEInput: cut(tr.MoEInput), ExpertAct: cut(tr.ExpertAct), Hidden: cut(tr.Hidden),
		MixerOut: cut(tr.MixerOut), SharedGate: cut(tr.SharedGate), SharedOut: cut(tr.SharedOut)}
}

// rmsNormRows: y = x / sqrt(mean(x^2) + eps) * w, row by row.
func rmsNormRows(y, x, w []float32, n int, eps float32) {
	for r := 0; r+n <= len(y) && r+n <= len(x); r += n {
		rmsNorm(y[r:r+n], x[r:r+n], w, eps)
	}
}

func rmsNorm(y, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scaleRow(y, x, w, rmsScale(ss, len(x), eps))
}

// rmsScale is the RMS norm's scale of n values whose squares sum to ss.
func rmsScale(ss float64, n int, eps float32) float32 {
	return float32(1 / math.Sqrt(ss/float64(n)+float64(eps)))
}

// scaleRow sets y[i] = (x[i] * scale) * w[i] (kernels.ScaleMul, the scalar loop's bits).
func scaleRow(y, x, w []float32, scale float32) {
	kernels.ScaleMul(y[:len(x)], x, w, scale)
}

// rmsNorm2 is rmsNorm(x0, x0, w, eps) and rmsNorm(x1, x1, w, eps), x0 and
// x1 of one length, in one loop: each sum of squares in its own order, the
// two chains side by side.
func rmsNorm2(x0, x1, w []float32, eps float32) {
	x1 = x1[:len(x0)]
	var ss0, ss1 float64
	for i, v := range x0 {
		u := x1[i]
		ss0 += float64(v) * float64(v)
		ss1 += float64(u) * float64(u)
	}
	n := float64(len(x0))
	kernels.ScaleMul(x0, x0, w, float32(1/math.Sqrt(ss0/n+float64(eps))))
	kernels.ScaleMul(x1, x1, w, float32(1/math.Sqrt(ss1/n+float64(eps))))
}

// firstNonFinite is the index of the first NaN or infinity in v, or -1.
// A finite sum of squares (kernels.DotF32, vector code) proves every
// element finite; only a non-finite one, or an overflow, needs the scan.
func firstNonFinite(v []float32) int {
	if len(v) >= 64 {
		if s := kernels.DotF32(v, v); s-s == 0 {
			return -1
		}
	}
	for i, x := range v {
		if x-x != 0 {
			return i
		}
	}
	return -1
}

package calib

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/optq"
	"github.com/stratactl/stratactl/quant"
)

// Quantizer serves the Q2_0 encoding of a source model's experts, each
// quantized by optq against its calibration inputs the first time any of
// its three matrices is asked for. Callers may ask from many goroutines at
// once (experts then run in parallel); every expert's bytes depend only on
// its own weights and inputs, so the output does not depend on the order
// or the number of goroutines. An expert's bytes are dropped once all rows
// of its three matrices were handed out; while held, they stay in memory
// up to ResultBudget bytes in all, beyond it in an unlinked temporary file
// (a GGUF's writer asks for every expert's gate before any up: the results
// of a whole layer wait). A layer's routing is dropped once two other
// layers were asked for since (and rebuilt if needed).
type Quantizer struct {
	f   *gguf.File
	set *Set
	opt optq.Options

	mu       sync.Mutex
	roles    map[string]role // tensor name -> its layer and matrix
	layers   map[int]*layerState
	recent   []int // blocks by last use, most recent last
	errs     map[string]*optq.Errors
	fallbak  map[string]int // reason -> experts
	experts  int
	fewTok   int      // experts that skipped the expert-output refinement for too few tokens
	held     int64    // result bytes in memory
	spill    *os.File // results beyond the budget (nil until needed)
	spillEnd int64
	spilled  int64 // experts spilled
	budget   int64 // ResultBudget (tests lower it)
	// bufs recycles the decoded weights of an expert (*decodeBufs): at
	// the field shape 20 MB an expert, cleared by the allocator when new.
	bufs sync.Pool
}

// decodeBufs are one expert's source bytes and decoded matrices (gate or
// the fused gate and up, up, down).
type decodeBufs struct {
	raw []byte
	w   [3][]float32
}

// ResultBudget bounds the bytes of quantized experts a Quantizer holds in
// memory for callers that ask for them out of order.
const ResultBudget = 256 << 20

type role struct {
	block int
	which int // 0 gate, 1 up, 2 down, 3 the fused gate and up
	layer *gguf.MoELayer
}

const fusedGateUp = 3

type layerState struct {
	mu      sync.Mutex // guards in
	in      *Layer
	experts map[int]*expertState
}

// expertState is one expert's bytes, gate, up and down in a row: in buf,
// or at off in the spill file.
type expertState struct {
	once     sync.Once
	buf      []byte
	off      int64
	sizes    [3]int64 // bytes of gate, up, down
	err      error
	pending  int64 // rows of the three matrices not handed out yet
	released bool
}

// NewQuantizer prepares the experts of f (gate, up and down of every MoE
// layer in set) for quantization with opt.
func NewQuantizer(f *gguf.File, set *Set, opt optq.Options) (*Quantizer, error) {
	moe, err := f.MoE()
	if err != nil {
		return nil, err
	}
	q := &Quantizer{f: f, set: set, opt: opt, roles: map[string]role{}, layers: map[int]*layerState{},
		errs: map[string]*optq.Errors{}, fallbak: map[string]int{}, budget: ResultBudget}
	for i := range moe.Layers {
		L := &moe.Layers[i]
		if !set.Has(L.Block) {
			continue
		}
		if L.Gate == nil && L.GateUp == nil {
			return nil, fmt.Errorf("%s: block %d has no gate: calibrated quantization needs SwiGLU experts", f.Path, L.Block)
		}
		if L.Embd != int64(set.Embd) {
			return nil, fmt.Errorf("%s: block %d: experts of width %d, calibration of %d", f.Path, L.Block, L.Embd, set.Embd)
		}
		if L.GateUp != nil {
			q.roles[L.GateUp.Name] = role{block: L.Block, which: fusedGateUp, layer: L}
		} else {
			q.roles[L.Gate.Name] = role{block: L.Block, which: 0, layer: L}
			q.roles[L.Up.Name] = role{block: L.Block, which: 1, layer: L}
		}
		q.roles[L.Down.Name] = role{block: L.Block, which: 2, layer: L}
	}
	return q, nil
}

// Handles reports whether tensor name is one this Quantizer quantizes.
func (q *Quantizer) Handles(name string) bool { _, ok := q.roles[name]; return ok }

// Rows returns the Q2_0 bytes of rows [row0, row0+n) of expert e's matrix
// in tensor t.
func (q *Quantizer) Rows(ctx context.Context, t *gguf.TensorInfo, e int, row0, n int64) ([]byte, error) {
	r, ok := q.roles[t.Name]
	if !ok {
		return nil, fmt.Errorf("calibrated quantizer: %q is not an expert matrix it handles", t.Name)
	}
	if row0 < 0 || n <= 0 || row0+n > t.Ne(1) {
		return nil, fmt.Errorf("calibrated quantizer: rows [%d, %d) of %q outside its %d", row0, row0+n, t.Name, t.Ne(1))
	}
	es, err := q.expert(ctx, r, e)
	if err != nil {
		return nil, err
	}
	// The matrix's bytes within the expert's gate | up | down.
	start, size := int64(0), es.sizes[0]+es.sizes[1]
	switch r.which {
	case 0:
		size = es.sizes[0]
	case 1:
		start, size = es.sizes[0], es.sizes[1]
	case 2:
		start, size = es.sizes[0]+es.sizes[1], es.sizes[2]
	}
	rowBytes := size / t.Ne(1)
	lo, hi := start+row0*rowBytes, start+(row0+n)*rowBytes
	var out []byte
	if es.buf != nil {
		out = es.buf[lo:hi]
	} else {
		out = make([]byte, hi-lo)
		if _, err := q.spill.ReadAt(out, es.off+lo); err != nil {
			return nil, fmt.Errorf("calibrated quantizer: spill file %s: %w", q.spill.Name(), err)
		}
	}
	q.mu.Lock()
	if es.pending -= n; es.pending <= 0 && !es.released {
		es.released = true
		if es.buf != nil {
			q.held -= int64(len(es.buf))
		}
		delete(q.layers[r.block].experts, e)
	}
	q.mu.Unlock()
	return out, nil
}

// keep stores an expert's bytes: in memory within the budget, else at the
// end of the spill file.
func (q *Quantizer) keep(es *expertState, res *optq.ExpertResult) error {
	es.sizes = [3]int64{int64(len(res.Gate)), int64(len(res.Up)), int64(len(res.Down))}
	size := es.sizes[0] + es.sizes[1] + es.sizes[2]
	buf := make([]byte, 0, size)
	buf = append(append(append(buf, res.Gate...), res.Up...), res.Down...)
	q.mu.Lock()
	if q.held+size <= q.budget {
		q.held += size
		q.mu.Unlock()
		es.buf = buf
		return nil
	}
	if q.spill == nil {
		f, err := os.CreateTemp(q.set.dir, "stratactl-calib-results-*.q2")
		if err != nil {
			q.mu.Unlock()
			return fmt.Errorf("calibrated quantizer: spill file: %w", err)
		}
		os.Remove(f.Name()) // unlinked at once; read back through the handle
		q.spill = f
	}
	es.off = q.spillEnd
	q.spillEnd += size
	q.spilled++
	q.mu.Unlock()
	if _, err := q.spill.WriteAt(buf, es.off); err != nil {
		return fmt.Errorf("calibrated quantizer: spill file %s: %w", q.spill.Name(), err)
	}
	return nil
}

// Spilled is the number of experts whose bytes went to the spill file.
func (q *Quantizer) Spilled() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.spilled
}

// Close removes the spill file of results.
func (q *Quantizer) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.spill == nil {
		return nil
	}
	err := q.spill.Close()
	q.spill = nil
	return err
}

func (q *Quantizer) expert(ctx context.Context, r role, e int) (*expertState, error) {
	q.mu.Lock()
	ls, ok := q.layers[r.block]
	if !ok {
		ls = &layerState{experts: map[int]*expertState{}}
		q.layers[r.block] = ls
	}
	q.touch(r.block)
	es, ok := ls.experts[e]
	if !ok {
		L := r.layer
		es = &expertState{pending: L.Down.Ne(1)}
		if L.GateUp != nil {
			es.pending += L.GateUp.Ne(1)
		} else {
			es.pending += L.Gate.Ne(1) + L.Up.Ne(1)
		}
		ls.experts[e] = es
	}
	q.mu.Unlock()
	es.once.Do(func() {
		if err := ctx.Err(); err != nil {
			es.err = err
			return
		}
		ls.mu.Lock()
		if ls.in == nil {
			ls.in, es.err = q.set.Layer(r.block)
		}
		in := ls.in
		ls.mu.Unlock()
		if es.err != nil {
			return
		}
		var res *optq.ExpertResult
		if res, es.err = q.run(r.layer, in, e); es.err == nil {
			es.err = q.keep(es, res)
		}
	})
	return es, es.err
}

// touch marks block as used and drops the inputs of layers two behind.
func (q *Quantizer) touch(block int) {
	for i, b := range q.recent {
		if b == block {
			q.recent = append(q.recent[:i], q.recent[i+1:]...)
			break
		}
	}
	q.recent = append(q.recent, block)
	for len(q.recent) > 2 {
		old := q.recent[0]
		q.recent = q.recent[1:]
		if ls := q.layers[old]; ls != nil {
			ls.mu.Lock()
			ls.in = nil
			ls.mu.Unlock()
		}
	}
}

func (q *Quantizer) run(L *gguf.MoELayer, in *Layer, e int) (*optq.ExpertResult, error) {
	var ex optq.Expert
	ex.D, ex.F = int(L.Embd), int(L.ExpertFF)
	var err error
	// The decoded weights are optq's input only (its results are new
	// bytes), so they serve the next expert once it returned.
	b, _ := q.bufs.Get().(*decodeBufs)
	if b == nil {
		b = &decodeBufs{}
	}
	defer q.bufs.Put(b)
	// tensors: where each of gate, up, down comes from.
	tensors := []*gguf.TensorInfo{L.Gate, L.Up, L.Down}
	if L.GateUp != nil {
		// The fused slice: the gate's rows, then the up's.
		var gu []float32
		if gu, err = q.decode(L.GateUp, e, b, 0); err != nil {
			return nil, err
		}
		n := ex.D * ex.F
		if len(gu) != 2*n {
			return nil, fmt.Errorf("%s: tensor %q: expert %d has %d weights, want 2 x %d x %d", q.f.Path, L.GateUp.Name, e, len(gu), ex.F, ex.D)
		}
		ex.Gate, ex.Up = gu[:n], gu[n:]
		tensors = []*gguf.TensorInfo{L.GateUp, L.GateUp, L.Down}
	} else {
		if ex.Gate, err = q.decode(L.Gate, e, b, 0); err != nil {
			return nil, err
		}
		if ex.Up, err = q.decode(L.Up, e, b, 1); err != nil {
			return nil, err
		}
	}
	if ex.Down, err = q.decode(L.Down, e, b, 2); err != nil {
		return nil, err
	}
	inputs, err := in.Inputs(e)
	if err != nil {
		return nil, err
	}
	res, err := optq.QuantizeExpert(&ex, inputs, q.opt)
	if err != nil {
		return nil, fmt.Errorf("block %d expert %d: %w", L.Block, e, err)
	}
	q.mu.Lock()
	for w, t := range tensors {
		st := q.errs[t.Name]
		if st == nil {
			st = &optq.Errors{}
			q.errs[t.Name] = st
		}
		st.Add(res.Errors[w])
	}
	q.experts++
	if res.Fallback != "" {
		q.fallbak[res.Fallback]++
	} else if q.opt.Expert > 0 && res.ExpertRounds == 0 {
		q.fewTok++
	}
	q.mu.Unlock()
	return res, nil
}

// decode reads expert e's matrix of tensor t as float32 into b.w[i],
// refusing non-finite weights.
func (q *Quantizer) decode(t *gguf.TensorInfo, e int, b *decodeBufs, i int) ([]float32, error) {
	off, size, err := gguf.ExpertSlice(t, e)
	if err != nil {
		return nil, err
	}
	raw := slices.Grow(b.raw[:0], int(size))[:size]
	b.raw = raw
	if err := q.f.ReadTensorAt(t, raw, off); err != nil {
		return nil, err
	}
	n := int(t.Dims[0] * t.Ne(1))
	x := slices.Grow(b.w[i][:0], n)[:n] // every element written below
	b.w[i] = x
	if err := kernels.Dequantize(t.Type, raw, x); err != nil {
		return nil, fmt.Errorf("%s: tensor %q expert %d: %w", q.f.Path, t.Name, e, err)
	}
	if i := firstNonFinite(x); i >= 0 {
		v := x[i]
		ti, _ := quant.Info(t.Type)
		file, base := q.f.Locate(t)
		return nil, fmt.Errorf("%s: byte %d: tensor %q: element %d (expert %d) is %v: refusing to quantize non-finite weights",
			file, base+off+int64(i/ti.BlockElements*ti.BlockBytes), t.Name, int64(e)*int64(len(x))+int64(i), e, v)
	}
	return x, nil
}

// firstNonFinite is the index of x's first NaN or infinity, -1 if none. A
// finite sum of squares means every element is finite (a NaN or an
// infinity makes it NaN or infinite), so the loop runs only when the sum
// is not (or overflowed).
func firstNonFinite(x []float32) int {
	if s := kernels.DotF32(x, x); s-s == 0 {
		return -1
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return i
		}
	}
	return -1
}

// TensorErrors is what the quantizer measured for tensor name over the
// experts it quantized so far.
func (q *Quantizer) TensorErrors(name string) (optq.Errors, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.errs[name]
	if !ok {
		return optq.Errors{}, false
	}
	return *st, true
}

// Fallbacks lists, per reason, how many experts fell back to the plain
// search, as "N experts: reason" in a fixed order; Experts counts all.
func (q *Quantizer) Fallbacks() (lines []string, experts int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for r, n := range q.fallbak {
		lines = append(lines, fmt.Sprintf("%d experts: %s", n, r))
	}
	sort.Strings(lines)
	return lines, q.experts
}

// ExpertRefineSkipped is how many experts skipped the expert-output
// refinement (with Options.Expert > 0) for having fewer tokens than
// Options.ExpertTokens per column.
func (q *Quantizer) ExpertRefineSkipped() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fewTok
}

// OutputError is tensor name's ‖(W−Ŵ)X‖/‖WX‖ over held-back tokens.
func (q *Quantizer) OutputError(name string) (float64, bool) {
	st, ok := q.TensorErrors(name)
	if !ok || st.HeldTokens == 0 {
		return 0, false
	}
	return st.RelOutput(), true
}

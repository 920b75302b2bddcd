package calib

import (
	"context"
	"fmt"
	"math"
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
// or the number of goroutines. An expert's result is dropped once all rows
// of its three matrices were handed out; a layer's inputs once two other
// layers were asked for since (and read again if needed).
type Quantizer struct {
	f   *gguf.File
	set *Set
	opt optq.Options

	mu      sync.Mutex
	roles   map[string]role // tensor name -> its layer and matrix
	layers  map[int]*layerState
	recent  []int // blocks by last use, most recent last
	errs    map[string]*optq.Errors
	fallbak map[string]int // reason -> experts
	experts int
}

type role struct {
	block int
	which int // 0 gate, 1 up, 2 down
	layer *gguf.MoELayer
}

type layerState struct {
	mu      sync.Mutex // guards in
	in      *Layer
	experts map[int]*expertState
}

type expertState struct {
	once     sync.Once
	res      *optq.ExpertResult
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
		errs: map[string]*optq.Errors{}, fallbak: map[string]int{}}
	for i := range moe.Layers {
		L := &moe.Layers[i]
		if !set.Has(L.Block) {
			continue
		}
		if L.Gate == nil {
			return nil, fmt.Errorf("%s: block %d has no gate: calibrated quantization needs SwiGLU experts", f.Path, L.Block)
		}
		if L.Embd != int64(set.Embd) {
			return nil, fmt.Errorf("%s: block %d: experts of width %d, calibration of %d", f.Path, L.Block, L.Embd, set.Embd)
		}
		for w, t := range []*gguf.TensorInfo{L.Gate, L.Up, L.Down} {
			q.roles[t.Name] = role{block: L.Block, which: w, layer: L}
		}
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
	es, err := q.expert(ctx, r, e)
	if err != nil {
		return nil, err
	}
	b := [3][]byte{es.res.Gate, es.res.Up, es.res.Down}[r.which]
	rowBytes := int64(len(b)) / t.Ne(1)
	if row0 < 0 || n <= 0 || row0+n > t.Ne(1) {
		return nil, fmt.Errorf("calibrated quantizer: rows [%d, %d) of %q outside its %d", row0, row0+n, t.Name, t.Ne(1))
	}
	out := b[row0*rowBytes : (row0+n)*rowBytes]
	q.mu.Lock()
	if es.pending -= n; es.pending <= 0 && !es.released {
		es.released = true
		delete(q.layers[r.block].experts, e)
	}
	q.mu.Unlock()
	return out, nil
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
		es = &expertState{pending: r.layer.Gate.Ne(1) + r.layer.Up.Ne(1) + r.layer.Down.Ne(1)}
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
		if es.err == nil {
			es.res, es.err = q.run(r.layer, in, e)
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
	for w, t := range []*gguf.TensorInfo{L.Gate, L.Up, L.Down} {
		x, err := q.decode(t, e)
		if err != nil {
			return nil, err
		}
		switch w {
		case 0:
			ex.Gate = x
		case 1:
			ex.Up = x
		default:
			ex.Down = x
		}
	}
	res, err := optq.QuantizeExpert(&ex, in.Inputs(e), q.opt)
	if err != nil {
		return nil, fmt.Errorf("block %d expert %d: %w", L.Block, e, err)
	}
	q.mu.Lock()
	for w, t := range []*gguf.TensorInfo{L.Gate, L.Up, L.Down} {
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
	}
	q.mu.Unlock()
	return res, nil
}

// decode reads expert e's matrix of tensor t as float32, refusing
// non-finite weights.
func (q *Quantizer) decode(t *gguf.TensorInfo, e int) ([]float32, error) {
	off, size, err := gguf.ExpertSlice(t, e)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, size)
	if err := q.f.ReadTensorAt(t, raw, off); err != nil {
		return nil, err
	}
	x := make([]float32, t.Dims[0]*t.Ne(1))
	if err := kernels.Dequantize(t.Type, raw, x); err != nil {
		return nil, fmt.Errorf("%s: tensor %q expert %d: %w", q.f.Path, t.Name, e, err)
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			ti, _ := quant.Info(t.Type)
			file, base := q.f.Locate(t)
			return nil, fmt.Errorf("%s: byte %d: tensor %q: element %d (expert %d) is %v: refusing to quantize non-finite weights",
				file, base+off+int64(i/ti.BlockElements*ti.BlockBytes), t.Name, int64(e)*int64(len(x))+int64(i), e, v)
		}
	}
	return x, nil
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

// OutputError is tensor name's ‖(W−Ŵ)X‖/‖WX‖ over held-back tokens.
func (q *Quantizer) OutputError(name string) (float64, bool) {
	st, ok := q.TensorErrors(name)
	if !ok || st.HeldTokens == 0 {
		return 0, false
	}
	return st.RelOutput(), true
}

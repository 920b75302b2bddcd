// Package calib collects the calibration inputs of every expert: it runs
// the model over calibration windows and records, per MoE layer, the normed
// hidden state each token brings to the MoE block and the experts it is
// routed to. The states are spilled to one temporary file per layer as the
// windows run, so memory holds only the routing ids; each expert's inputs
// are read back from its layer's file when it is quantized (Layer,
// Inputs), so memory follows the experts in flight, not the calibration.
package calib

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/optq"
)

// DefaultHoldEvery holds back every 16th window from the Hessians to
// measure the calibration output error on tokens the quantizer never saw.
const DefaultHoldEvery = 16

// Options tune Collect.
type Options struct {
	// HoldEvery holds back window i when i % HoldEvery == HoldEvery-1
	// (0: DefaultHoldEvery; 1 or fewer than 2 windows: none held back).
	HoldEvery int
	// Dir is where the spill files go ("" : os.TempDir()).
	Dir string
	// Progress, when set, is told each window's token count once it ran.
	Progress func(tokens int)
	// BatchTokens bounds the tokens of the windows run together through
	// the layers (0: DefaultBatchTokens): the forward pass's memory
	// grows with it, its speed too, while each expert sees more tokens
	// per decode of its weights. It changes no result.
	BatchTokens int
}

// DefaultBatchTokens is the engine's batch of windows.
const DefaultBatchTokens = engine.DefaultWindowTokens

// Set is the collected calibration inputs of every MoE layer.
type Set struct {
	Embd, ExpertsUsed, Experts int
	Tokens, HeldTokens         int64
	Windows, HeldWindows       int
	layers                     []*layerSpill
	byBlock                    map[int]int
	dir                        string // where spill files go
	// Times is where the calibration run's time went.
	Times CollectTimes
}

// CollectTimes is where Collect's time went, measured on the clock and in
// the process's CPU time (all threads; 0 where the system does not tell).
type CollectTimes struct {
	Seconds    float64 `json:"s"`
	CPUSeconds float64 `json:"cpu_s"`
	// Layer and LayerCPU are each model layer's forward pass over every
	// batch of windows (its mixer, router and experts; the embedding in
	// the first layer's), the spill not included.
	Layer    []float64 `json:"layer_s"`
	LayerCPU []float64 `json:"layer_cpu_s"`
	// Spill and SpillCPU are the MoE inputs' encoding and writes (the
	// observer, between the layers).
	Spill    float64 `json:"spill_s"`
	SpillCPU float64 `json:"spill_cpu_s"`
	// Flush is the spill files' last writes after the run.
	Flush float64 `json:"flush_s"`
	// Phases is the engine's time by phase (engine.StepTimes of the
	// batched windows), PoolWait the part of each phase its parallel
	// passes spent waiting for the pool's last workers, in seconds.
	Phases   map[string]float64 `json:"phases_s,omitempty"`
	PoolWait map[string]float64 `json:"pool_wait_s,omitempty"`
}

type layerSpill struct {
	block int
	file  *os.File
	w     *bufio.Writer
	ids   []int32 // [tokens][K]
	held  []bool  // per token
}

type collector struct {
	s    *Set
	held []bool // per sequence of the batch in flight
	err  error
	buf  []byte
	// mark and markCPU are when the last observer call (or the batch)
	// began or ended: a layer's forward pass runs from one to the next.
	mark    time.Time
	markCPU float64
	pf      *prefetcher
}

// lapLayer counts the time since the last mark as layer l's.
func (c *collector) lapLayer(l int) {
	now, cpu := time.Now(), osutil.CPUSeconds()
	t := &c.s.Times
	for len(t.Layer) <= l {
		t.Layer, t.LayerCPU = append(t.Layer, 0), append(t.LayerCPU, 0)
	}
	t.Layer[l] += now.Sub(c.mark).Seconds()
	t.LayerCPU[l] += cpu - c.markCPU
	c.mark, c.markCPU = now, cpu
}

func (c *collector) Layer(tr *engine.LayerTrace) {
	if tr.Seq == 0 {
		c.lapLayer(tr.Layer)
		c.pf.reached(tr.Layer + 1)
	}
	defer func() {
		now, cpu := time.Now(), osutil.CPUSeconds()
		c.s.Times.Spill += now.Sub(c.mark).Seconds()
		c.s.Times.SpillCPU += cpu - c.markCPU
		c.mark, c.markCPU = now, cpu
	}()
	if c.err != nil {
		return
	}
	li, ok := c.s.byBlock[tr.Layer]
	if !ok {
		return
	}
	l := c.s.layers[li]
	D, K := c.s.Embd, c.s.ExpertsUsed
	if len(tr.MoEInput) != tr.Tokens*D || len(tr.IDs) != tr.Tokens*K {
		c.err = fmt.Errorf("layer %d: trace of %d tokens has %d input values and %d ids (embedding %d, %d experts used)", tr.Layer, tr.Tokens, len(tr.MoEInput), len(tr.IDs), D, K)
		return
	}
	// Encoded in parts on every core: at 2048 tokens a layer's inputs are
	// 21 MB, which one goroutine took a few percent of the layer's time over.
	x := tr.MoEInput
	c.buf = slices.Grow(c.buf[:0], 4*len(x))[:4*len(x)]
	parts := max(1, min(runtime.GOMAXPROCS(0), len(x)>>16))
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(x)/parts, (p+1)*len(x)/parts
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				binary.LittleEndian.PutUint32(c.buf[4*i:], math.Float32bits(x[i]))
			}
		})
	}
	wg.Wait()
	if _, err := l.w.Write(c.buf); err != nil {
		c.err = fmt.Errorf("calibration spill %s: %w", l.file.Name(), err)
		return
	}
	l.ids = append(l.ids, tr.IDs...)
	for range tr.Tokens {
		l.held = append(l.held, c.held[tr.Seq])
	}
}

// Collect runs m over windows (each from position 0, as profile does) and
// records the MoE inputs of the layers blocks. Close the Set to remove its
// spill files. (Quantizing a layer's experts while the run computed the
// next ones was tried: slower on the lent 16-core Xeon, 64.3 -> 70.3 s at
// the field shape, and 2.39 GB of anonymous memory: docs/BENCHMARKS.md,
// "Where a calibrated pack's time goes".)
func Collect(ctx context.Context, m *engine.Model, blocks []int, windows [][]int32, opt Options) (set *Set, err error) {
	c := &m.Config
	s := &Set{Embd: c.Embd, ExpertsUsed: c.ExpertsUsed, Experts: c.Experts, byBlock: map[int]int{}, Windows: len(windows), dir: opt.Dir}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for i, b := range blocks {
		f, err := os.CreateTemp(opt.Dir, fmt.Sprintf("stratactl-calib-blk%d-*.f32", b))
		if err != nil {
			return nil, fmt.Errorf("calibration spill: %w", err)
		}
		// The file is unlinked at once where the system allows it, so that
		// nothing is left behind even on a crash; it is read back through
		// the open handle.
		os.Remove(f.Name())
		s.layers = append(s.layers, &layerSpill{block: b, file: f, w: bufio.NewWriterSize(f, 1<<20)})
		s.byBlock[b] = i
	}
	hold := opt.HoldEvery
	if hold == 0 {
		hold = DefaultHoldEvery
	}
	held := func(i int) bool { return hold > 1 && len(windows) >= 2 && i%hold == hold-1 }
	for i, w := range windows {
		s.Tokens += int64(len(w))
		if held(i) {
			s.HeldTokens += int64(len(w))
			s.HeldWindows++
		}
	}
	budget := opt.BatchTokens
	if budget <= 0 {
		budget = DefaultBatchTokens
	}
	if err := s.run(ctx, m, windows, opt, budget, held); err != nil {
		return nil, err
	}
	return s, nil
}

// run is Collect's calibration run.
func (s *Set) run(ctx context.Context, m *engine.Model, windows [][]int32, opt Options, budget int, held func(int) bool) error {
	// The first batch reads the model: its layers are asked of the disk
	// ahead of the run.
	col := &collector{s: s, pf: newPrefetcher(m.File, len(m.Layers))}
	defer col.pf.close()
	t0, c0 := time.Now(), osutil.CPUSeconds()
	var steps engine.StepTimes
	err := m.RunWindows(ctx, windows, engine.WindowsOptions{BatchTokens: budget, Observer: col, Timing: &steps,
		Before: func(lo, hi int) error {
			col.mark, col.markCPU = time.Now(), osutil.CPUSeconds()
			col.held = col.held[:0]
			for i := lo; i < hi; i++ {
				col.held = append(col.held, held(i))
			}
			return nil
		},
		After: func(lo, hi int) error {
			if col.err != nil {
				return col.err
			}
			if opt.Progress != nil {
				for i := lo; i < hi; i++ {
					opt.Progress(len(windows[i]))
				}
			}
			return nil
		}})
	if err != nil {
		return fmt.Errorf("calibration run: %w", err)
	}
	t1 := time.Now()
	for _, l := range s.layers {
		if err := l.w.Flush(); err != nil {
			return fmt.Errorf("calibration spill %s: %w", l.file.Name(), err)
		}
	}
	t := &s.Times
	t.Flush = time.Since(t1).Seconds()
	t.Seconds, t.CPUSeconds = time.Since(t0).Seconds(), osutil.CPUSeconds()-c0
	t.Phases, t.PoolWait = map[string]float64{}, map[string]float64{}
	for p := range engine.NumPhases {
		if steps.Nanos[p] > 0 {
			t.Phases[p.String()] = float64(steps.Nanos[p]) / 1e9
		}
		if steps.WaitNanos[p] > 0 {
			t.PoolWait[p.String()] = float64(steps.WaitNanos[p]) / 1e9
		}
	}
	return nil
}

// Close removes the spill files.
func (s *Set) Close() error {
	var first error
	for _, l := range s.layers {
		if l.file == nil {
			continue
		}
		if err := l.file.Close(); err != nil && first == nil {
			first = err
		}
		os.Remove(l.file.Name())
		l.file = nil
	}
	return first
}

// Has reports whether block is one of the collected layers.
func (s *Set) Has(block int) bool { _, ok := s.byBlock[block]; return ok }

// Layer is one MoE layer's routing: per expert, the tokens routed to it
// (quantizer's and held-back ones); their states stay in the spill file.
type Layer struct {
	Block       int
	embd        int
	spill       *layerSpill
	train, held [][]int32 // per expert: token indices
}

// Layer gives block's routing; its inputs are read from its spill file by
// Inputs.
func (s *Set) Layer(block int) (*Layer, error) {
	li, ok := s.byBlock[block]
	if !ok {
		return nil, fmt.Errorf("calibration has no layer %d", block)
	}
	l := s.layers[li]
	if l.file == nil {
		return nil, fmt.Errorf("calibration of layer %d: the set is closed", block)
	}
	n := len(l.held)
	K := s.ExpertsUsed
	L := &Layer{Block: block, embd: s.Embd, spill: l, train: make([][]int32, s.Experts), held: make([][]int32, s.Experts)}
	for t := 0; t < n; t++ {
		for _, e := range l.ids[t*K : (t+1)*K] {
			if l.held[t] {
				L.held[e] = append(L.held[e], int32(t))
			} else {
				L.train[e] = append(L.train[e], int32(t))
			}
		}
	}
	return L, nil
}

// Tokens is the number of quantizer (not held-back) tokens routed to e.
func (l *Layer) Tokens(e int) int { return len(l.train[e]) }

// Inputs reads expert e's inputs for the quantizer from the spill file:
// runs of consecutive tokens in one read each.
func (l *Layer) Inputs(e int) (*optq.Inputs, error) {
	D := l.embd
	row := int64(D) * 4
	if l.spill.file == nil {
		return nil, fmt.Errorf("calibration of layer %d: the set is closed", l.Block)
	}
	var raw []byte
	gather := func(ts []int32) ([]float32, error) {
		out := make([]float32, len(ts)*D)
		for j := 0; j < len(ts); {
			k := j + 1
			for k < len(ts) && ts[k] == ts[k-1]+1 && k-j < 256 {
				k++
			}
			raw = slices.Grow(raw[:0], (k-j)*int(row))[:(k-j)*int(row)]
			if _, err := l.spill.file.ReadAt(raw, int64(ts[j])*row); err != nil {
				return nil, fmt.Errorf("calibration spill of layer %d: %w", l.Block, err)
			}
			for i := range (k - j) * D {
				out[j*D+i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			j = k
		}
		return out, nil
	}
	x, err := gather(l.train[e])
	if err != nil {
		return nil, err
	}
	held, err := gather(l.held[e])
	if err != nil {
		return nil, err
	}
	return &optq.Inputs{X: x, N: len(l.train[e]), Held: held, NH: len(l.held[e])}, nil
}

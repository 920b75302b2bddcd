// Package engine runs Mixture-of-Experts transformers on the CPU (the
// architectures of SupportedArchitectures: qwen3moe, and the hybrid
// qwen35moe and qwen3next with gated delta nets and shared experts):
// model loading from GGUF or a strata pack, the forward pass (batched
// prefill, single-token decode with a KV cache), routing, sampling, and the
// expert store that streams experts of a pack from disk.
package engine

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// Config is the architecture read from GGUF metadata.
type Config struct {
	Arch string
	// Layers is the decoder blocks the forward pass runs; MTPLayers more
	// (multi-token prediction blocks after them in the file) are never
	// run nor loaded.
	Layers      int
	MTPLayers   int
	Embd        int
	Heads       int
	HeadsKV     int
	HeadDim     int // key_length
	ValueDim    int // value_length
	RopeBase    float64
	Eps         float32
	Experts     int
	ExpertsUsed int
	ExpertFF    int
	Context     int
	Vocab       int
	// NormTopK renormalises the top-k router probabilities to sum to 1
	// (Qwen3-MoE's norm_topk_prob).
	NormTopK bool
	// SharedFF is the shared expert's feed-forward length; 0: no shared
	// expert.
	SharedFF int
	// RopeDims is how many leading dimensions of each query and key head
	// RoPE rotates (NEOX pairs (i, i+RopeDims/2)); the rest pass through.
	RopeDims int
	// RopeSections are the multi-section (interleaved M-RoPE) sizes of
	// the position components (time, height, width, extra), in pairs; nil
	// for plain RoPE.
	RopeSections []int
	// Recurrent marks the layers whose token mixer is a gated delta net
	// (the others are attention); nil when every layer is attention.
	Recurrent []bool
	// SSM is the gated delta net's shape (when some layer is recurrent).
	SSM SSMConfig
}

// SSMConfig is the shape of a gated delta net (llama.cpp's ssm.* keys).
type SSMConfig struct {
	ConvKernel int // ssm.conv_kernel: taps of the causal depthwise conv
	KeyHeads   int // ssm.group_count
	KeyDim     int // ssm.state_size: per key head (and value head)
	ValueHeads int // ssm.time_step_rank
	ValueDim   int // ssm.inner_size / ValueHeads
	// GroupedHeads: value head h reads key head h / (ValueHeads/KeyHeads)
	// (qwen3next's layout); otherwise key head h % KeyHeads (qwen35moe's).
	GroupedHeads bool
}

// Channels is the conv's channel count: q, k (KeyHeads*KeyDim each) and v.
func (s *SSMConfig) Channels() int { return 2*s.KeyHeads*s.KeyDim + s.ValueHeads*s.ValueDim }

// keyHead is the key head value head h reads.
func (s *SSMConfig) keyHead(h int) int {
	if s.GroupedHeads {
		return h / (s.ValueHeads / s.KeyHeads)
	}
	return h % s.KeyHeads
}

// Layer holds one decoder block's dense weights. Its token mixer is the
// gated delta net when Delta is set, else attention (Q, K, V, O and the q/k
// norms); FFNNorm is the norm before the MoE (ffn_norm or
// post_attention_norm).
type Layer struct {
	AttnNorm, QNorm, KNorm, FFNNorm []float32
	Q, K, V, O                      kernels.Matrix
	// QGate: each head's rows of Q are its query, then its output gate
	// (the attention output is multiplied by sigmoid(gate)).
	QGate  bool
	Delta  *DeltaNet
	Router kernels.Matrix
	// RouterQ8 is the pack's Q8_0 copy of the router, used only to guess
	// the next layer's experts for read-ahead; nil in a plain GGUF.
	RouterQ8 *kernels.Matrix
	// Shared is the always-run shared expert, nil when the model has none.
	Shared *SharedExpert
}

// mixerInput is the first matrix the layer's token mixer multiplies its
// normed input by (the input's quantization follows its type).
func (L *Layer) mixerInput() *kernels.Matrix {
	switch {
	case L.Delta == nil:
		return &L.Q
	case L.Delta.In != nil:
		return L.Delta.In
	}
	return &L.Delta.QKV
}

// DeltaNet is a gated delta net's weights.
type DeltaNet struct {
	QKV kernels.Matrix // input -> conv channels (q | k | v)
	Z   kernels.Matrix // input -> output gate, ValueHeads*ValueDim
	// In, when set, replaces QKV and Z (qwen3next's legacy ssm_in): per
	// key head its q, its k, its value heads' v, then their z rows.
	In   *kernels.Matrix
	Beta kernels.Matrix // input -> per value head beta logit
	// Alpha is input -> per value head decay logit. With BA set instead
	// (qwen3next's ssm_ba), one matrix gives both, per key head: its
	// value heads' beta logits, then their alpha logits.
	Alpha     kernels.Matrix
	BA        *kernels.Matrix
	Conv      []float32      // [Channels][ConvKernel]
	DtBias, A []float32      // [ValueHeads]; A = -exp(A_log)
	Norm      []float32      // [ValueDim]
	Out       kernels.Matrix // ValueHeads*ValueDim -> Embd
}

// SharedExpert is a dense SwiGLU expert every token runs, scaled by
// sigmoid(GateInp . x).
type SharedExpert struct {
	Gate, Up, Down kernels.Matrix
	GateInp        []float32
}

// Model is a loaded model: configuration, dense weights used in place from
// the mapped GGUF, and the expert store.
type Model struct {
	Config  Config
	File    *gguf.File
	Embd    kernels.Matrix
	OutNorm []float32
	Output  kernels.Matrix
	Layers  []Layer
	Experts ExpertStore
	Pool    *kernels.Pool
	// Mode is the arithmetic of the matrix products (Options.Mode); it
	// may be changed between Forward calls.
	Mode Mode

	ropeOnce sync.Once
	rope     *rope
}

// tensorLoader looks tensors up by name and checks shapes, naming the file
// and tensor in every error.
type tensorLoader struct {
	f *gguf.File
}

func (l tensorLoader) info(name string, ne ...int) (*gguf.TensorInfo, []byte, error) {
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, nil, fmt.Errorf("%s: missing tensor %s", l.f.Path, name)
	}
	if len(t.Dims) > len(ne) {
		for _, d := range t.Dims[len(ne):] {
			if d != 1 {
				return nil, nil, fmt.Errorf("%s: tensor %s has shape %v, want %v", l.f.Path, name, t.Dims, ne)
			}
		}
	}
	for i, want := range ne {
		if t.Ne(i) != int64(want) {
			return nil, nil, fmt.Errorf("%s: tensor %s has shape %v, want %v", l.f.Path, name, t.Dims, ne)
		}
	}
	data, ok := l.f.Bytes(t)
	if !ok {
		return nil, nil, fmt.Errorf("%s: tensor %s: file is not mapped", l.f.Path, name)
	}
	return t, data, nil
}

func (l tensorLoader) matrix(name string, cols, rows int) (kernels.Matrix, error) {
	t, data, err := l.info(name, cols, rows)
	if err != nil {
		return kernels.Matrix{}, err
	}
	m, err := kernels.NewMatrix(t.Type, data, cols, rows)
	if err != nil {
		return kernels.Matrix{}, fmt.Errorf("%s: tensor %s at offset %d: %w", l.f.Path, name, l.f.DataStart(t), err)
	}
	return m, nil
}

// vector decodes a small 1-D tensor (norm weights) to float32.
func (l tensorLoader) vector(name string, n int) ([]float32, error) {
	return l.floats(name, n)
}

// floats decodes a small tensor of shape ne (ggml order) to float32.
func (l tensorLoader) floats(name string, ne ...int) ([]float32, error) {
	t, data, err := l.info(name, ne...)
	if err != nil {
		return nil, err
	}
	n := 1
	for _, d := range ne {
		n *= d
	}
	out := make([]float32, n)
	if err := kernels.DecodeRow(t.Type, data, out); err != nil {
		return nil, fmt.Errorf("%s: tensor %s at offset %d: %w", l.f.Path, name, l.f.DataStart(t), err)
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%s: tensor %s: element %d is %v", l.f.Path, name, i, v)
		}
	}
	return out, nil
}

// loadDense maps every non-expert tensor of f into m.
func (m *Model) loadDense(f *gguf.File) error {
	c := &m.Config
	l := tensorLoader{f}
	et, ok := f.Tensor("token_embd.weight")
	if !ok {
		return fmt.Errorf("%s: missing tensor token_embd.weight", f.Path)
	}
	c.Vocab = int(et.Ne(1))
	var err error
	if m.Embd, err = l.matrix("token_embd.weight", c.Embd, c.Vocab); err != nil {
		return err
	}
	if m.OutNorm, err = l.vector("output_norm.weight", c.Embd); err != nil {
		return err
	}
	if m.Output, err = l.matrix("output.weight", c.Embd, c.Vocab); err != nil {
		return err
	}
	spec := archs[c.Arch]
	m.Layers = make([]Layer, c.Layers)
	for i := range m.Layers {
		if err := spec.layer(l, c, i, &m.Layers[i]); err != nil {
			return err
		}
	}
	return nil
}

// Options tune loading and running; the zero value is the default.
type Options struct {
	// Threads sizes the matmul pool; 0 means GOMAXPROCS.
	Threads int
	// Stream configures the expert store of a pack (ignored for a GGUF).
	Stream StreamOptions
	// Mode is the arithmetic of the matrix products: Fast (quantized
	// activations, the default) or Exact (float32, the reference; mode.go).
	Mode Mode
}

// Open loads a model: a GGUF file or any shard of a split GGUF (experts used
// in place from the mapping), or a pack folder (experts streamed through an
// arena).
func Open(path string, opt Options) (*Model, error) {
	if isDir(path) {
		return openPack(path, opt)
	}
	f, err := gguf.OpenModel(path, true)
	if err != nil {
		return nil, err
	}
	m, err := newModel(f, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	store, err := newMappedExperts(f, &m.Config)
	if err != nil {
		f.Close()
		return nil, err
	}
	m.Experts = store
	return m, nil
}

func newModel(f *gguf.File, opt Options) (*Model, error) {
	c, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	m := &Model{Config: c, File: f, Pool: kernels.NewPool(opt.Threads), Mode: opt.Mode}
	if err := m.loadDense(f); err != nil {
		return nil, err
	}
	return m, nil
}

// DenseBytesPerToken is the weight bytes one decode step reads outside the
// experts: every layer's attention and router matrices, the output head and
// one embedding row.
func (m *Model) DenseBytesPerToken() int64 {
	n := int64(m.Embd.RowBytes)
	for _, mm := range m.TokenMatrices() {
		n += int64(len(mm.Data))
	}
	return n
}

// TokenMatrices are the matrices outside the routed experts that every
// decode step multiplies by its activations: every layer's dense matrices
// once (with the Q8_0 router copy once per layer read-ahead guesses it
// for, when experts stream), then the output head.
func (m *Model) TokenMatrices() []*kernels.Matrix {
	var ms []*kernels.Matrix
	for i := range m.Layers {
		L := &m.Layers[i]
		ms = append(ms, L.denseMatrices()...)
		for j := 0; L.RouterQ8 != nil && j < m.Experts.ReadAhead(); j++ {
			ms = append(ms, L.RouterQ8)
		}
	}
	return append(ms, &m.Output)
}

// denseMatrices are the layer's matrices outside the routed experts (the
// Q8_0 router copy aside).
func (L *Layer) denseMatrices() []*kernels.Matrix {
	ms := []*kernels.Matrix{&L.Router}
	if d := L.Delta; d != nil {
		ms = append(ms, &d.QKV, &d.Z, &d.Out) // QKV and Z are empty with In
		if d.In != nil {
			ms = append(ms, d.In)
		}
		if d.BA != nil {
			ms = append(ms, d.BA)
		} else {
			ms = append(ms, &d.Beta, &d.Alpha)
		}
	} else {
		ms = append(ms, &L.Q, &L.K, &L.V, &L.O)
	}
	if sh := L.Shared; sh != nil {
		ms = append(ms, &sh.Gate, &sh.Up, &sh.Down)
	}
	return ms
}

// Stream is the pack's expert store, or nil for a plain GGUF.
func (m *Model) Stream() *PackStore {
	ps, _ := m.Experts.(*PackStore)
	return ps
}

// Close ends the pool's workers and releases the mapping and the expert
// store.
func (m *Model) Close() error {
	m.Pool.Close()
	var errs []error
	if m.Experts != nil {
		errs = append(errs, m.Experts.Close())
	}
	if m.File != nil {
		errs = append(errs, m.File.Close())
	}
	return errors.Join(errs...)
}

// expertParts are the three expert tensors of a MoE layer, in pack order.
var expertParts = [3]string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}

// expertShape is (cols, rows) of part p of one expert.
func (c *Config) expertShape(p int) (cols, rows int) {
	if p == 2 {
		return c.ExpertFF, c.Embd
	}
	return c.Embd, c.ExpertFF
}

// partType checks that type t can run as an expert part.
func partType(t quant.Type) error {
	if !kernels.CanDecode(t) {
		return fmt.Errorf("no kernel for type %s", t)
	}
	return nil
}

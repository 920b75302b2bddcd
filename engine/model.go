// Package engine runs Mixture-of-Experts transformers (qwen3moe) on the CPU:
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
	"github.com/stratactl/stratactl/strata"
)

// Config is the architecture read from GGUF metadata.
type Config struct {
	Arch        string
	Layers      int
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
}

// supportedArch lists the architectures whose graph this package implements.
var supportedArch = map[string]bool{"qwen3moe": true}

// ReadConfig reads and checks the architecture of f.
func ReadConfig(f *gguf.File) (Config, error) {
	arch := f.Architecture()
	if arch == "" {
		return Config{}, fmt.Errorf("%s: no general.architecture", f.Path)
	}
	if !supportedArch[arch] {
		return Config{}, fmt.Errorf("%s: architecture %q is not supported (supported: qwen3moe)", f.Path, arch)
	}
	c := Config{Arch: arch}
	u := func(suffix string, dst *int) error {
		key := arch + "." + suffix
		v, ok := f.Get(key)
		if !ok {
			return fmt.Errorf("%s: missing metadata key %s", f.Path, key)
		}
		x, ok := v.AsUint64()
		if !ok || x == 0 || x > 1<<31 {
			return fmt.Errorf("%s: metadata key %s: want a positive integer, have %s", f.Path, key, v.TypeName())
		}
		*dst = int(x)
		return nil
	}
	for _, k := range []struct {
		s string
		d *int
	}{
		{"block_count", &c.Layers}, {"embedding_length", &c.Embd},
		{"attention.head_count", &c.Heads}, {"attention.head_count_kv", &c.HeadsKV},
		{"expert_count", &c.Experts}, {"expert_used_count", &c.ExpertsUsed},
		{"expert_feed_forward_length", &c.ExpertFF}, {"context_length", &c.Context},
	} {
		if err := u(k.s, k.d); err != nil {
			return Config{}, err
		}
	}
	c.HeadDim = c.Embd / c.Heads
	if f.Has(arch + ".attention.key_length") {
		if err := u("attention.key_length", &c.HeadDim); err != nil {
			return Config{}, err
		}
	}
	c.ValueDim = c.HeadDim
	if f.Has(arch + ".attention.value_length") {
		if err := u("attention.value_length", &c.ValueDim); err != nil {
			return Config{}, err
		}
	}
	fl := func(suffix string, def float64) (float64, error) {
		key := arch + "." + suffix
		v, ok := f.Get(key)
		if !ok {
			if def != 0 {
				return def, nil
			}
			return 0, fmt.Errorf("%s: missing metadata key %s", f.Path, key)
		}
		x, ok := v.AsFloat64()
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			return 0, fmt.Errorf("%s: metadata key %s: want a positive number", f.Path, key)
		}
		return x, nil
	}
	var err error
	if c.RopeBase, err = fl("rope.freq_base", 10000); err != nil {
		return Config{}, err
	}
	eps, err := fl("attention.layer_norm_rms_epsilon", 0)
	if err != nil {
		return Config{}, err
	}
	c.Eps = float32(eps)
	c.NormTopK = true
	if v, ok := f.Get(arch + ".expert_weights_norm"); ok {
		b, isBool := v.Any().(bool)
		if !isBool {
			return Config{}, fmt.Errorf("%s: metadata key %s.expert_weights_norm: want bool, have %s", f.Path, arch, v.TypeName())
		}
		c.NormTopK = b
	}
	switch {
	case c.Heads%c.HeadsKV != 0:
		return Config{}, fmt.Errorf("%s: head_count %d is not a multiple of head_count_kv %d", f.Path, c.Heads, c.HeadsKV)
	case c.ExpertsUsed > c.Experts:
		return Config{}, fmt.Errorf("%s: expert_used_count %d > expert_count %d", f.Path, c.ExpertsUsed, c.Experts)
	case c.HeadDim%2 != 0:
		return Config{}, fmt.Errorf("%s: head dimension %d is odd (RoPE pairs dimensions)", f.Path, c.HeadDim)
	}
	return c, nil
}

// Layer holds one decoder block's dense weights.
type Layer struct {
	AttnNorm, QNorm, KNorm, FFNNorm []float32
	Q, K, V, O                      kernels.Matrix
	Router                          kernels.Matrix
	// RouterQ8 is the pack's Q8_0 copy of the router, used only to guess
	// the next layer's experts for read-ahead; nil in a plain GGUF.
	RouterQ8 *kernels.Matrix
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

	ropeOnce sync.Once
	rope     []float64
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
	t, data, err := l.info(name, n)
	if err != nil {
		return nil, err
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
	qdim, kvdim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	vdim := c.HeadsKV * c.ValueDim
	m.Layers = make([]Layer, c.Layers)
	for i := range m.Layers {
		L := &m.Layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		steps := []func() error{
			func() (e error) { L.AttnNorm, e = l.vector(p+"attn_norm.weight", c.Embd); return },
			func() (e error) { L.QNorm, e = l.vector(p+"attn_q_norm.weight", c.HeadDim); return },
			func() (e error) { L.KNorm, e = l.vector(p+"attn_k_norm.weight", c.HeadDim); return },
			func() (e error) { L.FFNNorm, e = l.vector(p+"ffn_norm.weight", c.Embd); return },
			func() (e error) { L.Q, e = l.matrix(p+"attn_q.weight", c.Embd, qdim); return },
			func() (e error) { L.K, e = l.matrix(p+"attn_k.weight", c.Embd, kvdim); return },
			func() (e error) { L.V, e = l.matrix(p+"attn_v.weight", c.Embd, vdim); return },
			func() (e error) { L.O, e = l.matrix(p+"attn_output.weight", c.Heads*c.ValueDim, c.Embd); return },
			func() (e error) { L.Router, e = l.matrix(p+"ffn_gate_inp.weight", c.Embd, c.Experts); return },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		if _, ok := f.Tensor(strata.RouterCopyName(i)); ok {
			rq, err := l.matrix(strata.RouterCopyName(i), c.Embd, c.Experts)
			if err != nil {
				return err
			}
			L.RouterQ8 = &rq
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
	m := &Model{Config: c, File: f, Pool: kernels.NewPool(opt.Threads)}
	if err := m.loadDense(f); err != nil {
		return nil, err
	}
	return m, nil
}

// DenseBytesPerToken is the weight bytes one decode step reads outside the
// experts: every layer's attention and router matrices, the output head and
// one embedding row.
func (m *Model) DenseBytesPerToken() int64 {
	n := int64(m.Embd.RowBytes) + int64(len(m.Output.Data))
	for i := range m.Layers {
		L := &m.Layers[i]
		for _, mm := range []*kernels.Matrix{&L.Q, &L.K, &L.V, &L.O, &L.Router} {
			n += int64(len(mm.Data))
		}
		if L.RouterQ8 != nil && m.Experts.Streaming() {
			n += int64(len(L.RouterQ8.Data))
		}
	}
	return n
}

// Stream is the pack's expert store, or nil for a plain GGUF.
func (m *Model) Stream() *PackStore {
	ps, _ := m.Experts.(*PackStore)
	return ps
}

// Close releases the mapping and the expert store.
func (m *Model) Close() error {
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

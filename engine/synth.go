package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/hybridshape"
	"github.com/stratactl/stratactl/internal/synthlayout"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// SynthSpec shapes a synthetic pack for decode benchmarks: random weights
// of realistic scale (activations stay ordinary numbers), so speed is what
// real weights of the same types would give. Arch is "qwen3moe" (the
// default when empty; Heads, HeadsKV and HeadDim shape its attention, zero
// fields taking synthlayout.Attention's defaults) or "qwen35moe", whose
// token mixers Hybrid shapes (zero fields take hybridshape.Shape's
// defaults; Heads, HeadsKV and HeadDim are unused). Either way the dense
// tensors and keys are synthlayout.Layout's, the layout synth writes.
type SynthSpec struct {
	Arch                                  string `json:"arch,omitempty"`
	Layers, Embd, Heads, HeadsKV, HeadDim int
	Experts, ExpertsUsed, ExpertFF, Vocab int
	DenseType, ExpertType                 quant.Type
	Seed                                  uint64
	Hybrid                                *hybridshape.Shape `json:"hybrid,omitempty"`
}

// SynthArchitectures are the architectures WriteSyntheticPack makes.
var SynthArchitectures = []string{"qwen3moe", "qwen35moe"}

// Resolve checks the architecture and fills the zero fields of its
// geometry (qwen3moe: Heads, HeadsKV, HeadDim; qwen35moe: Hybrid's) with
// their defaults.
func (sp *SynthSpec) Resolve() error {
	switch sp.Arch {
	case "", "qwen3moe":
		sp.Arch = "qwen3moe"
		if sp.Hybrid != nil {
			return fmt.Errorf("synthetic qwen3moe pack: a hybrid shape is for qwen35moe only")
		}
		a, err := synthlayout.Attention{Heads: sp.Heads, HeadsKV: sp.HeadsKV, HeadDim: sp.HeadDim}.Resolve(sp.Embd)
		if err != nil {
			return err
		}
		sp.Heads, sp.HeadsKV, sp.HeadDim = a.Heads, a.HeadsKV, a.HeadDim
	case "qwen35moe":
		var h hybridshape.Shape
		if sp.Hybrid != nil {
			h = *sp.Hybrid
		}
		r, err := h.Resolve(sp.Embd, sp.ExpertFF)
		if err != nil {
			return err
		}
		sp.Hybrid = &r
	default:
		return fmt.Errorf("synthetic packs are of %s, not %q", strings.Join(SynthArchitectures, " or "), sp.Arch)
	}
	return nil
}

// layout is the model the (resolved) spec describes, as synth lays it
// out; the context is 4096 tokens, room for bench prefill's prompts.
func (sp *SynthSpec) layout() synthlayout.Layout {
	l := synthlayout.Layout{
		Model: hybridshape.Model{Arch: sp.Arch, Layers: sp.Layers, Experts: sp.Experts, Embd: sp.Embd, FF: sp.ExpertFF,
			Type: sp.ExpertType, DenseType: sp.DenseType, Context: 4096},
		Attention: synthlayout.Attention{Heads: sp.Heads, HeadsKV: sp.HeadsKV, HeadDim: sp.HeadDim},
		Vocab:     sp.Vocab,
	}
	if sp.Hybrid != nil {
		l.Hybrid = *sp.Hybrid
	}
	return l
}

// SynthBytes is the size of the experts file the spec makes.
func (sp *SynthSpec) SynthBytes() (int64, error) {
	h, err := sp.header()
	if err != nil {
		return 0, err
	}
	return int64(h.FileBytes), nil
}

func (sp *SynthSpec) header() (*strata.Header, error) {
	layers := make([]uint32, sp.Layers)
	for i := range layers {
		layers[i] = uint32(i)
	}
	return strata.NewHeader(layers, sp.Experts, [strata.NumParts]strata.PartShape{
		{Type: sp.ExpertType, Ne0: int64(sp.Embd), Ne1: int64(sp.ExpertFF)},
		{Type: sp.ExpertType, Ne0: int64(sp.Embd), Ne1: int64(sp.ExpertFF)},
		{Type: sp.ExpertType, Ne0: int64(sp.ExpertFF), Ne1: int64(sp.Embd)},
	})
}

// randomWeights encodes rows x cols random weights of type t whose values
// have a standard deviation near sigma.
func randomWeights(rng *rand.Rand, t quant.Type, cols, rows int, sigma float32) ([]byte, error) {
	rb, err := quant.RowBytes(t, int64(cols))
	if err != nil {
		return nil, err
	}
	out := make([]byte, rb*int64(rows))
	switch t {
	case quant.F32:
		for i := 0; i < cols*rows; i++ {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(rng.NormFloat64())*sigma))
		}
	case quant.BF16:
		for i := 0; i < cols*rows; i++ {
			binary.LittleEndian.PutUint16(out[2*i:], quant.Float32ToBF16(float32(rng.NormFloat64())*sigma))
		}
	case quant.F16:
		for i := 0; i < cols*rows; i++ {
			binary.LittleEndian.PutUint16(out[2*i:], quant.Float32ToFP16(float32(rng.NormFloat64())*sigma))
		}
	case quant.Q8_0, quant.Q2_0, quant.IQ4_NL, quant.Q4_0:
		// These blocks are an fp16 scale then codes: random codes with a
		// scale that gives the wanted spread, its sign drawn per block.
		// Uniform codes are not centred (Q2_0's -1..2 average 0.5, 0.45 of
		// their spread): with one sign for every block each matrix held a
		// rank-one part, its mean times all ones, which fed on itself
		// through the layers (the residual's rms grew from 1 to 35,000 over
		// 8 layers of the bench decode pack) and fixed the routing of the
		// deep layers to the same experts at every token; with a random
		// sign the values are centred as a real matrix's are.
		ti, _ := quant.Info(t)
		var scale float32
		switch t {
		case quant.Q8_0:
			scale = sigma / 73 // uniform int8: sd ~ 73.6
		case quant.Q2_0:
			scale = sigma / 1.225 // codes -1..2, either sign: rms sqrt(1.5)
		case quant.IQ4_NL:
			scale = sigma / 70
		case quant.Q4_0:
			scale = sigma / 4.6
		}
		h, neg := quant.Float32ToFP16(scale), quant.Float32ToFP16(-scale)
		var word, signs uint64
		for o, b := 0, 0; o < len(out); o, b = o+ti.BlockBytes, b+1 {
			if b%64 == 0 {
				signs = rng.Uint64()
			}
			if signs&1 != 0 {
				binary.LittleEndian.PutUint16(out[o:], neg)
			} else {
				binary.LittleEndian.PutUint16(out[o:], h)
			}
			signs >>= 1
			for j := o + 2; j < o+ti.BlockBytes; j++ {
				if (j-o)%8 == 2 {
					word = rng.Uint64()
				}
				out[j] = byte(word)
				word >>= 8
			}
		}
	default:
		// Any other type quant decodes (the K-quants, the IQ types, MXFP4):
		// blocks drawn from a pool of random blocks whose decoded values
		// are finite with an RMS within a factor 2 of sigma.
		pool, err := sampledBlocks(t, sigma)
		if err != nil {
			return nil, err
		}
		bb := len(pool[0])
		for o := 0; o < len(out); o += bb {
			copy(out[o:o+bb], pool[rng.IntN(len(pool))])
		}
	}
	return out, nil
}

// sampledPools caches sampledBlocks' pools (each a function of its key
// alone, so a pack's bytes do not depend on what ran before it).
var sampledPools sync.Map // sampledKey -> [][]byte

type sampledKey struct {
	t     quant.Type
	sigma float32
}

// sampledBlocks is a pool of 256 distinct blocks of type t made of random
// bytes (from a seed of t and sigma), each kept only if quant decodes it to
// finite values whose RMS is within a factor 2 of sigma.
func sampledBlocks(t quant.Type, sigma float32) ([][]byte, error) {
	key := sampledKey{t, sigma}
	if p, ok := sampledPools.Load(key); ok {
		return p.([][]byte), nil
	}
	ti, ok := quant.Info(t)
	if !ok || !quant.CanDequantize(t) {
		return nil, fmt.Errorf("synthetic weights of type %s are not supported: quant does not decode it", t)
	}
	const blocks, tries = 256, 1 << 22
	rng := rand.New(rand.NewPCG(uint64(t), uint64(math.Float32bits(sigma))))
	w := make([]float32, ti.BlockElements)
	var pool [][]byte
	for try := 0; len(pool) < blocks; try++ {
		if try == tries {
			return nil, fmt.Errorf("synthetic weights of type %s: %d of %d random blocks near a spread of %g in %d tries", t, len(pool), blocks, sigma, tries)
		}
		b := make([]byte, ti.BlockBytes)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if err := quant.Dequantize(t, b, w); err != nil {
			return nil, err
		}
		var ss float64
		for _, v := range w {
			ss += float64(v) * float64(v)
		}
		if rms := math.Sqrt(ss / float64(len(w))); rms >= float64(sigma)/2 && rms <= 2*float64(sigma) {
			pool = append(pool, b)
		}
	}
	p, _ := sampledPools.LoadOrStore(key, pool)
	return p.([][]byte), nil
}

// WriteSyntheticPack writes the pack of a random model (model.gguf,
// model.experts and keep.strp, through strata.CreatePack) as the folder
// dir, which must not exist or be an empty folder.
func WriteSyntheticPack(dir string, sp SynthSpec) error {
	if err := sp.Resolve(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(sp.Seed, 0x5717))
	h, err := sp.header()
	if err != nil {
		return err
	}
	if err := strata.RemoveEmptyDir(dir); err != nil {
		return err
	}
	xf, err := strata.CreatePack(dir, h)
	if err != nil {
		return err
	}
	defer xf.Abort()
	for l := 0; l < sp.Layers; l++ {
		for e := 0; e < sp.Experts; e++ {
			var parts [3][]byte
			for p := range parts {
				pt := h.Parts[p]
				sigma := float32(1 / math.Sqrt(float64(pt.Ne0)))
				if parts[p], err = randomWeights(rng, pt.Type, int(pt.Ne0), int(pt.Ne1), sigma); err != nil {
					return err
				}
			}
			if err := xf.WriteSlot(l, e, parts); err != nil {
				return err
			}
		}
	}
	if err := xf.FinishExperts(); err != nil {
		return err
	}
	layers := h.Layers
	k := strata.IdentityKeep(layers, sp.Experts)
	for l := range k.Rank {
		k.Rank[l] = make([]uint32, sp.Experts)
		for i, p := range rng.Perm(sp.Experts) {
			k.Rank[l][i] = uint32(p)
		}
	}
	keys, err := xf.Keys(sp.Experts)
	if err != nil {
		return err
	}
	lay := sp.layout()
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String(sp.Arch)},
		{Key: "general.name", Value: gguf.String("synthetic")},
	}
	kv = append(kv, lay.Metadata(sp.ExpertsUsed)...)
	kv = append(kv, keys...)
	type tensor struct {
		spec gguf.TensorSpec
		make func() ([]byte, error)
	}
	var ts []tensor
	D := sp.Embd
	// router adds layer l's router and its Q8_0 copy, the router itself
	// rounded, as a converter makes it: read-ahead guesses as well as it
	// would on a real pack.
	router := func(spec gguf.TensorSpec, l int, sigma float32) {
		var router []byte
		ts = append(ts, tensor{spec, func() (b []byte, err error) {
			router, err = randomWeights(rng, quant.F32, D, sp.Experts, sigma)
			return router, err
		}})
		ts = append(ts, tensor{strata.RouterCopySpec(l, int64(D), int64(sp.Experts)), func() ([]byte, error) {
			x := make([]float32, len(router)/4)
			for i := range x {
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(router[4*i:]))
			}
			return strata.RouterCopy(x, D)
		}})
	}
	// synth's layout, less the routed experts (they are the experts
	// file's) and with each router's copy beside it.
	err = lay.Tensors(func(name string, t quant.Type, mean, sigma float64, dims ...int64) error {
		spec := gguf.TensorSpec{Name: name, Type: t, Dims: dims}
		block, rest, inBlock := gguf.SplitBlockName(name)
		switch {
		case strings.HasSuffix(name, "_exps.weight"):
			return nil
		case inBlock && rest == "ffn_gate_inp.weight" && t == quant.F32:
			router(spec, block, float32(sigma))
			return nil
		case mean != 0 && t != quant.F32:
			return fmt.Errorf("synthetic %s: a mean of %g in %s is not made", name, mean, t)
		}
		rows := int64(1)
		for _, d := range dims[1:] {
			rows *= d
		}
		cols := int(dims[0])
		ts = append(ts, tensor{spec, func() ([]byte, error) {
			b, err := randomWeights(rng, t, cols, int(rows), float32(sigma))
			if err == nil && mean != 0 {
				for i := 0; i+4 <= len(b); i += 4 {
					v := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
					binary.LittleEndian.PutUint32(b[i:], math.Float32bits(v+float32(mean)))
				}
			}
			return b, err
		}})
		return nil
	})
	if err != nil {
		return err
	}
	specs := make([]gguf.TensorSpec, len(ts))
	for i := range ts {
		specs[i] = ts[i].spec
	}
	w, err := xf.CreateModel(kv, specs)
	if err != nil {
		return err
	}
	for _, t := range ts {
		b, err := t.make()
		if err == nil {
			err = w.WriteTensor(t.spec.Name, b)
		}
		if err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.Commit(); err != nil {
		return err
	}
	return xf.Commit(context.Background(), k, nil)
}

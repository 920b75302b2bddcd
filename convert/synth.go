package convert

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/hybridshape"
	"github.com/stratactl/stratactl/internal/synthlayout"
	"github.com/stratactl/stratactl/quant"
)

// SynthConfig describes a synthetic model.
type SynthConfig struct {
	Out         string
	Arch        string // "qwen3moe" or "qwen35moe"
	Layers      int
	Experts     int
	ExpertsUsed int // 0: min(8, Experts)
	Embd        int
	FF          int        // n_ff_exp
	Type        quant.Type // expert type
	DenseType   quant.Type // attention, embeddings, output (the command's default is BF16)
	Seed        uint64
	Jobs        int
	Progress    ProgressFunc
	Hybrid      HybridShape // qwen35moe only: the token mixers' geometry
}

// HybridShape is a qwen35moe model's token-mixer geometry (its home is
// internal/hybridshape, shared with bench decode's synthetic packs).
type HybridShape = hybridshape.Shape

// hybridModel is the part of cfg the qwen35moe layout reads.
func (cfg *SynthConfig) hybridModel() hybridshape.Model {
	return hybridshape.Model{Arch: cfg.Arch, Layers: cfg.Layers, Experts: cfg.Experts, Embd: cfg.Embd, FF: cfg.FF,
		Type: cfg.Type, DenseType: cfg.DenseType}
}

// SynthResult says what was written.
type SynthResult struct {
	Out      string            `json:"out"`
	Bytes    int64             `json:"bytes"`
	Tensors  int               `json:"tensors"`
	Weights  int64             `json:"weights"`
	Fallback map[string]string `json:"fallback,omitempty"` // tensor -> type used instead of Type (row length not a block multiple)
	Heads    int               `json:"head_count"`
	HeadsKV  int               `json:"head_count_kv"`
	HeadDim  int               `json:"head_dim"`
	Vocab    int               `json:"vocab"`
	// qwen35moe: the layers of full attention (the others are gated delta
	// nets) and the geometry used.
	AttentionLayers []int        `json:"attention_layers,omitempty"`
	Hybrid          *HybridShape `json:"hybrid,omitempty"`
}

// synthMerges are the tokenizer's merges; each result is a token too.
var synthMerges = [][2]string{{"Ġ", "t"}, {"h", "e"}, {"i", "n"}, {"Ġt", "he"}}

// byteTokens is GPT-2's byte-to-unicode mapping: the printable bytes stand
// for themselves, the others map to code points from 256 on.
func byteTokens() []string {
	var keep [256]bool
	for b := '!'; b <= '~'; b++ {
		keep[b] = true
	}
	for b := 0xA1; b <= 0xAC; b++ {
		keep[b] = true
	}
	for b := 0xAE; b <= 0xFF; b++ {
		keep[b] = true
	}
	out := make([]string, 256)
	n := 0
	for b := range 256 {
		if keep[b] {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// synthTensor is one tensor to generate: gaussian values of std sigma
// around mean, or random valid blocks for types without a quantizer.
type synthTensor struct {
	spec        gguf.TensorSpec
	mean, sigma float64
}

// synthFallback is llama.cpp's replacement type when a row is not a whole
// number of the type's blocks (llama-quant.cpp, the "fallback" switch),
// restricted to the types synth can make.
func synthFallback(t quant.Type, ne0 int64) (quant.Type, error) {
	ti, ok := quant.Info(t)
	if !ok {
		return 0, fmt.Errorf("unknown type %d", t)
	}
	if ne0%int64(ti.BlockElements) == 0 {
		return t, nil
	}
	switch t {
	case quant.IQ3_S, quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S, quant.IQ1_M, quant.Q2_K, quant.Q3_K:
		return quant.IQ4_NL, nil
	case quant.Q6_K:
		return quant.Q8_0, nil
	}
	return 0, fmt.Errorf("row length %d is not a multiple of %s's block of %d", ne0, t, ti.BlockElements)
}

func canSynth(t quant.Type) bool {
	return quant.CanQuantize(t) || t == quant.IQ3_S || t == quant.IQ4_NL
}

// Synth writes a complete synthetic model, streaming: memory does not grow
// with its size, and the bytes depend only on the configuration and seed.
func Synth(ctx context.Context, cfg SynthConfig) (*SynthResult, error) {
	if cfg.Arch != "qwen3moe" && cfg.Arch != "qwen35moe" {
		return nil, fmt.Errorf("synth makes qwen3moe and qwen35moe models, not %q", cfg.Arch)
	}
	if cfg.Layers <= 0 || cfg.Experts <= 0 || cfg.Embd <= 0 || cfg.FF <= 0 {
		return nil, fmt.Errorf("layers, experts, embd and ff must be positive (got %d, %d, %d, %d)", cfg.Layers, cfg.Experts, cfg.Embd, cfg.FF)
	}
	for _, t := range []quant.Type{cfg.Type, cfg.DenseType} {
		if !canSynth(t) {
			return nil, fmt.Errorf("synth cannot make %s tensors (it makes IQ3_S, IQ4_NL and the types it can quantize: %s)", t, quantizableTypes())
		}
	}
	used := cfg.ExpertsUsed
	if used <= 0 {
		used = min(8, cfg.Experts)
	}
	if used > cfg.Experts {
		return nil, fmt.Errorf("%d experts used per token, only %d experts", used, cfg.Experts)
	}
	res := &SynthResult{Out: cfg.Out}
	lay := synthlayout.Layout{Model: cfg.hybridModel()}
	if cfg.Arch == "qwen35moe" {
		hy, err := cfg.Hybrid.Resolve(cfg.Embd, cfg.FF)
		if err != nil {
			return nil, err
		}
		res.Heads, res.HeadsKV, res.HeadDim = hy.Heads, hy.HeadsKV, hy.HeadDim
		res.Hybrid, lay.Hybrid = &hy, hy
		for b := range cfg.Layers {
			if hy.IsAttention(b) {
				res.AttentionLayers = append(res.AttentionLayers, b)
			}
		}
	} else {
		a, err := synthlayout.Attention{}.Resolve(cfg.Embd)
		if err != nil {
			return nil, err
		}
		res.Heads, res.HeadsKV, res.HeadDim = a.Heads, a.HeadsKV, a.HeadDim
		lay.Attention = a
	}
	// Tokenizer: control tokens, the 256 bytes, the merges' results.
	tokens := []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}
	types := []int32{3, 3, 3}
	for _, s := range byteTokens() {
		tokens = append(tokens, s)
		types = append(types, 1)
	}
	var merges []string
	for _, m := range synthMerges {
		merges = append(merges, m[0]+" "+m[1])
		tokens = append(tokens, m[0]+m[1])
		types = append(types, 1)
	}
	res.Vocab = len(tokens)
	lay.Vocab = res.Vocab

	var ts []synthTensor
	res.Fallback = map[string]string{}
	add := func(name string, t quant.Type, mean, sigma float64, dims ...int64) error {
		use, err := synthFallback(t, dims[0])
		if err != nil {
			return fmt.Errorf("tensor %s: %w", name, err)
		}
		if use != t {
			res.Fallback[name] = use.String()
		}
		ts = append(ts, synthTensor{spec: gguf.TensorSpec{Name: name, Type: use, Dims: dims}, mean: mean, sigma: sigma})
		return nil
	}
	if err := lay.Tensors(add); err != nil {
		return nil, err
	}

	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String(cfg.Arch)},
		{Key: "general.name", Value: gguf.String(fmt.Sprintf("synth-%s-%dx%d-%dx%d-%s", cfg.Arch, cfg.Layers, cfg.Experts, cfg.Embd, cfg.FF, cfg.Type))},
		{Key: "general.alignment", Value: gguf.Uint32(32)},
	}
	if ft, ok := llamaFtype[cfg.Type]; ok {
		kv = append(kv, gguf.KV{Key: "general.file_type", Value: gguf.Uint32(ft)})
	}
	kv = append(kv, lay.Metadata(used)...)
	pre := "gpt-2"
	if cfg.Arch == "qwen35moe" {
		pre = "qwen35" // what real Qwen3.5 GGUFs name
	}
	kv = append(kv,
		gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.String("gpt2")},
		gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.String(pre)},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.MustArray(tokens)},
		gguf.KV{Key: "tokenizer.ggml.token_type", Value: gguf.MustArray(types)},
		gguf.KV{Key: "tokenizer.ggml.merges", Value: gguf.MustArray(merges)},
		gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Uint32(0)},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Uint32(0)},
		gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(false)},
	)
	return synthWrite(ctx, cfg, res, kv, ts)
}

// synthWrite writes the tensors ts under the metadata kv, streaming.
func synthWrite(ctx context.Context, cfg SynthConfig, res *SynthResult, kv []gguf.KV, ts []synthTensor) (*SynthResult, error) {
	specs := make([]gguf.TensorSpec, len(ts))
	for i, t := range ts {
		specs[i] = t.spec
	}
	w, err := gguf.Create(cfg.Out, kv, specs)
	if err != nil {
		return nil, err
	}
	// Units of whole rows (~1M weights); each draws from its own stream, so
	// the bytes do not depend on which worker makes them.
	type su struct {
		tensor     int
		row, nrows int64
	}
	var units []su
	var total int64
	for i, t := range ts {
		ne0 := t.spec.Dims[0]
		rows := int64(1)
		for _, d := range t.spec.Dims[1:] {
			rows *= d
		}
		per := max(1, chunkElems/ne0)
		for r := int64(0); r < rows; r += per {
			units = append(units, su{tensor: i, row: r, nrows: min(per, rows-r)})
		}
		res.Weights += ne0 * rows
		total += w.Layout().Sizes[i]
	}
	prog := cfg.Progress.start(total, "synth")
	defer prog.Done()
	scratches := make(chan *scratch, jobsOr(cfg.Jobs))
	for range cap(scratches) {
		scratches <- &scratch{}
	}
	err = ordered(ctx, len(units), cfg.Jobs, func(ctx context.Context, k int) ([]byte, error) {
		un := units[k]
		t := ts[un.tensor]
		ne0 := t.spec.Dims[0]
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(un.tensor)<<40|uint64(un.row)))
		n := ne0 * un.nrows
		size, _ := quant.RowBytes(t.spec.Type, n)
		out := make([]byte, size)
		switch t.spec.Type {
		case quant.IQ3_S:
			randomIQ3S(rng, out, t.sigma)
		case quant.IQ4_NL:
			randomIQ4NL(rng, out, t.sigma)
		default:
			s := <-scratches
			defer func() { scratches <- s }()
			x, _ := s.floats(int(n))
			for i := range x {
				x[i] = float32(t.mean + t.sigma*rng.NormFloat64())
			}
			if err := quantize(t.spec.Type, x, out, nil); err != nil {
				return nil, err
			}
		}
		return out, nil
	}, func(k int, b []byte) error {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("%s: %w", cfg.Out, err)
		}
		prog.Add(int64(len(b)))
		return nil
	})
	if err != nil {
		w.Abort()
		return nil, interrupted(err, "synth")
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	res.Bytes = w.Layout().FileSize
	res.Tensors = len(ts)
	if len(res.Fallback) == 0 {
		res.Fallback = nil
	}
	return res, nil
}

// iq3sGridMeanSquare is the mean square of the IQ3_S grid's values.
func iq3sGridMeanSquare() float64 {
	var s float64
	g := quant.IQ3SGrid()
	for _, v := range g {
		for k := range 4 {
			c := float64(v >> (8 * k) & 0xff)
			s += c * c
		}
	}
	return s / float64(4*len(g))
}

// iq4nlMeanSquare is the mean square of IQ4_NL's codebook, read by decoding
// a block with d = 1 whose nibbles are 0..15.
func iq4nlMeanSquare() float64 {
	blk := make([]byte, 18)
	binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(1))
	for j := range 16 {
		blk[2+j] = byte(j | j<<4)
	}
	y := make([]float32, 32)
	if err := quant.Dequantize(quant.IQ4_NL, blk, y); err != nil {
		panic(err) // a fixed, valid block
	}
	var s float64
	for _, v := range y {
		s += float64(v) * float64(v)
	}
	return s / 32
}

// randomIQ3S fills whole IQ3_S blocks with random grid indices, signs and
// scales, and a positive fp16 d chosen so that the values have about the
// standard deviation sigma: E[(1+2s)^2] = 331/3 for s uniform in 0..15.
func randomIQ3S(r *rand.Rand, out []byte, sigma float64) {
	d0 := sigma / math.Sqrt(331.0/3*iq3sGridMeanSquare())
	for b := 0; b+110 <= len(out); b += 110 {
		blk := out[b : b+110]
		d := d0 * (0.75 + 0.5*r.Float64())
		binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(float32(d)))
		fillRandom(r, blk[2:])
	}
}

// randomIQ4NL fills IQ4_NL blocks with random 4-bit indices and a d that
// gives values of about sigma.
func randomIQ4NL(r *rand.Rand, out []byte, sigma float64) {
	d0 := sigma / math.Sqrt(iq4nlMeanSquare())
	for b := 0; b+18 <= len(out); b += 18 {
		blk := out[b : b+18]
		d := d0 * (0.75 + 0.5*r.Float64())
		binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(float32(d)))
		fillRandom(r, blk[2:])
	}
}

func fillRandom(r *rand.Rand, b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, r.Uint64())
		b = b[8:]
	}
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

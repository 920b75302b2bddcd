package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/hybridshape"
	"github.com/stratactl/stratactl/quant"
)

// synthShapeFlags are the synthetic pack's shape, as bench decode and bench
// prefill take it.
type synthShapeFlags struct {
	arch                       string
	attnInterval               int
	layers, embd, heads, kv    int
	headDim, experts, used, ff int
	vocab                      int
	denseType, expertType      string
	seed                       uint64
}

// add declares the flags, with layers the default of --layers.
func (f *synthShapeFlags) add(fl *pflag.FlagSet, layers int) {
	fl.StringVar(&f.arch, "arch", "qwen3moe", "architecture of the synthetic pack: "+strings.Join(engine.SynthArchitectures, ", "))
	cli.IntVar(fl, &f.attnInterval, "attn-interval", 4, 1, maxLayers, "qwen35moe: every this many layers one is full attention")
	cli.IntVar(fl, &f.layers, "layers", layers, 1, maxLayers, "MoE layers")
	cli.IntVar(fl, &f.embd, "embd", 2560, 1, maxWidth, "hidden size")
	cli.IntVar(fl, &f.heads, "heads", 32, 1, maxHeads, "attention heads")
	cli.IntVar(fl, &f.kv, "heads-kv", 4, 1, maxHeads, "key/value heads")
	cli.IntVar(fl, &f.headDim, "head-dim", 128, 1, maxWidth, "head dimension")
	cli.IntVar(fl, &f.experts, "experts", 64, 1, maxExperts, "experts per layer")
	cli.IntVar(fl, &f.used, "used", 8, 1, maxExperts, "experts per token")
	cli.IntVar(fl, &f.ff, "ff", 640, 1, maxWidth, "expert feed-forward size")
	cli.IntVar(fl, &f.vocab, "vocab", 32768, 1, maxVocab, "vocabulary")
	fl.StringVar(&f.denseType, "dense-type", "q8_0", "type of the dense matrices")
	fl.StringVar(&f.expertType, "expert-type", "q2_0", "type of the experts")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the weights and prompt")
}

// spec is the pack the flags describe; changed reports the flags given.
func (f *synthShapeFlags) spec(changed func(string) bool) (engine.SynthSpec, error) {
	dt, err := quant.ParseType(f.denseType)
	if err != nil {
		return engine.SynthSpec{}, err
	}
	et, err := quant.ParseType(f.expertType)
	if err != nil {
		return engine.SynthSpec{}, err
	}
	if f.used > f.experts {
		return engine.SynthSpec{}, fmt.Errorf("--used %d: more experts per token than the %d --experts", f.used, f.experts)
	}
	sp := engine.SynthSpec{Layers: f.layers, Embd: f.embd, Heads: f.heads, HeadsKV: f.kv, HeadDim: f.headDim,
		Experts: f.experts, ExpertsUsed: f.used, ExpertFF: f.ff, Vocab: f.vocab, DenseType: dt, ExpertType: et, Seed: f.seed}
	sp.Arch = f.arch
	if f.arch == "qwen35moe" {
		// synth's geometry from n_embd, overridden by the flags given.
		h := hybridshape.Shape{AttnInterval: f.attnInterval}
		if changed("heads") {
			h.Heads = f.heads
		}
		if changed("heads-kv") {
			h.HeadsKV = f.kv
		}
		if changed("head-dim") {
			h.HeadDim = f.headDim
		}
		sp.Hybrid = &h
	}
	return sp, nil
}

// describe is the one-line summary of the pack's shape.
func describeSynth(sp engine.SynthSpec) string {
	return fmt.Sprintf("synthetic %s pack: %d layers, embd %d, %d experts (%d used) of ff %d, %s experts, %s dense, vocab %d",
		sp.Arch, sp.Layers, sp.Embd, sp.Experts, sp.ExpertsUsed, sp.ExpertFF, sp.ExpertType, sp.DenseType, sp.Vocab)
}

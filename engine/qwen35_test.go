package engine

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"

	"github.com/stratactl/stratactl/internal/testutil"
)

// tiny35 is a file of the tiny qwen35moe fixture.
func tiny35(t testing.TB, elem ...string) string {
	t.Helper()
	return testutil.Path(t, append([]string{"models", "tiny-qwen35moe"}, elem...)...)
}

func openQwen35(t testing.TB) *Model {
	t.Helper()
	m, err := Open(tiny35(t, "model-bf16.gguf"), Options{Mode: Exact})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// relL2 is |got - want| / |want|.
func relL2(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i] - want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num / den)
}

func TestQwen35EvalRefs(t *testing.T) {
	m := openQwen35(t)
	c := m.Config
	sc := c.SSM
	if c.Arch != "qwen35moe" || c.Layers != 4 || c.Embd != 256 || c.Heads != 4 || c.HeadsKV != 2 || c.HeadDim != 64 || c.RopeDims != 16 ||
		c.Experts != 64 || c.ExpertsUsed != 6 || c.ExpertFF != 64 || c.SharedFF != 256 || c.Vocab != 4096 || !c.NormTopK ||
		sc.ConvKernel != 4 || sc.KeyHeads != 2 || sc.KeyDim != 32 || sc.ValueHeads != 4 || sc.ValueDim != 32 || sc.GroupedHeads {
		t.Fatalf("config %+v", c)
	}
	for l, rec := range c.Recurrent {
		if rec != (l != 3) {
			t.Fatalf("layer types %v, want delta net, delta net, delta net, attention", c.Recurrent)
		}
	}
	tokens := readI32(t, tiny35(t, "refs", "eval_tokens.i32.bin"))
	refLogits := testutil.ReadF32(t, tiny35(t, "refs", "eval_logits.f32.bin"))
	refHidden := testutil.ReadF32(t, tiny35(t, "refs", "eval_hidden.f32.bin"))
	refMixer := testutil.ReadF32(t, tiny35(t, "refs", "eval_mixer_out.f32.bin"))
	refIDs := readI32(t, tiny35(t, "refs", "eval_router_ids.i32.bin"))
	refW := testutil.ReadF32(t, tiny35(t, "refs", "eval_router_weights.f32.bin"))
	refGate := testutil.ReadF32(t, tiny35(t, "refs", "eval_shexp_gate.f32.bin"))
	const S, P, V, D, L, K, E = 4, 64, 4096, 256, 4, 6, 64
	if len(tokens) != S*P || len(refLogits) != S*P*V || len(refHidden) != S*L*P*D || len(refMixer) != S*L*P*D || len(refIDs) != L*S*P*K || len(refGate) != L*S*P {
		t.Fatal("reference sizes")
	}
	var worstHidden, worstMixer, worstGate float64
	for seq := 0; seq < S; seq++ {
		rec := &recorder{}
		s := m.NewSession()
		s.Observer = rec
		s.MaxBatch = 24 // several batches: the recurrent states and the KV cache join them
		logits, err := s.Forward(tokens[seq*P:(seq+1)*P], true)
		if err != nil {
			t.Fatal(err)
		}
		diff := compareLogits(t, "eval logits", logits, refLogits[seq*P*V:(seq+1)*P*V], V)
		t.Logf("seq %d: max |logit diff| %.3g", seq, diff)
		for l := 0; l < L; l++ {
			for p := 0; p < P; p++ {
				ref := ((seq*L+l)*P + p) * D
				if rel := relL2(rec.hidden[l][p*D:(p+1)*D], refHidden[ref:ref+D]); !(rel <= 1e-4) {
					t.Errorf("seq %d layer %d pos %d: hidden rel L2 error %.3g", seq, l, p, rel)
				} else {
					worstHidden = math.Max(worstHidden, rel)
				}
				if rel := relL2(rec.mixer[l][p*D:(p+1)*D], refMixer[ref:ref+D]); !(rel <= 1e-4) {
					t.Errorf("seq %d layer %d pos %d: mixer output rel L2 error %.3g", seq, l, p, rel)
				} else {
					worstMixer = math.Max(worstMixer, rel)
				}
				g := (l*S+seq)*P + p
				if d := math.Abs(float64(rec.shared[l][p] - refGate[g])); !(d <= 1e-5) {
					t.Errorf("seq %d layer %d pos %d: shared-expert gate %g, want %g", seq, l, p, rec.shared[l][p], refGate[g])
				} else {
					worstGate = math.Max(worstGate, d)
				}
				base := g * K
				checkRouting(t, fmt.Sprintf("seq %d layer %d pos %d", seq, l, p), rec.ids[l][p*K:(p+1)*K], refIDs[base:base+K],
					rec.probs[l][p*E:(p+1)*E], rec.weights[l][p*K:(p+1)*K], refW[base:base+K])
			}
		}
	}
	t.Logf("worst hidden rel L2 %.3g, mixer rel L2 %.3g, shared gate |diff| %.3g", worstHidden, worstMixer, worstGate)
}

func TestQwen35Greedy(t *testing.T) {
	m := openQwen35(t)
	ref := readGreedy(t, tiny35(t, "refs", "greedy.json"))
	ids, logits := greedy(t, m, ref.PromptIDs, len(ref.GeneratedIDs))
	for i := range ids {
		if ids[i] != ref.GeneratedIDs[i] {
			t.Fatalf("step %d: token %d, want %d (got %v)", i, ids[i], ref.GeneratedIDs[i], ids)
		}
	}
	d := compareLogits(t, "greedy logits", logits, testutil.ReadF32(t, tiny35(t, "refs", "greedy_logits.f32.bin")), m.Config.Vocab)
	t.Logf("max |logit diff| %.3g", d)
}

// TestQwen35LongWindow: a 256-token window crossing the delta rule's
// 64-token chunk boundaries of the reference, run batched (batches of 100,
// so batch edges fall elsewhere) and token by token: both match
// refs/long_logits, and each other bit for bit at every position.
func TestQwen35LongWindow(t *testing.T) {
	m := openQwen35(t)
	V := m.Config.Vocab
	tokens := readI32(t, tiny35(t, "refs", "ppl_tokens.i32.bin"))[:256]
	ref := testutil.ReadF32(t, tiny35(t, "refs", "long_logits.f32.bin"))
	positions := []int{63, 64, 65, 127, 128, 191, 192, 255}
	s := m.NewSession()
	s.MaxBatch = 100
	all, err := s.Forward(tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	d := m.NewSession()
	var picked, pickedStep []float32
	k := 0
	for i, id := range tokens {
		got, err := d.Forward([]int32{id}, false)
		if err != nil {
			t.Fatal(err)
		}
		want := all[i*V : (i+1)*V]
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("position %d logit %d: token by token %g, batched %g", i, j, got[j], want[j])
			}
		}
		if k < len(positions) && positions[k] == i {
			picked = append(picked, want...)
			pickedStep = append(pickedStep, got...)
			k++
		}
	}
	diff := compareLogits(t, "long logits (batched)", picked, ref, V)
	compareLogits(t, "long logits (token by token)", pickedStep, ref, V)
	t.Logf("max |logit diff| %.3g", diff)
}

// TestQwen35Perplexity: the held-out NLL over refs/ppl_tokens (windows of
// 256, each from position 0, positions 1..255 scored) gives the perplexity
// of refs/ppl_nll to 1e-4 relative, and every token's NLL within 1e-3. The
// suite scores the first 8 windows; STRATACTL_LONG=1 all 64 (about 30 s).
func TestQwen35Perplexity(t *testing.T) {
	m := openQwen35(t)
	V := m.Config.Vocab
	tokens := readI32(t, tiny35(t, "refs", "ppl_tokens.i32.bin"))
	refNLL := testutil.ReadF32(t, tiny35(t, "refs", "ppl_nll.f32.bin"))
	const N = 256
	W := 64
	if len(tokens) != W*N || len(refNLL) != W*(N-1) {
		t.Fatal("reference sizes")
	}
	if os.Getenv("STRATACTL_LONG") == "" {
		W = 4
	}
	var sum, refSum, worst float64
	s := m.NewSession()
	for w := 0; w < W; w++ {
		win := tokens[w*N : (w+1)*N]
		s.Reset()
		logits, err := s.Forward(win, true)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < N-1; j++ {
			got, want := -logSoftmax(logits[j*V : (j+1)*V])[win[j+1]], float64(refNLL[w*(N-1)+j])
			if d := math.Abs(got - want); !(d <= 1e-3) {
				t.Fatalf("window %d token %d: NLL %.6f, reference %.6f", w, j+1, got, want)
			} else {
				worst = math.Max(worst, d)
			}
			sum += got
			refSum += want
		}
	}
	n := float64(W * (N - 1))
	ppl, refPPL := math.Exp(sum/n), math.Exp(refSum/n)
	if rel := math.Abs(ppl-refPPL) / refPPL; !(rel <= 1e-4) {
		t.Fatalf("perplexity %.6f, reference %.6f (rel %.3g)", ppl, refPPL, rel)
	}
	t.Logf("%d windows: perplexity %.6f, reference %.6f; worst token |NLL diff| %.3g", W, ppl, refPPL, worst)
}

// TestQwen35MTPBlockNotRun: the fixture with an MTP block appended (blk.4:
// a copy of attention block 3 plus the nextn tensors; block_count 5,
// nextn_predict_layers 1) runs the 4 trunk layers only: the same logit
// bits as the fixture.
func TestQwen35MTPBlockNotRun(t *testing.T) {
	src, err := gguf.OpenMapped(tiny35(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var kv []gguf.KV
	for _, x := range src.KV {
		if x.Key == "qwen35moe.block_count" {
			x.Value = gguf.Uint32(5)
		}
		kv = append(kv, x)
	}
	kv = append(kv, gguf.KV{Key: "qwen35moe.nextn_predict_layers", Value: gguf.Uint32(1)})
	specs := src.Specs()
	data := map[string][]byte{}
	for _, sp := range src.Specs() {
		ti, _ := src.Tensor(sp.Name)
		data[sp.Name], _ = src.Bytes(ti)
		if blk, rest, ok := gguf.SplitBlockName(sp.Name); ok && blk == 3 {
			name := "blk.4." + rest
			specs = append(specs, gguf.TensorSpec{Name: name, Type: sp.Type, Dims: sp.Dims})
			data[name] = data[sp.Name]
		}
	}
	embd := int64(256)
	f32 := func(n int64) []byte { return make([]byte, 4*n) }
	for _, x := range []struct {
		name string
		dims []int64
	}{{"blk.4.nextn.eh_proj.weight", []int64{2 * embd, embd}}, {"blk.4.nextn.enorm.weight", []int64{embd}}, {"blk.4.nextn.hnorm.weight", []int64{embd}}} {
		n := x.dims[0]
		if len(x.dims) > 1 {
			n *= x.dims[1]
		}
		specs = append(specs, gguf.TensorSpec{Name: x.name, Type: quant.F32, Dims: x.dims})
		data[x.name] = f32(n)
	}
	mtp, err := Open(writeGGUF(t, kv, specs, data), Options{Mode: Exact})
	if err != nil {
		t.Fatal(err)
	}
	defer mtp.Close()
	if mtp.Config.Layers != 4 || mtp.Config.MTPLayers != 1 || len(mtp.Layers) != 4 {
		t.Fatalf("config %+v, %d layers loaded", mtp.Config, len(mtp.Layers))
	}
	sameLogitBits(t, openQwen35(t), mtp, readI32(t, tiny35(t, "refs", "eval_tokens.i32.bin"))[:32], "with an MTP block")
}

// TestQwen35PerLayerKeys: the layer types given as
// attention.recurrent_layers (a bool per block) and head_count_kv as a
// per-layer array (0 on delta-net layers), in place of
// full_attention_interval and a scalar, give the same model; an array of
// the wrong length is refused, naming the key.
func TestQwen35PerLayerKeys(t *testing.T) {
	src, err := gguf.OpenMapped(tiny35(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	data := map[string][]byte{}
	for _, sp := range src.Specs() {
		ti, _ := src.Tensor(sp.Name)
		data[sp.Name], _ = src.Bytes(ti)
	}
	write := func(rec []bool) string {
		var kv []gguf.KV
		for _, x := range src.KV {
			switch x.Key {
			case "qwen35moe.full_attention_interval":
				continue
			case "qwen35moe.attention.head_count_kv":
				x.Value = gguf.MustArray([]int32{0, 0, 0, 2})
			}
			kv = append(kv, x)
		}
		kv = append(kv, gguf.KV{Key: "qwen35moe.attention.recurrent_layers", Value: gguf.MustArray(rec)})
		return writeGGUF(t, kv, src.Specs(), data)
	}
	m, err := Open(write([]bool{true, true, true, false}), Options{Mode: Exact})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sameLogitBits(t, openQwen35(t), m, readI32(t, tiny35(t, "refs", "eval_tokens.i32.bin"))[:16], "per-layer keys")
	if _, err := Open(write([]bool{true, true, false}), Options{}); err == nil || !strings.Contains(err.Error(), "recurrent_layers") {
		t.Fatalf("error %v, want one naming attention.recurrent_layers", err)
	}
}

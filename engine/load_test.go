package engine

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
)

// rewrite copies the tiny model with its metadata passed through editKV and
// the tensor named drop left out.
func rewrite(t *testing.T, editKV func([]gguf.KV) []gguf.KV, drop string) string {
	t.Helper()
	src, err := gguf.OpenMapped(testutil.TinyModel(t, "model-iq3s.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	kv := editKV(append([]gguf.KV(nil), src.KV...))
	var specs []gguf.TensorSpec
	for _, s := range src.Specs() {
		if s.Name != drop {
			specs = append(specs, s)
		}
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	w, err := gguf.Create(path, kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		ti, _ := src.Tensor(s.Name)
		b, _ := src.Bytes(ti)
		if err := w.WriteTensor(s.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRefusesMissingTensor(t *testing.T) {
	for _, name := range []string{"blk.2.attn_k_norm.weight", "blk.3.ffn_down_exps.weight", "output.weight"} {
		path := rewrite(t, func(kv []gguf.KV) []gguf.KV { return kv }, name)
		_, err := Open(path, Options{})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("dropping %s: error %v, want one naming it", name, err)
		}
	}
}

func TestRefusesUnknownArchitecture(t *testing.T) {
	path := rewrite(t, func(kv []gguf.KV) []gguf.KV {
		for i := range kv {
			if kv[i].Key == "general.architecture" {
				kv[i].Value = gguf.String("mamba")
			}
		}
		return kv
	}, "")
	_, err := Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "mamba") {
		t.Fatalf("error %v, want one naming the architecture", err)
	}
	for _, a := range []string{"qwen3moe", "qwen35moe", "qwen3next"} {
		if !strings.Contains(err.Error(), a) {
			t.Fatalf("error %v, want one listing the supported %s", err, a)
		}
	}
	path = rewrite(t, func(kv []gguf.KV) []gguf.KV {
		var out []gguf.KV
		for _, x := range kv {
			if x.Key != "qwen3moe.expert_used_count" {
				out = append(out, x)
			}
		}
		return out
	}, "")
	_, err = Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "expert_used_count") {
		t.Fatalf("error %v, want one naming the key", err)
	}
}

func TestForwardRejectsBadTokens(t *testing.T) {
	m := openModel(t, "model-iq4nl.gguf")
	if _, err := m.NewSession().Forward([]int32{1, 5000}, false); err == nil {
		t.Fatal("token outside the vocabulary accepted")
	}
	if _, err := m.NewSession().Forward(nil, false); err == nil {
		t.Fatal("empty input accepted")
	}
}

// TestNaNWeightsAreReported: a NaN in a layer's weights stops the forward
// pass with an error naming the layer, not garbage tokens.
func TestNaNWeightsAreReported(t *testing.T) {
	src, err := gguf.OpenMapped(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ti, _ := src.Tensor("blk.1.attn_v.weight")
	b, _ := src.Bytes(ti)
	bad := append([]byte(nil), b...)
	for i := 0; i < len(bad); i += 2 {
		bad[i], bad[i+1] = 0xc0, 0x7f // BF16 NaN
	}
	path := filepath.Join(t.TempDir(), "nan.gguf")
	w, err := gguf.Create(path, src.KV, src.Specs())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range src.Specs() {
		ti, _ := src.Tensor(s.Name)
		data, _ := src.Bytes(ti)
		if s.Name == "blk.1.attn_v.weight" {
			data = bad
		}
		if err := w.WriteTensor(s.Name, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	m, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.NewSession().Forward([]int32{726, 2611, 10}, false)
	if err == nil || !strings.Contains(err.Error(), "layer 1") {
		t.Fatalf("error %v, want one naming layer 1", err)
	}
}

// TestFailedForwardKeepsSession: after a failed batch the session goes on
// from its last good position with the same results.
func TestFailedForwardKeepsSession(t *testing.T) {
	m := openModel(t, "model-iq4nl.gguf")
	failedForwardKeepsSession(t, m, readI32(t, testutil.TinyModel(t, "refs", "eval_tokens.i32.bin"))[:12])
}

// TestFailedForwardKeepsSessionQwen35: the same with recurrent state: the
// delta nets of layers 0 and 1 ran on the failed batch before layer 2
// failed, and their states must not have moved.
func TestFailedForwardKeepsSessionQwen35(t *testing.T) {
	failedForwardKeepsSession(t, openQwen35(t), readI32(t, tiny35(t, "refs", "eval_tokens.i32.bin"))[:12])
}

func failedForwardKeepsSession(t *testing.T, m *Model, tokens []int32) {
	t.Helper()
	want, err := m.NewSession().Forward(tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSession()
	if _, err := s.Forward(tokens[:6], false); err != nil {
		t.Fatal(err)
	}
	store := m.Experts
	m.Experts = failingStore{store}
	if _, err := s.Forward(tokens[6:], false); err == nil {
		t.Fatal("a failing expert store gave no error")
	}
	m.Experts = store
	if s.Pos != 6 {
		t.Fatalf("position %d after a failed batch, want 6", s.Pos)
	}
	got, err := s.Forward(tokens[6:], true)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[6*V+i]) {
			t.Fatalf("logit %d differs after recovery", i)
		}
	}
}

// failingStore fails every Get of layer 2.
type failingStore struct{ ExpertStore }

func (f failingStore) Get(layer, e int) (*Expert, error) {
	if layer == 2 {
		return nil, errors.New("injected read error")
	}
	return f.ExpertStore.Get(layer, e)
}

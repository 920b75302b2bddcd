package convert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// halfKeep keeps 16 of 32 experts per layer, chosen at random, with a
// ranking and statistics so that every part of STRP travels through pack.
func halfKeep(t testing.TB, path string, blocks []uint32, nExpert, nKeep int) *strata.Keep {
	r := rand.New(rand.NewPCG(7, 7))
	k := &strata.Keep{NExpert: uint32(nExpert), Layers: blocks, Stats: &strata.Stats{Fields: []string{"count"}}}
	for range blocks {
		ids := r.Perm(nExpert)[:nKeep]
		slices.Sort(ids)
		var keep []uint32
		for _, id := range ids {
			keep = append(keep, uint32(id))
		}
		k.Keep = append(k.Keep, keep)
		var rank []uint32
		for _, i := range r.Perm(nKeep)[:4] {
			rank = append(rank, uint32(i))
		}
		k.Rank = append(k.Rank, rank)
		for range nExpert {
			k.Stats.Values = append(k.Stats.Values, float64(r.IntN(1000)))
		}
	}
	if err := strata.WriteKeep(path, k); err != nil {
		t.Fatal(err)
	}
	return k
}

func sha(t testing.TB, path string) string {
	h := sha256.Sum256(readAll(t, path))
	return hex.EncodeToString(h[:])
}

func TestPackVerifyTiny(t *testing.T) {
	variants := []string{"model-bf16.gguf", "model-iq3s.gguf", "model-iq4nl.gguf", "model-mixed.gguf"}
	dir := t.TempDir()
	keepPath := filepath.Join(dir, "keep16.strp")
	keep := halfKeep(t, keepPath, []uint32{0, 1, 2, 3}, 32, 16)
	for _, v := range variants {
		for _, withKeep := range []bool{false, true} {
			name := fmt.Sprintf("%s-keep%v", strings.TrimSuffix(v, ".gguf"), withKeep)
			t.Run(name, func(t *testing.T) {
				in := testutil.TinyModel(t, v)
				out := filepath.Join(dir, name)
				cfg := PackConfig{In: in, OutDir: out, Type: quant.Q2_0, Jobs: 2, Version: "test", Args: []string{"stratactl", "pack"}}
				if withKeep {
					cfg.Keep = keepPath
				}
				man, err := Pack(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				checkPackLayout(t, out, in, man, withKeep, keep)
				rep, err := Verify(context.Background(), VerifyConfig{Path: out, Source: in, Jobs: 2})
				if err != nil {
					t.Fatal(err)
				}
				if !rep.OK {
					t.Fatalf("verify --source failed: %v", rep.Failures)
				}
				if len(rep.Layers) != 4 || rep.RelMSE <= 0 || rep.RelMSE > 0.5 {
					t.Fatalf("relative MSE per layer %v, overall %v", rep.Layers, rep.RelMSE)
				}
			})
		}
	}
}

// checkPackLayout checks a pack against independent computations: file
// sizes, alignment, hashes, keys, kept router rows.
func checkPackLayout(t *testing.T, out, in string, man *strata.Manifest, withKeep bool, keep *strata.Keep) {
	t.Helper()
	x, err := strata.OpenExperts(filepath.Join(out, strata.ExpertsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	st, _ := os.Stat(filepath.Join(out, strata.ExpertsFile))
	if uint64(st.Size()) != x.FileBytes {
		t.Fatalf("model.experts has %d bytes, header says %d", st.Size(), x.FileBytes)
	}
	// 256 × 256 Q2_0 parts: 18432 bytes each, 64 KiB slots (docs/FORMATS.md).
	if x.SlotBytes != 65536 || x.Parts[0].Bytes != 18432 {
		t.Fatalf("slot %d part %d", x.SlotBytes, x.Parts[0].Bytes)
	}
	for i, e := range x.Table {
		if e.Offset%16384 != 0 {
			t.Fatalf("slot %d at %d", i, e.Offset)
		}
	}
	for _, o := range man.Outputs {
		if got := sha(t, filepath.Join(out, o.Path)); got != o.SHA256 {
			t.Fatalf("%s: sha256 %s, manifest %s", o.Path, got, o.SHA256)
		}
	}
	if man.Inputs[0].SHA256 != sha(t, in) {
		t.Fatal("manifest's input hash is wrong")
	}
	var raw map[string]any
	if err := json.Unmarshal(readAll(t, filepath.Join(out, strata.ManifestFile)), &raw); err != nil {
		t.Fatal(err)
	}
	mf, err := gguf.Open(filepath.Join(out, strata.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	src, _ := gguf.Open(in)
	defer src.Close()
	nKeep := uint32(32)
	if withKeep {
		nKeep = 16
	}
	if n, _ := mf.Uint32("qwen3moe.expert_count"); n != nKeep {
		t.Fatalf("expert_count %d, want %d", n, nKeep)
	}
	if n, _ := mf.Uint32(strata.KeySourceNExpert); n != 32 {
		t.Fatalf("source n_expert %d", n)
	}
	if n, _ := mf.Uint64(strata.KeyExpertsBytes); n != x.FileBytes {
		t.Fatalf("experts bytes key %d", n)
	}
	got, _ := strata.ReadKeep(filepath.Join(out, strata.KeepFile))
	if withKeep {
		if !slices.Equal(got.Keep[2], keep.Keep[2]) || got.NRank() != 4 || got.Stats == nil {
			t.Fatal("keep.strp is not the keep map given")
		}
		// Router row i of the pack is source row keep[i].
		rt, _ := mf.Tensor("blk.2.ffn_gate_inp.weight")
		srt, _ := src.Tensor("blk.2.ffn_gate_inp.weight")
		rb, _ := mf.ReadTensor(rt)
		sb, _ := src.ReadTensor(srt)
		row := int(srt.RowBytes())
		for i, id := range keep.Keep[2] {
			if !bytes.Equal(rb[i*row:(i+1)*row], sb[int(id)*row:int(id+1)*row]) {
				t.Fatalf("router row %d is not source row %d", i, id)
			}
		}
	} else if !got.IsIdentity() || got.NRank() != 0 {
		t.Fatal("keep.strp without --keep is not the identity map")
	}
}

func TestPackRefusesExistingAndCancel(t *testing.T) {
	in := testutil.TinyModel(t, "model-iq3s.gguf")
	dir := t.TempDir()
	out := filepath.Join(dir, "pack")
	os.Mkdir(out, 0o755)
	if _, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: in, OutDir: out}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("existing output: %v", err)
	}
	os.Remove(out)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Pack(ctx, PackConfig{Type: quant.Q2_0, In: in, OutDir: out}); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cancelled pack: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("cancelled pack left %v", ents)
	}
	// A keep map for another model is refused.
	kp := filepath.Join(dir, "k.strp")
	halfKeep(t, kp, []uint32{0, 1, 2}, 32, 16)
	if _, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: in, OutDir: out, Keep: kp}); err == nil || !strings.Contains(err.Error(), "MoE layers") {
		t.Fatalf("mismatched keep map: %v", err)
	}
}

// flipRegion names where a byte of an experts file lies.
func flipRegion(h *strata.Header, off uint64) (region string, slot int) {
	switch {
	case off < strata.HeaderSize:
		return "header", -1
	case off < h.TableOffset+uint64(h.NSlot())*strata.TableEntrySize:
		return "table", int((off - h.TableOffset) / strata.TableEntrySize)
	case off < h.DataOffset:
		return "table padding", -1
	}
	slot = int((off - h.DataOffset) / h.SlotBytes)
	if (off-h.DataOffset)%h.SlotBytes < h.PayloadBytes() {
		return "payload", slot
	}
	return "slot padding", slot
}

// copyPack copies a pack folder.
func copyPack(t testing.TB, from, to string) {
	os.Mkdir(to, 0o755)
	for _, n := range strata.PackFiles {
		if err := os.WriteFile(filepath.Join(to, n), readAll(t, filepath.Join(from, n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// located reports whether some finding of rep puts the flipped byte at off
// in the right place: the byte itself, or for a payload without the source,
// the slot it lies in.
func located(rep *VerifyReport, h *strata.Header, off uint64, withSource bool) bool {
	region, slot := flipRegion(h, off)
	for _, f := range rep.Failures {
		if !strings.HasSuffix(f.File, strata.ExpertsFile) {
			continue
		}
		switch region {
		case "header":
			if f.Offset >= 0 && f.Offset < strata.HeaderSize {
				return true
			}
		case "table":
			entry := h.TableOffset + uint64(slot)*strata.TableEntrySize
			if uint64(f.Offset) >= entry && uint64(f.Offset) < entry+strata.TableEntrySize {
				return true
			}
			// A damaged CRC field shows as a mismatch of the slot it describes.
			if !withSource && f.Expert == slot%int(h.NExpert) && f.Layer == int(h.Layers[slot/int(h.NExpert)]) {
				return true
			}
		case "table padding", "slot padding":
			if uint64(f.Offset) == off {
				return true
			}
		case "payload":
			if f.Expert != slot%int(h.NExpert) || f.Layer != int(h.Layers[slot/int(h.NExpert)]) {
				continue
			}
			if !withSource {
				return true
			}
			p := (off - h.DataOffset) % h.SlotBytes
			part := 0
			for part < strata.NumParts-1 && p >= h.Parts[part+1].Offset {
				part++
			}
			if uint64(f.Offset) == off && f.Part == strata.PartNames[part] {
				return true
			}
		}
	}
	return false
}

func TestVerifyLocatesFlips(t *testing.T) {
	in := testutil.TinyModel(t, "model-iq4nl.gguf")
	dir := t.TempDir()
	keepPath := filepath.Join(dir, "keep.strp")
	halfKeep(t, keepPath, []uint32{0, 1, 2, 3}, 32, 16)
	good := filepath.Join(dir, "good")
	if _, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: in, OutDir: good, Keep: keepPath, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	x, err := strata.OpenExperts(filepath.Join(good, strata.ExpertsFile))
	if err != nil {
		t.Fatal(err)
	}
	h := x.Header
	x.Close()
	orig := readAll(t, filepath.Join(good, strata.ExpertsFile))
	r := rand.New(rand.NewPCG(11, 11))
	type pos struct {
		off    uint64
		source bool
	}
	var ps []pos
	for _, o := range []uint64{0, 5, 9, 13, 17, 21, 30, 33, 41, 50, 60, 100, 160, 200, 4000, 4092, 4095,
		h.TableOffset, h.TableOffset + 8, h.TableOffset + 13, h.TableOffset + 16*7 + 3, h.DataOffset - 1,
		h.DataOffset, h.DataOffset + h.PayloadBytes() - 1, h.DataOffset + h.PayloadBytes(), h.FileBytes - 1} {
		ps = append(ps, pos{o, false})
	}
	for range 10 {
		ps = append(ps, pos{h.DataOffset + r.Uint64N(h.FileBytes-h.DataOffset), false})
	}
	// With the source, payload flips are located to the byte and part.
	for _, p := range []uint64{0, h.Parts[1].Offset + 7, h.Parts[2].Offset + 1000, h.PayloadBytes() - 1} {
		ps = append(ps, pos{h.DataOffset + 5*h.SlotBytes + p, true})
	}
	ps = append(ps, pos{h.TableOffset + 16*9 + 8, true})
	bad := filepath.Join(dir, "bad")
	copyPack(t, good, bad)
	for _, p := range ps {
		b := append([]byte(nil), orig...)
		b[p.off] ^= 0x5a
		if err := os.WriteFile(filepath.Join(bad, strata.ExpertsFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := VerifyConfig{Path: bad, Jobs: 2}
		if p.source {
			cfg.Source = in
		}
		rep, err := Verify(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		region, _ := flipRegion(&h, p.off)
		if rep.OK {
			t.Fatalf("flip at byte %d (%s) passed verify", p.off, region)
		}
		if !located(rep, &h, p.off, p.source) {
			t.Fatalf("flip at byte %d (%s, source %v) not located: %v", p.off, region, p.source, rep.Failures)
		}
	}
}

func TestVerifyGGUFAndDamage(t *testing.T) {
	in := testutil.TinyModel(t, "model-bf16.gguf")
	out := filepath.Join(t.TempDir(), "q8.gguf")
	if _, err := Quantize(context.Background(), QuantizeConfig{In: in, Out: out, Type: quant.Q8_0, Tensors: `blk\.[01]\.ffn_(up|down)_exps`}); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), VerifyConfig{Path: out, Source: in})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Tensors) != 51 {
		t.Fatalf("verify of a quantize output: %v %d", rep.Failures, len(rep.Tensors))
	}
	// A flipped byte in a copied tensor, and one in a converted tensor.
	f, _ := gguf.Open(out)
	copied, _ := f.Tensor("blk.2.attn_q.weight")
	conv, _ := f.Tensor("blk.1.ffn_up_exps.weight")
	offs := []int64{f.DataStart(copied) + 1001, f.DataStart(conv) + 34*100 + 1}
	f.Close()
	orig := readAll(t, out)
	for _, off := range offs {
		b := append([]byte(nil), orig...)
		b[off] ^= 0x40
		os.WriteFile(out, b, 0o644)
		rep, err := Verify(context.Background(), VerifyConfig{Path: out, Source: in})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK {
			t.Fatalf("flip at %d passed", off)
		}
		hit := false
		for _, fd := range rep.Failures {
			hit = hit || fd.Offset == off || fd.Offset == off-1 // a Q8_0 flip is located by its tensor's error
			hit = hit || strings.Contains(fd.Msg, "blk.1.ffn_up_exps.weight")
		}
		if !hit {
			t.Fatalf("flip at %d not located: %v", off, rep.Failures)
		}
	}
}

// TestVerifyFlipsExhaustive flips every byte of a small synthetic pack's
// model.experts (one layer, one expert: header, table, table padding, slot
// payload, slot padding; 32 KiB) and checks that verify --source fails and
// locates each one. It runs only with STRATA_VERIFY_EXHAUSTIVE=1, with
// -timeout 0: 32,768 verify runs took 737 s at nice 19 on the shared
// 2-core machine.
func TestVerifyFlipsExhaustive(t *testing.T) {
	if os.Getenv("STRATA_VERIFY_EXHAUSTIVE") == "" {
		t.Skip("set STRATA_VERIFY_EXHAUSTIVE=1 to flip every byte of a pack")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "small.gguf")
	if _, err := Synth(context.Background(), SynthConfig{Out: in, Arch: "qwen3moe", Layers: 1, Experts: 1, Embd: 64, FF: 64, Type: quant.IQ4_NL, DenseType: quant.Q8_0, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if _, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: in, OutDir: good}); err != nil {
		t.Fatal(err)
	}
	x, err := strata.OpenExperts(filepath.Join(good, strata.ExpertsFile))
	if err != nil {
		t.Fatal(err)
	}
	h := x.Header
	x.Close()
	orig := readAll(t, filepath.Join(good, strata.ExpertsFile))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var failed atomic.Int64
	failed.Store(-1)
	for w := range workers {
		bad := filepath.Join(dir, fmt.Sprintf("bad%d", w))
		copyPack(t, good, bad)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := w; off < len(orig) && failed.Load() < 0; off += workers {
				b := append([]byte(nil), orig...)
				b[off] ^= 0x01
				if err := os.WriteFile(filepath.Join(bad, strata.ExpertsFile), b, 0o644); err != nil {
					t.Error(err)
					return
				}
				rep, err := Verify(context.Background(), VerifyConfig{Path: bad, Source: in, Jobs: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if rep.OK || !located(rep, &h, uint64(off), true) {
					region, _ := flipRegion(&h, uint64(off))
					t.Errorf("flip at byte %d (%s) not located: %v", off, region, rep.Failures)
					failed.Store(int64(off))
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d single-byte flips located", len(orig))
}

// TestPackCopiesTargetType packs a model whose experts are already Q2_0:
// the slots must hold the source bytes unchanged.
func TestPackCopiesTargetType(t *testing.T) {
	dir := t.TempDir()
	q2 := filepath.Join(dir, "q2.gguf")
	if _, err := Quantize(context.Background(), QuantizeConfig{In: testutil.TinyModel(t, "model-iq3s.gguf"), Out: q2, Type: quant.Q2_0, Q2: Q2Params{Mode: quant.Q2GGML}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pack")
	man, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: q2, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if man.RelMSE != 0 || man.Layers[0].Parts[0].Action != "copied" {
		t.Fatalf("copy path: %+v", man.Layers[0])
	}
	src, _ := gguf.Open(q2)
	defer src.Close()
	x, _ := strata.OpenExperts(filepath.Join(out, strata.ExpertsFile))
	defer x.Close()
	down, _ := src.Tensor("blk.3.ffn_down_exps.weight")
	off, size, _ := gguf.ExpertSlice(down, 17)
	want := make([]byte, size)
	src.ReadTensorAt(down, want, off)
	pay, err := x.ReadSlot(3, 17, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.PartBytes(pay, 2), want) {
		t.Fatal("slot does not hold the source's Q2_0 bytes")
	}
	rep, err := Verify(context.Background(), VerifyConfig{Path: out, Source: q2})
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %v", err, rep.Failures)
	}
}

func TestPackImatrix(t *testing.T) {
	in := testutil.TinyModel(t, "model-bf16.gguf")
	im := testutil.TinyModel(t, "imatrix.gguf")
	out := filepath.Join(t.TempDir(), "pack")
	man, err := Pack(context.Background(), PackConfig{Type: quant.Q2_0, In: in, OutDir: out, Imatrix: im, Q2: Q2Params{Candidates: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if man.Parameters.Imatrix != im || man.Parameters.Q2Candidates != 4 || len(man.Inputs) != 2 || man.Inputs[1].Role != "imatrix" || man.Inputs[1].SHA256 != sha(t, im) {
		t.Fatalf("manifest: %+v %+v", man.Parameters, man.Inputs)
	}
	rep, err := Verify(context.Background(), VerifyConfig{Path: out, Source: in})
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %v", err, rep.Failures)
	}
}

// TestPackPrunesPerExpertTensors packs a small hand-made MoE with expert
// biases and a routing bias: every tensor indexed by expert keeps the kept
// experts' slices in keep-map order.
func TestPackPrunesPerExpertTensors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bias.gguf")
	const D, F, E = 64, 64, 4
	r := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	names := []string{"blk.0.ffn_gate_inp.weight", "blk.0.exp_probs_b.bias", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_up_exps.bias", "blk.0.ffn_down_exps.weight", "output.weight"}
	dims := [][]int64{{D, E}, {E}, {D, F, E}, {D, F, E}, {F, E}, {F, D, E}, {D, 8}}
	var data [][]float32
	for _, d := range dims {
		n := int64(1)
		for _, x := range d {
			n *= x
		}
		data = append(data, fill(int(n)))
	}
	writeGGUF(t, in, []gguf.KV{{Key: "general.architecture", Value: gguf.String("test")}, {Key: "test.expert_count", Value: gguf.Uint32(E)}, {Key: "test.expert_used_count", Value: gguf.Uint32(2)}}, names, dims, data)
	kp := filepath.Join(dir, "keep.strp")
	if err := strata.WriteKeep(kp, &strata.Keep{NExpert: E, Layers: []uint32{0}, Keep: [][]uint32{{1, 3}}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pack")
	if _, err := Pack(context.Background(), PackConfig{In: in, OutDir: out, Keep: kp, Type: quant.Q8_0}); err != nil {
		t.Fatal(err)
	}
	mf, err := gguf.Open(filepath.Join(out, strata.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	for _, c := range []struct {
		name string
		row  int
	}{{"blk.0.ffn_up_exps.bias", F}, {"blk.0.exp_probs_b.bias", 1}, {"blk.0.ffn_gate_inp.weight", D}} {
		tt, ok := mf.Tensor(c.name)
		if !ok {
			t.Fatalf("%s missing", c.name)
		}
		if tt.Dims[len(tt.Dims)-1] != 2 {
			t.Fatalf("%s: ne %v", c.name, tt.Dims)
		}
		b, _ := mf.ReadTensor(tt)
		got := make([]float32, tt.Elements())
		quant.Dequantize(quant.F32, b, got)
		src := data[slices.Index(names, c.name)]
		for i, id := range []int{1, 3} {
			if !slices.Equal(got[i*c.row:(i+1)*c.row], src[id*c.row:(id+1)*c.row]) {
				t.Fatalf("%s: row %d is not source row %d", c.name, i, id)
			}
		}
	}
	if _, ok := mf.Tensor("blk.0.ffn_up_exps.weight"); ok {
		t.Fatal("expert matrix left in model.gguf")
	}
	if _, ok := mf.Tensor(strata.RouterCopyName(0)); !ok {
		t.Fatal("router copy missing")
	}
	rep, err := Verify(context.Background(), VerifyConfig{Path: out, Source: in})
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %v", err, rep.Failures)
	}
}

// cancelOnAdd cancels the run at its first progress report, i.e. half-way.
type cancelOnAdd struct{ cancel context.CancelFunc }

func (c cancelOnAdd) Add(int64) { c.cancel() }
func (c cancelOnAdd) Done()     {}

func TestInterruptedHalfWayLeavesNothing(t *testing.T) {
	in := testutil.TinyModel(t, "model-iq3s.gguf")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prog := func(int64, string) Progress { return cancelOnAdd{cancel} }
	_, err := Pack(ctx, PackConfig{In: in, OutDir: filepath.Join(dir, "pack"), Type: quant.Q2_0, Progress: prog})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("pack cancelled half-way: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	prog = func(int64, string) Progress { return cancelOnAdd{cancel} }
	_, err = Quantize(ctx, QuantizeConfig{In: in, Out: filepath.Join(dir, "q.gguf"), Type: quant.Q8_0, Progress: prog})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("quantize cancelled half-way: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("interrupted runs left %v", ents)
	}
}

// TestVerifyPackOtherFiles damages keep.strp, model.gguf and manifest.json
// in turn; verify must fail and say where.
func TestVerifyPackOtherFiles(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.gguf")
	if _, err := Synth(context.Background(), SynthConfig{Out: in, Arch: "qwen3moe", Layers: 2, Experts: 4, ExpertsUsed: 2, Embd: 128, FF: 256, Type: quant.IQ3_S, DenseType: quant.BF16, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if _, err := Pack(context.Background(), PackConfig{In: in, OutDir: good, Type: quant.Q2_0}); err != nil {
		t.Fatal(err)
	}
	mf, _ := gguf.Open(filepath.Join(good, strata.ModelFile))
	router, _ := mf.Tensor("blk.1.ffn_gate_inp.weight")
	routerAt := mf.DataStart(router) + 40
	mf.Close()
	cases := []struct {
		file   string
		mutate func([]byte) []byte
		check  string
		offset int64
	}{
		{strata.KeepFile, func(b []byte) []byte { b[30] ^= 1; return b }, "keep", -2},
		{strata.ModelFile, func(b []byte) []byte { b[routerAt] ^= 1; return b }, "source.dense", routerAt},
		{strata.ManifestFile, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"rel_mse": 0.`), []byte(`"rel_mse": 1.`), 1)
		}, "manifest", -1},
	}
	for _, c := range cases {
		bad := filepath.Join(dir, "bad-"+c.file)
		copyPack(t, good, bad)
		p := filepath.Join(bad, c.file)
		if err := os.WriteFile(p, c.mutate(readAll(t, p)), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(context.Background(), VerifyConfig{Path: bad, Source: in})
		if err != nil {
			t.Fatal(err)
		}
		hit := false
		for _, f := range rep.Failures {
			hit = hit || (f.Check == c.check && (c.offset == -2 || f.Offset == c.offset))
		}
		if rep.OK || !hit {
			t.Fatalf("%s damaged: %v", c.file, rep.Failures)
		}
	}
}

func TestPackRefusesNaN(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "nan.gguf")
	const D, F, E = 64, 64, 4
	names := []string{"blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_down_exps.weight"}
	dims := [][]int64{{D, E}, {D, F, E}, {D, F, E}, {F, D, E}}
	var data [][]float32
	for _, d := range dims {
		x := make([]float32, d[0]*d[1]*max(1, d[len(d)-1]*int64(len(d)-2)))
		for i := range x {
			x[i] = float32(i%13) - 6
		}
		data = append(data, x)
	}
	bad := 2*F*D + 77 // expert 2 of the down matrices
	data[3][bad] = float32(math.Inf(-1))
	writeGGUF(t, in, []gguf.KV{{Key: "general.architecture", Value: gguf.String("test")}}, names, dims, data)
	_, err := Pack(context.Background(), PackConfig{In: in, OutDir: filepath.Join(dir, "pack"), Type: quant.Q2_0, Jobs: 2})
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Tensor != names[3] || nf.Expert != 2 || nf.Element != int64(bad) {
		t.Fatalf("pack of a model with -Inf: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("refused pack left %v", ents)
	}
}

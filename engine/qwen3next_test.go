package engine

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// qwen3nextFromQwen35 writes the tiny qwen35moe model in qwen3next's layout
// (llama.cpp's loader and graph): keys renamed, no rope sections; value
// heads regrouped from the tiled order (head i*n_k + g reads key head g) to
// the grouped one (head g*r + i) in every tensor indexed by value head;
// ssm_beta and ssm_alpha fused as ssm_ba, per key head its r beta rows
// then its r alpha rows; ffn_gate_inp_shexp 1-D. The same model, so it
// must give the same logits. legacy also fuses attn_qkv and attn_gate as
// ssm_in (per key head g: its q rows, its k rows, the v rows of its value
// heads g*r.., then their z rows), as older conversions wrote it.
func qwen3nextFromQwen35(t *testing.T, legacy bool) string {
	t.Helper()
	src, err := gguf.OpenMapped(tiny35(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c, err := ReadConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.SSM
	NK, NV, DK, DV := sc.KeyHeads, sc.ValueHeads, sc.KeyDim, sc.ValueDim
	r := NV / NK
	// grouped head j = g*r + i is tiled head i*NK + g.
	tiled := func(j int) int { return (j%r)*NK + j/r }

	var kv []gguf.KV
	for _, x := range src.KV {
		switch {
		case x.Key == "general.architecture":
			x.Value = gguf.String("qwen3next")
		case x.Key == "qwen35moe.rope.dimension_sections":
			continue
		case strings.HasPrefix(x.Key, "qwen35moe."):
			x.Key = "qwen3next." + strings.TrimPrefix(x.Key, "qwen35moe.")
		}
		kv = append(kv, x)
	}
	bytesOf := func(name string) ([]byte, *gguf.TensorInfo) {
		ti, ok := src.Tensor(name)
		if !ok {
			t.Fatalf("no tensor %s", name)
		}
		b, _ := src.Bytes(ti)
		return b, ti
	}
	// rows regroups value-head blocks of rows (rowBytes each, headRows per
	// head) starting at row first.
	rows := func(b []byte, rowBytes, first, headRows int) []byte {
		out := append([]byte(nil), b...)
		blk := headRows * rowBytes
		for j := 0; j < NV; j++ {
			h := tiled(j)
			copy(out[first*rowBytes+j*blk:first*rowBytes+(j+1)*blk], b[first*rowBytes+h*blk:first*rowBytes+(h+1)*blk])
		}
		return out
	}
	var specs []gguf.TensorSpec
	data := map[string][]byte{}
	for _, sp := range src.Specs() {
		b, ti := bytesOf(sp.Name)
		blk, rest, _ := gguf.SplitBlockName(sp.Name)
		rowBytes := int(ti.Size / max(ti.Ne(1), 1))
		if len(sp.Dims) == 1 {
			rowBytes = int(ti.Size)
		}
		switch rest {
		case "attn_qkv.weight":
			b = rows(b, rowBytes, 2*NK*DK, DV)
		case "attn_gate.weight":
			b = rows(b, rowBytes, 0, DV)
		case "ssm_conv1d.weight":
			b = rows(b, rowBytes, 2*NK*DK, DV)
		case "ssm_a", "ssm_dt.bias": // F32 vectors
			b = rows(b, 4, 0, 1)
		case "ssm_out.weight":
			if sp.Type != quant.BF16 {
				t.Fatalf("%s is %s, the column regrouping assumes BF16", sp.Name, sp.Type)
			}
			out := make([]byte, 0, len(b))
			hb := DV * 2 // BF16 columns of one head
			for row := 0; row < int(ti.Ne(1)); row++ {
				line := b[row*rowBytes : (row+1)*rowBytes]
				for j := 0; j < NV; j++ {
					h := tiled(j)
					out = append(out, line[h*hb:(h+1)*hb]...)
				}
			}
			b = out
		case "ffn_gate_inp_shexp.weight":
			sp.Dims = sp.Dims[:1]
		case "ssm_beta.weight":
			alpha, _ := bytesOf(strings.Replace(sp.Name, "ssm_beta", "ssm_alpha", 1))
			beta := rows(b, rowBytes, 0, 1)
			alpha = rows(alpha, rowBytes, 0, 1)
			var ba []byte
			for g := 0; g < NK; g++ {
				ba = append(ba, beta[g*r*rowBytes:(g+1)*r*rowBytes]...)
				ba = append(ba, alpha[g*r*rowBytes:(g+1)*r*rowBytes]...)
			}
			sp = gguf.TensorSpec{Name: fmt.Sprintf("blk.%d.ssm_ba.weight", blk), Type: sp.Type, Dims: []int64{sp.Dims[0], int64(2 * NV)}}
			b = ba
		case "ssm_alpha.weight":
			continue
		}
		specs = append(specs, sp)
		data[sp.Name] = b
	}
	if legacy {
		var out []gguf.TensorSpec
		for _, sp := range specs {
			blk, rest, _ := gguf.SplitBlockName(sp.Name)
			switch rest {
			case "attn_gate.weight":
				continue
			case "attn_qkv.weight":
				qkv := data[sp.Name]
				gate := data[fmt.Sprintf("blk.%d.attn_gate.weight", blk)]
				rb := len(qkv) / int(sp.Dims[1])
				rowsOf := func(b []byte, first, n int) []byte { return b[first*rb : (first+n)*rb] }
				var in []byte
				for g := 0; g < NK; g++ {
					in = append(in, rowsOf(qkv, g*DK, DK)...)
					in = append(in, rowsOf(qkv, (NK+g)*DK, DK)...)
					in = append(in, rowsOf(qkv, 2*NK*DK+g*r*DV, r*DV)...)
					in = append(in, rowsOf(gate, g*r*DV, r*DV)...)
				}
				sp = gguf.TensorSpec{Name: fmt.Sprintf("blk.%d.ssm_in.weight", blk), Type: sp.Type, Dims: []int64{sp.Dims[0], sp.Dims[1] + int64(NV*DV)}}
				data[sp.Name] = in
			}
			out = append(out, sp)
		}
		specs = out
	}
	return writeGGUF(t, kv, specs, data)
}

// writeGGUF writes a model of the given metadata, tensors and tensor bytes
// into the test's temporary folder.
func writeGGUF(t *testing.T, kv []gguf.KV, specs []gguf.TensorSpec, data map[string][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	w, err := gguf.Create(path, kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		if err := w.WriteTensor(sp.Name, data[sp.Name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

// sameLogitBits requires a and b to give the same logit bits at every
// position of ids.
func sameLogitBits(t *testing.T, a, b *Model, ids []int32, what string) {
	t.Helper()
	want, err := a.NewSession().Forward(ids, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.NewSession().Forward(ids, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: %s %g, reference layout %g", i, what, got[i], want[i])
		}
	}
}

// TestQwen3nextSameModel: the qwen35moe fixture rewritten in qwen3next's
// layout gives the qwen35moe logits (every eval position of the four
// sequences, and the greedy continuation with its recurrent state).
func TestQwen3nextSameModel(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("ssm_in=%v", legacy), func(t *testing.T) { qwen3nextSameModel(t, legacy) })
	}
}

func qwen3nextSameModel(t *testing.T, legacy bool) {
	path := qwen3nextFromQwen35(t, legacy)
	next, err := Open(path, Options{Mode: Exact})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if c := next.Config; c.Arch != "qwen3next" || !c.SSM.GroupedHeads || c.RopeSections != nil || next.Layers[0].Delta.BA == nil || (next.Layers[0].Delta.In != nil) != legacy {
		t.Fatalf("config %+v", c)
	}
	base := openQwen35(t)
	V := base.Config.Vocab
	tokens := readI32(t, tiny35(t, "refs", "eval_tokens.i32.bin"))
	refLogits := testutil.ReadF32(t, tiny35(t, "refs", "eval_logits.f32.bin"))
	for seq := 0; seq < 4; seq++ {
		ids := tokens[seq*64 : (seq+1)*64]
		want, err := base.NewSession().Forward(ids, true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := next.NewSession().Forward(ids, true)
		if err != nil {
			t.Fatal(err)
		}
		// Only the sum order of ssm_out's dot products changes, so the two
		// agree to float32 rounding: 1e-5 of the largest logit.
		var mx, d float64
		for i := range want {
			mx = max(mx, abs64(float64(want[i])))
			d = max(d, abs64(float64(got[i]-want[i])))
		}
		if d > 1e-5*mx {
			t.Fatalf("seq %d: qwen3next layout differs from qwen35moe by %.3g (largest logit %.3g)", seq, d, mx)
		}
		compareLogits(t, "qwen3next eval logits", got, refLogits[seq*64*V:(seq+1)*64*V], V)
	}
	ref := readGreedy(t, tiny35(t, "refs", "greedy.json"))
	ids, _ := greedy(t, next, ref.PromptIDs, len(ref.GeneratedIDs))
	for i := range ids {
		if ids[i] != ref.GeneratedIDs[i] {
			t.Fatalf("step %d: token %d, want %d", i, ids[i], ref.GeneratedIDs[i])
		}
	}
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestFusedGateUpSameModel: the qwen35moe fixture with each block's
// ffn_gate_exps and ffn_up_exps fused into ffn_gate_up_exps (per expert
// the gate rows, then the up rows: llama.cpp's layout) gives the same
// logit bits.
func TestFusedGateUpSameModel(t *testing.T) {
	src, err := gguf.OpenMapped(tiny35(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c, err := ReadConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	var specs []gguf.TensorSpec
	data := map[string][]byte{}
	for _, sp := range src.Specs() {
		blk, rest, _ := gguf.SplitBlockName(sp.Name)
		ti, _ := src.Tensor(sp.Name)
		b, _ := src.Bytes(ti)
		switch rest {
		case "ffn_up_exps.weight":
			continue
		case "ffn_gate_exps.weight":
			ui, _ := src.Tensor(fmt.Sprintf("blk.%d.ffn_up_exps.weight", blk))
			ub, _ := src.Bytes(ui)
			per := len(b) / c.Experts
			var fused []byte
			for e := 0; e < c.Experts; e++ {
				fused = append(fused, b[e*per:(e+1)*per]...)
				fused = append(fused, ub[e*per:(e+1)*per]...)
			}
			sp = gguf.TensorSpec{Name: fmt.Sprintf("blk.%d.ffn_gate_up_exps.weight", blk), Type: sp.Type, Dims: []int64{sp.Dims[0], 2 * sp.Dims[1], sp.Dims[2]}}
			b = fused
		}
		specs = append(specs, sp)
		data[sp.Name] = b
	}
	fused, err := Open(writeGGUF(t, src.KV, specs, data), Options{Mode: Exact})
	if err != nil {
		t.Fatal(err)
	}
	defer fused.Close()
	sameLogitBits(t, openQwen35(t), fused, readI32(t, tiny35(t, "refs", "eval_tokens.i32.bin"))[:64], "fused gate/up")
}

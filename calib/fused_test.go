package calib

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testmodels"
	"github.com/stratactl/stratactl/optq"
)

// TestFusedGateUp: with the experts' gate and up fused into one
// ffn_gate_up_exps (qwen35moe's layout from convert_hf_to_gguf.py
// --fuse-gate-up-exps), each expert's gate and up halves are the calibrated
// quantization the separate gate and up get from the same inputs, whether
// asked for whole (quantize) or half by half (pack), and down is the same.
func TestFusedGateUp(t *testing.T) {
	src := testmodels.Qwen35(t)
	fused := testmodels.Write(t, src, t.TempDir(), testmodels.Variant{Fuse: true})
	m, err := engine.Open(fused, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := make([][]int32, 2)
	for i := range ids {
		for j := 0; j < 48; j++ {
			ids[i] = append(ids[i], int32((i*977+j*131)%m.Config.Vocab))
		}
	}
	// One calibration run serves both quantizers, so any difference is the
	// quantizer's, not the forward pass's.
	set, qf, err := Prepare(context.Background(), m, ids, Options{Dir: t.TempDir()}, optq.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	defer qf.Close()
	sf, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	qs, err := NewQuantizer(sf, set, optq.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close()
	mf, _ := m.File.MoE()
	ms, _ := sf.MoE()
	ctx := context.Background()
	L, S := mf.Layers[2], ms.Layers[2]
	if L.GateUp == nil || !qf.Handles(L.GateUp.Name) {
		t.Fatalf("the fused model's block 2 has no ffn_gate_up_exps its quantizer handles")
	}
	F := L.ExpertFF
	rows := func(q *Quantizer, ti *gguf.TensorInfo, e int, row0, n int64) []byte {
		t.Helper()
		b, err := q.Rows(ctx, ti, e, row0, n)
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), b...)
	}
	for e := 0; e < 6; e++ {
		gate, up, down := rows(qs, S.Gate, e, 0, F), rows(qs, S.Up, e, 0, F), rows(qs, S.Down, e, 0, S.Down.Ne(1))
		var gu, dn []byte
		if e%2 == 0 {
			gu = rows(qf, L.GateUp, e, 0, 2*F)
		} else {
			gu = append(rows(qf, L.GateUp, e, 0, F), rows(qf, L.GateUp, e, F, F)...)
		}
		dn = rows(qf, L.Down, e, 0, L.Down.Ne(1))
		if !bytes.Equal(gu, append(gate, up...)) {
			t.Fatalf("expert %d: the fused gate_up differs from the separate gate and up", e)
		}
		if !bytes.Equal(dn, down) {
			t.Fatalf("expert %d: down differs between the fused and separate layouts", e)
		}
	}
	ef, ok := qf.TensorErrors(L.GateUp.Name)
	eg, _ := qs.TensorErrors(S.Gate.Name)
	eu, _ := qs.TensorErrors(S.Up.Name)
	eg.Add(eu)
	if !ok || math.Abs(ef.Weight-eg.Weight) > 1e-12*eg.Weight || ef.WeightEnergy != eg.WeightEnergy {
		t.Fatalf("fused errors %+v, separate gate + up %+v", ef, eg)
	}
}

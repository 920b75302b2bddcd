package engine

import (
	"math"
	"testing"

	"github.com/stratactl/stratactl/internal/testmodels"
)

// The fixture rewritten with fused gate_up experts and an appended MTP
// block decodes to the same logit bits as the fixture: the fused halves are
// the gate and up matrices, and the MTP block is never run.
func TestFusedGateUpAndMTPLogits(t *testing.T) {
	plain := testmodels.Qwen35(t)
	variant := testmodels.Write(t, plain, t.TempDir(), testmodels.Variant{Fuse: true, MTP: true})
	tokens := []int32{726, 2611, 10, 1345, 310, 281, 529, 281}
	var logits [2][]float32
	for i, path := range []string{plain, variant} {
		m, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.Layers != 4 {
			t.Errorf("%s: %d layers run, want 4", path, m.Config.Layers)
		}
		l, err := m.NewSession().Forward(tokens, true)
		if err != nil {
			t.Fatal(err)
		}
		logits[i] = l
		m.Close()
	}
	for i := range logits[0] {
		if math.Float32bits(logits[0][i]) != math.Float32bits(logits[1][i]) {
			t.Fatalf("logit %d: %v with fused experts and an MTP block, %v without", i, logits[1][i], logits[0][i])
		}
	}
}

package strata

import (
	"testing"

	"github.com/stratactl/stratactl/gguf"
)

// TestExpertIndexedNames: the per-expert rule that prune and pack slice by.
// Both matched these names before the rule had one home (prune by a
// tensor's first name component, pack by whole names).
func TestExpertIndexedNames(t *testing.T) {
	yes := []string{"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight", "ffn_gate_up_exps.weight",
		"ffn_gate_exps.bias", "ffn_gate_inp.weight", "ffn_gate_inp.bias", "exp_probs_b.bias", "ffn_gate_inp_q8.weight"}
	no := []string{"ffn_gate_shexp.weight", "ffn_gate_inp_shexp.weight", "ffn_norm.weight", "attn_q.weight", "ffn_up.weight", "_exps.weight"}
	for _, n := range yes {
		if !ExpertIndexed(n) {
			t.Errorf("%s should be sliced per expert", n)
		}
	}
	for _, n := range no {
		if ExpertIndexed(n) {
			t.Errorf("%s should be copied", n)
		}
	}
	// gguf's rule is the same without the pack's router copy.
	if gguf.ExpertIndexed("ffn_gate_inp_q8.weight") || !gguf.ExpertIndexed("ffn_gate_inp.weight") {
		t.Error("gguf.ExpertIndexed: the router copy is strata's, the router gguf's")
	}
	if n := RouterCopyName(7); n != "blk.7.ffn_gate_inp_q8.weight" {
		t.Errorf("RouterCopyName(7) = %q", n)
	}
	if _, rest, _ := gguf.SplitBlockName(RouterCopyName(3)); !IsRouterCopy(rest) || !ExpertIndexed(rest) {
		t.Errorf("%s is not recognized as a router copy", RouterCopyName(3))
	}
}

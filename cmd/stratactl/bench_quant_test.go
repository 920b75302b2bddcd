package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

func TestBenchQuantJSON(t *testing.T) {
	var o, e bytes.Buffer
	args := []string{"bench", "quant", "--seconds", "0.001", "--mib", "1", "--json"}
	if code := run(context.Background(), cli.Test(&o, &e), args); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	var rep bench.QuantReport
	if err := json.Unmarshal(o.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, o.String())
	}
	if !(rep.WriteGBs > 0 && rep.ReadGBs > 0 && rep.CopyGBs > 0) {
		t.Errorf("bandwidths not measured: %+v", rep)
	}
	seen := map[string]bool{}
	for _, r := range rep.Rates {
		if !(r.MWeightsPerS > 0) || r.Calls < 3 || r.BestMWPerS < r.MWeightsPerS {
			t.Errorf("bad rate %+v", r)
		}
		seen[r.Op+" "+r.Type+" "+r.Path] = true
		if a, ok := bench.AnchorFor(r.Op, quant.Q8_0); ok && r.Op == "dequantize" && r.Type == "Q8_0" {
			if r.GGMLMBPerS == nil || *r.GGMLMBPerS != a.DefaultMBs {
				t.Errorf("Q8_0 lacks its ggml reference: %+v", r)
			}
		}
	}
	for _, typ := range bench.DequantTypes {
		if !seen["dequantize "+typ.String()+" portable"] {
			t.Errorf("no portable figure for %s", typ)
		}
		if kernels.HasVectorDequantize(typ) && !seen["dequantize "+typ.String()+" avx2"] {
			t.Errorf("no vector figure for %s", typ)
		}
	}
	searchPath := "quantize Q2_0 q2-search portable"
	if kernels.HasVectorQ2Search() {
		searchPath = "quantize Q2_0 q2-search avx2"
	}
	if quant.CanQuantize(quant.Q2_0) && !(seen["quantize Q2_0 q2-ggml"] && seen[searchPath] && seen["quantize Q2_0 q2-search reference"]) {
		t.Errorf("Q2_0 quantizer not measured in both modes on the converter's path and the reference: %v", seen)
	}
}

func TestBenchQuantText(t *testing.T) {
	var o, e bytes.Buffer
	args := []string{"bench", "quant", "--seconds", "0.001", "--mib", "1", "--type", "iq3_s,Q6_K"}
	if code := run(context.Background(), cli.Test(&o, &e), args); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	for _, w := range []string{"memory bandwidth", "IQ3_S", "Q6_K", "not measured in this run"} {
		if !strings.Contains(o.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, o.String())
		}
	}
	for _, w := range []string{"Q8_0", "quantize"} {
		if strings.Contains(o.String(), " "+w+" ") {
			t.Errorf("--type iq3_s,Q6_K still measured %s:\n%s", w, o.String())
		}
	}
	for _, bad := range [][]string{{"--type", "q9_9"}, {"--type", "q8_1"}} {
		var o3, e3 bytes.Buffer
		if code := run(context.Background(), cli.Test(&o3, &e3), append([]string{"bench", "quant", "--seconds", "0.001", "--mib", "1"}, bad...)); code == 0 {
			t.Errorf("%v accepted", bad)
		}
	}
	var o2, e2 bytes.Buffer
	if code := run(context.Background(), cli.Test(&o2, &e2), []string{"bench", "quant", "--seconds", "-1"}); code == 0 {
		t.Error("negative --seconds accepted")
	}
}

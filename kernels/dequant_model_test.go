package kernels

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// errorGroup is one row of the manifest's dequant_error_by_group, computed
// by the fixture's maker from ggml's to_float against the BF16 source.
type errorGroup struct {
	Type        string  `json:"ggml_type"`
	WorstRow    float64 `json:"worst_row_rel_err"`
	WorstTensor string  `json:"worst_tensor"`
	MedianMax   float64 `json:"median_row_rel_err_max"`
}

// TestTinyModelDequantError decodes every quantized tensor of the tiny
// model's variants (vector paths where there are) and checks the per-row
// relative error against the BF16 source: worst row, its tensor, and the
// largest per-tensor median must equal ggml's figures in the manifest.
func TestTinyModelDequantError(t *testing.T) {
	raw, err := os.ReadFile(testutil.TinyModel(t, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Quantized struct {
			Variants map[string]struct {
				File   string                `json:"file"`
				Groups map[string]errorGroup `json:"dequant_error_by_group"`
			} `json:"variants"`
		} `json:"quantized_variants"`
	}
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	src, err := gguf.OpenMapped(testutil.TinyModel(t, "model-bf16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if len(man.Quantized.Variants) == 0 {
		t.Fatal("manifest has no quantized variants")
	}
	for name, v := range man.Quantized.Variants {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.OpenMapped(testutil.TinyModel(t, v.File))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got := map[string]*errorGroup{}
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				group := groupOf(ti)
				if group == "" {
					continue
				}
				si, ok := src.Tensor(ti.Name)
				if !ok || si.Type != quant.BF16 || si.Elements() != ti.Elements() {
					t.Fatalf("%s: no matching BF16 source tensor", ti.Name)
				}
				q, _ := f.Bytes(ti)
				x, _ := src.Bytes(si)
				deq := make([]float32, ti.Elements())
				ref := make([]float32, ti.Elements())
				if err := Dequantize(ti.Type, q, deq); err != nil {
					t.Fatal(err)
				}
				if err := Dequantize(quant.BF16, x, ref); err != nil {
					t.Fatal(err)
				}
				errs := rowErrors(deq, ref, int(ti.Dims[0]))
				g := got[group]
				if g == nil {
					g = &errorGroup{Type: ti.Type.String()}
					got[group] = g
				}
				if w := slices.Max(errs); w > g.WorstRow {
					g.WorstRow, g.WorstTensor = w, ti.Name
				}
				g.MedianMax = max(g.MedianMax, median(errs))
			}
			for key, want := range v.Groups {
				g := got[key]
				if g == nil {
					t.Errorf("group %s: no tensors found", key)
					continue
				}
				close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*b }
				if g.Type != want.Type || g.WorstTensor != want.WorstTensor || !close(g.WorstRow, want.WorstRow) || !close(g.MedianMax, want.MedianMax) {
					t.Errorf("group %s: got %+v, manifest %+v", key, *g, want)
				}
			}
		})
	}
}

// groupOf names a tensor's group as the manifest does.
func groupOf(ti *gguf.TensorInfo) string {
	for _, g := range []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
		if strings.Contains(ti.Name, g) {
			return g
		}
	}
	if ti.Type == quant.Q8_0 && len(ti.Dims) == 2 {
		return "q8_0_2d"
	}
	return ""
}

// rowErrors is ||deq - x|| / ||x|| per row.
func rowErrors(deq, x []float32, rowLen int) []float64 {
	out := make([]float64, 0, len(x)/rowLen)
	for r := 0; r+rowLen <= len(x); r += rowLen {
		var num, den float64
		for i := r; i < r+rowLen; i++ {
			d := float64(deq[i]) - float64(x[i])
			num += d * d
			den += float64(x[i]) * float64(x[i])
		}
		out = append(out, math.Sqrt(num/den))
	}
	return out
}

// median as numpy takes it: the mean of the middle two for an even count.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

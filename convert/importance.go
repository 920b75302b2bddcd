package convert

import (
	"errors"
	"fmt"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/imatrix"
	"github.com/stratactl/stratactl/strata"
)

// Importance is an importance matrix (package imatrix) as the
// pipelines ask for it: by tensor name and ne0×ne1 matrix (expert) of one
// model's tensors.
type Importance struct {
	Path string
	m    *imatrix.Matrix
	// source is the record of a pruned model (strata.SourceKeep): its
	// expert i of block b is original expert source[b][i], so that an
	// importance matrix collected on the original applies to it.
	source  map[int][]uint32
	nSource uint32
}

// LoadImportance reads an importance matrix (GGUF or legacy .dat) for the
// tensors of model, whose expert ids For is asked with. A model that
// prune wrote records the original experts it keeps (strata.SourceKeep):
// a per-expert entry of the original model then applies through that
// record, as well as one of the pruned model itself.
func LoadImportance(path string, model *gguf.File) (*Importance, error) {
	im := &Importance{Path: path}
	if _, ok := model.Get(strata.KeySourceKeep); ok {
		mm, err := model.MoE()
		if err != nil {
			return nil, err
		}
		rec, err := strata.SourceKeep(model, mm)
		if err != nil {
			return nil, err
		}
		im.source, im.nSource = map[int][]uint32{}, rec.NExpert
		for l, b := range rec.Layers {
			im.source[int(b)] = rec.Keep[l]
		}
	}
	m, err := imatrix.Open(path)
	if err != nil {
		return nil, err
	}
	im.m = m
	return im, nil
}

// Close releases the matrix.
func (im *Importance) Close() error { return nil }

// For returns the ne0 column weights of matrix m (the expert of a 3-D
// tensor of matrices experts) of tensor name, or nil when the file has no
// entry for it, as llama-quantize quantizes such a tensor without one. A
// dense entry applies to every matrix. A per-expert entry holds either the
// tensor's experts, or, for a pruned model, its source's (expert m is then
// the original expert the record names); one of any other count is
// refused, naming both shapes, never applied to the wrong experts.
func (im *Importance) For(name string, ne0 int64, m, matrices int) ([]float32, error) {
	rows, err := im.m.Rows(name, int(ne0))
	if errors.Is(err, imatrix.ErrNoEntry) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch {
	case rows == 1:
		m = 0
	case rows == matrices:
	default:
		block, _, _ := gguf.SplitBlockName(name)
		ids := im.source[block]
		if im.source == nil || rows != int(im.nSource) || len(ids) != matrices {
			why := "an importance matrix applies only to the model it was collected on, or to a model stratactl prune made of it"
			if im.source != nil {
				why = fmt.Sprintf("the model was pruned from one of %d experts (%s), so the entry must hold %d or %d", im.nSource, strata.KeySourceNExpert, matrices, im.nSource)
			}
			return nil, fmt.Errorf("imatrix %s: tensor %q: the entry holds %d experts × %d, the tensor %d experts × %d: %s",
				im.Path, name, rows, ne0, matrices, ne0, why)
		}
		m = int(ids[m])
	}
	return im.m.Importance(name, m, int(ne0))
}

package convert

import (
	"errors"
	"fmt"

	"github.com/stratactl/stratactl/imatrix"
)

// Importance is an importance matrix (package imatrix) as the
// pipelines ask for it: by tensor name and ne0×ne1 matrix (expert).
type Importance struct {
	Path string
	m    *imatrix.Matrix
}

// LoadImportance reads an importance matrix (GGUF or legacy .dat).
func LoadImportance(path string) (*Importance, error) {
	m, err := imatrix.Open(path)
	if err != nil {
		return nil, err
	}
	return &Importance{Path: path, m: m}, nil
}

// Close releases the matrix.
func (im *Importance) Close() error { return nil }

// For returns the ne0 column weights of matrix m (the expert of a 3-D
// tensor of matrices experts) of tensor name, or nil when the file has no
// entry for it, as llama-quantize quantizes such a tensor without one. A
// dense entry applies to every matrix. A per-expert entry must hold exactly
// the tensor's experts: one of another model (a pruned model's experts are
// a subset of its source's, in keep-map order) is refused, naming both
// shapes, never applied to the wrong experts.
func (im *Importance) For(name string, ne0 int64, m, matrices int) ([]float32, error) {
	rows, err := im.m.Rows(name, int(ne0))
	if errors.Is(err, imatrix.ErrNoEntry) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rows == 1 {
		m = 0
	} else if rows != matrices {
		return nil, fmt.Errorf("imatrix %s: tensor %q: the entry holds %d experts × %d, the tensor %d experts × %d: an importance matrix applies only to the model it was collected on (a pruned model's experts are not its source's first %d)",
			im.Path, name, rows, ne0, matrices, ne0, matrices)
	}
	return im.m.Importance(name, m, int(ne0))
}

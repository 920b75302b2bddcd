package convert

import (
	"errors"

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
// tensor) of tensor name, or nil when the file has no entry for it, as
// llama-quantize quantizes such a tensor without one. A dense entry applies
// to every matrix.
func (im *Importance) For(name string, ne0 int64, m int) ([]float32, error) {
	rows, err := im.m.Rows(name, int(ne0))
	if errors.Is(err, imatrix.ErrNoEntry) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rows == 1 {
		m = 0
	}
	return im.m.Importance(name, m, int(ne0))
}

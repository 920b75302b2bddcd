package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
)

// Importance is a llama.cpp GGUF importance matrix, read row by row on
// demand (a large model's matrix is hundreds of megabytes): the weight of
// column c of matrix m of tensor name is in_sum2[m][c] / counts[m], or 1
// for a matrix that saw no tokens, as llama-quantize does.
type Importance struct {
	Path string
	f    *gguf.File
}

// LoadImportance opens an importance matrix and checks its form.
func LoadImportance(path string) (*Importance, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	if typ, _ := f.String("general.type"); typ != "imatrix" {
		f.Close()
		return nil, fmt.Errorf("%s: not an importance matrix (general.type is %q, want \"imatrix\")", path, typ)
	}
	for _, t := range f.Tensors {
		if strings.HasSuffix(t.Name, ".in_sum2") || strings.HasSuffix(t.Name, ".counts") {
			if t.Type != quant.F32 {
				f.Close()
				return nil, &gguf.FormatError{File: path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("type %s, want F32", t.Type)}
			}
		}
	}
	return &Importance{Path: path, f: f}, nil
}

// Close releases the file.
func (im *Importance) Close() error { return im.f.Close() }

// Has reports whether the matrix has an entry for tensor name.
func (im *Importance) Has(name string) bool {
	_, ok := im.f.Tensor(name + ".in_sum2")
	return ok
}

// For returns the ne0 column weights of matrix m of tensor name, or nil
// when the file has no entry for it.
func (im *Importance) For(name string, ne0 int64, m int) ([]float32, error) {
	sum, ok := im.f.Tensor(name + ".in_sum2")
	if !ok {
		return nil, nil
	}
	cnt, ok := im.f.Tensor(name + ".counts")
	if !ok {
		return nil, &gguf.FormatError{File: im.Path, Offset: sum.InfoOffset, Tensor: sum.Name, Msg: "no matching .counts tensor"}
	}
	nmat := sum.Elements() / max(sum.Dims[0], 1)
	if sum.Dims[0] != ne0 || cnt.Elements() != nmat {
		return nil, &gguf.FormatError{File: im.Path, Offset: sum.InfoOffset, Tensor: sum.Name, Msg: fmt.Sprintf("ne %v with %d counts does not fit a tensor of row length %d", sum.Dims, cnt.Elements(), ne0)}
	}
	if nmat == 1 {
		m = 0 // a dense entry applies to every matrix
	}
	if int64(m) >= nmat {
		return nil, &gguf.FormatError{File: im.Path, Offset: sum.InfoOffset, Tensor: sum.Name, Msg: fmt.Sprintf("has %d matrices, matrix %d asked", nmat, m)}
	}
	var cb [4]byte
	if err := im.f.ReadTensorAt(cnt, cb[:], int64(m)*4); err != nil {
		return nil, err
	}
	count := math.Float32frombits(binary.LittleEndian.Uint32(cb[:]))
	w := make([]float32, ne0)
	if count == 0 {
		for i := range w {
			w[i] = 1
		}
		return w, nil
	}
	raw := make([]byte, 4*ne0)
	if err := im.f.ReadTensorAt(sum, raw, int64(m)*4*ne0); err != nil {
		return nil, err
	}
	for i := range w {
		w[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])) / count
		if math.IsNaN(float64(w[i])) || math.IsInf(float64(w[i]), 0) || w[i] < 0 {
			return nil, &gguf.FormatError{File: im.Path, Offset: im.f.DataStart(sum) + int64(m)*4*ne0 + int64(4*i), Tensor: sum.Name, Msg: fmt.Sprintf("importance %v is not a finite non-negative number", w[i])}
		}
	}
	return w, nil
}

// Package imatrix reads llama.cpp importance matrices: the GGUF form that
// llama-imatrix writes by default and the legacy .dat form. The importance
// of a weight's column is the mean square of the activations that met it
// (in_sum2 / count), one vector per expert for 3-D expert weights, exactly
// what llama-quantize hands to ggml's quantizers.
package imatrix

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// ErrNoEntry is wrapped by Importance when the matrix has no entry for a
// weight.
var ErrNoEntry = errors.New("no importance entry")

// Entry is the importance of one weight tensor.
type Entry struct {
	Name string
	// Values holds Rows vectors back to back: one per expert (Rows = the
	// expert count) or a single one for a dense weight. Each is
	// in_sum2/count, or all 1.0 where count is 0, as llama-quantize loads
	// them. For a legacy .dat entry the row length is unknown until a
	// weight asks for it, and Values is the flat array.
	Values []float32
	// Counts are the tokens seen per row (GGUF form); the legacy form keeps
	// only one call count per entry, reported for every row.
	Counts []float32
	// Ne0 is the row length (0 for a legacy entry, which does not record it).
	Ne0 int
}

// Matrix is an importance matrix read from a file.
type Matrix struct {
	Path       string
	Legacy     bool     // read from the legacy .dat form
	Datasets   []string // calibration files named in the file
	ChunkCount uint32   // chunks of ChunkSize tokens the collector saw
	ChunkSize  uint32
	entries    map[string]*Entry
	names      []string
}

// Open reads an importance matrix, GGUF or legacy, telling them apart by the
// GGUF magic as llama.cpp does.
func Open(path string) (*Matrix, error) {
	f, _, err := osutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var magic [4]byte
	if n, err := io.ReadFull(f, magic[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("imatrix %s: byte 0: %d bytes is too short to be an importance matrix (GGUF or legacy)", path, n)
		}
		return nil, fmt.Errorf("imatrix %s: %w", path, err)
	}
	if string(magic[:]) == gguf.Magic {
		return openGGUF(path)
	}
	return openLegacy(path, f)
}

// Names lists the weights that have an entry, sorted.
func (m *Matrix) Names() []string { return m.names }

// Entry returns the entry of a weight.
func (m *Matrix) Entry(weightName string) (*Entry, bool) {
	e, ok := m.entries[weightName]
	return e, ok
}

// Importance is the importance vector (ne0 values, one per column) for
// expert `expert` of weight weightName, or for the weight itself when
// expert is 0 and the entry is dense. The slice is shared: do not modify it.
func (m *Matrix) Importance(weightName string, expert int, ne0 int) ([]float32, error) {
	e, ok := m.entries[weightName]
	if !ok {
		return nil, fmt.Errorf("imatrix %s: tensor %q: %w", m.Path, weightName, ErrNoEntry)
	}
	if ne0 <= 0 {
		return nil, fmt.Errorf("imatrix %s: tensor %q: row length %d", m.Path, weightName, ne0)
	}
	if e.Ne0 != 0 && e.Ne0 != ne0 {
		return nil, fmt.Errorf("imatrix %s: tensor %q: entry has rows of %d values, the weight's rows have %d", m.Path, weightName, e.Ne0, ne0)
	}
	if len(e.Values)%ne0 != 0 {
		return nil, fmt.Errorf("imatrix %s: tensor %q: entry of %d values is not a whole number of rows of %d", m.Path, weightName, len(e.Values), ne0)
	}
	rows := len(e.Values) / ne0
	if expert < 0 || expert >= rows {
		return nil, fmt.Errorf("imatrix %s: tensor %q: expert %d out of range: the entry has %d rows", m.Path, weightName, expert, rows)
	}
	return e.Values[expert*ne0 : (expert+1)*ne0], nil
}

// Rows is how many importance vectors a weight's entry holds for rows of
// ne0 values (its expert count, or 1 for a dense weight).
func (m *Matrix) Rows(weightName string, ne0 int) (int, error) {
	if _, err := m.Importance(weightName, 0, ne0); err != nil {
		return 0, err
	}
	return len(m.entries[weightName].Values) / ne0, nil
}

func (m *Matrix) add(e *Entry) {
	if m.entries == nil {
		m.entries = map[string]*Entry{}
	}
	m.entries[e.Name] = e
	m.names = append(m.names, e.Name)
}

func (m *Matrix) finish() {
	sort.Strings(m.names)
}

const (
	suffixSum2   = ".in_sum2"
	suffixCounts = ".counts"
)

func openGGUF(path string) (*Matrix, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := &Matrix{Path: path}
	if ty, err := f.String("general.type"); err == nil && ty != "imatrix" {
		return nil, &gguf.FormatError{File: path, Offset: f.KeyOffset("general.type"), Key: "general.type", Msg: fmt.Sprintf("%q, not an importance matrix", ty)}
	}
	// llama-quantize refuses a GGUF imatrix without these three keys.
	if m.Datasets, err = f.Strings("imatrix.datasets"); err != nil {
		return nil, fmt.Errorf("%w: not a llama.cpp importance matrix", err)
	}
	if m.ChunkCount, err = f.Uint32("imatrix.chunk_count"); err != nil {
		return nil, fmt.Errorf("%w: not a llama.cpp importance matrix", err)
	}
	if m.ChunkSize, err = f.Uint32("imatrix.chunk_size"); err != nil {
		return nil, fmt.Errorf("%w: not a llama.cpp importance matrix", err)
	}
	readF32 := func(t *gguf.TensorInfo) ([]float32, error) {
		if t.Type != quant.F32 {
			return nil, &gguf.FormatError{File: path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("type %s, want F32", t.Type)}
		}
		b, err := f.ReadTensor(t)
		if err != nil {
			return nil, err
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v, nil
	}
	// Pair <name>.in_sum2 with <name>.counts by suffix and skip anything
	// else (in_sum, stats), as llama-quantize does.
	for i := range f.Tensors {
		ts := &f.Tensors[i]
		name, ok := strings.CutSuffix(ts.Name, suffixSum2)
		if !ok {
			continue
		}
		tc, ok := f.Tensor(name + suffixCounts)
		if !ok {
			return nil, &gguf.FormatError{File: path, Offset: ts.InfoOffset, Tensor: ts.Name, Msg: "no matching " + name + suffixCounts}
		}
		if len(ts.Dims) > 2 || len(tc.Dims) > 2 || tc.Ne(0) != 1 || ts.Ne(1) != tc.Ne(1) || ts.Ne(0) <= 0 {
			return nil, &gguf.FormatError{File: path, Offset: ts.InfoOffset, Tensor: ts.Name,
				Msg: fmt.Sprintf("shape %v with counts %v, want [ne0, n] and [1, n]", ts.Dims, tc.Dims)}
		}
		sum2, err := readF32(ts)
		if err != nil {
			return nil, err
		}
		counts, err := readF32(tc)
		if err != nil {
			return nil, err
		}
		ne0 := int(ts.Ne(0))
		for r, c := range counts {
			if !(c >= 0) || math.IsInf(float64(c), 0) {
				return nil, &gguf.FormatError{File: path, Offset: f.DataStart(tc) + int64(4*r), Tensor: tc.Name, Msg: fmt.Sprintf("count %g of row %d", c, r)}
			}
			row := sum2[r*ne0 : (r+1)*ne0]
			for j, s := range row {
				if !(s >= 0) || math.IsInf(float64(s), 0) {
					return nil, &gguf.FormatError{File: path, Offset: f.DataStart(ts) + int64(4*(r*ne0+j)), Tensor: ts.Name, Msg: fmt.Sprintf("sum of squares %g at row %d column %d", s, r, j)}
				}
				if c == 0 {
					row[j] = 1
				} else {
					row[j] = s / c
				}
			}
		}
		m.add(&Entry{Name: name, Values: sum2, Counts: counts, Ne0: ne0})
	}
	if len(m.names) == 0 {
		return nil, &gguf.FormatError{File: path, Offset: f.DataOffset, Msg: "no <weight>.in_sum2 tensors: not an importance matrix"}
	}
	m.finish()
	return m, nil
}

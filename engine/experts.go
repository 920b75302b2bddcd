package engine

import (
	"fmt"
	"os"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/kernels"
)

// Expert is one expert's three matrices.
type Expert struct {
	Gate, Up, Down kernels.Matrix
}

// ExpertStore hands out experts by (layer, expert id). Get may block on a
// read; what it returns stays valid until the matching Release.
type ExpertStore interface {
	Get(layer, e int) (*Expert, error)
	Release(layer, e int)
	// Need says the current batch needs experts ids of layer (each will be
	// Get next); a store that reads from disk counts hits and misses and
	// starts reading the misses together.
	Need(layer int, ids []int)
	// Guess says read-ahead expects experts ids of layer soon.
	Guess(layer int, ids []int)
	// Resident reports whether the expert is in memory or being read.
	Resident(layer, e int) bool
	// Absent appends to dst the experts of ids of layer that are not
	// Resident, in ids' order, from one look at the store.
	Absent(layer int, ids, dst []int) []int
	// Ready reports whether Get would return at once (in memory, read).
	Ready(layer, e int) bool
	// WaitAny waits until Get of one of experts ids of layer would not
	// wait for a read in flight (read, failed, or not being read), or the
	// store closes.
	WaitAny(layer int, ids []int)
	// ReadAhead is how many layers ahead read-ahead guesses experts: 0 when
	// experts do not come from disk or read-ahead is off.
	ReadAhead() int
	Close() error
}

// mappedExperts serves experts straight from the mapped GGUF tensors.
type mappedExperts struct {
	experts [][]Expert
}

func newMappedExperts(f *gguf.File, c *Config) (*mappedExperts, error) {
	l := tensorLoader{f}
	s := &mappedExperts{experts: make([][]Expert, c.Layers)}
	for i := 0; i < c.Layers; i++ {
		s.experts[i] = make([]Expert, c.Experts)
		first := 0 // the first part still to map
		// The fused layout (gguf.FusedGateUp): each expert's gate rows, then
		// its up rows, in place of ffn_gate_exps and ffn_up_exps.
		if name := fmt.Sprintf("blk.%d.%s", i, gguf.FusedGateUp); hasTensor(f, name) {
			if err := s.mapGateUp(l, c, i, name); err != nil {
				return nil, err
			}
			first = 2
		}
		for p := first; p < len(expertParts); p++ {
			name := fmt.Sprintf("blk.%d.%s.weight", i, expertParts[p])
			cols, rows := c.expertShape(p)
			t, data, err := l.info(name, cols, rows, c.Experts)
			if err != nil {
				return nil, err
			}
			if err := partType(t.Type); err != nil {
				return nil, fmt.Errorf("%s: tensor %s: %w", f.Path, name, err)
			}
			per := len(data) / c.Experts
			for e := 0; e < c.Experts; e++ {
				m, err := kernels.NewMatrix(t.Type, data[e*per:(e+1)*per], cols, rows)
				if err != nil {
					return nil, fmt.Errorf("%s: tensor %s expert %d: %w", f.Path, name, e, err)
				}
				ex := &s.experts[i][e]
				switch p {
				case 0:
					ex.Gate = m
				case 1:
					ex.Up = m
				case 2:
					ex.Down = m
				}
			}
		}
	}
	return s, nil
}

// mapGateUp maps layer i's fused gate/up tensor: per expert, the first
// ExpertFF rows are the gate, the next ExpertFF the up projection.
func (s *mappedExperts) mapGateUp(l tensorLoader, c *Config, i int, name string) error {
	f := l.f
	for _, part := range expertParts[:2] {
		if n := fmt.Sprintf("blk.%d.%s.weight", i, part); hasTensor(f, n) {
			return fmt.Errorf("%s: block %d has both %s and %s", f.Path, i, name, n)
		}
	}
	t, data, err := l.info(name, c.Embd, 2*c.ExpertFF, c.Experts)
	if err != nil {
		return err
	}
	if err := partType(t.Type); err != nil {
		return fmt.Errorf("%s: tensor %s: %w", f.Path, name, err)
	}
	per := len(data) / c.Experts
	for e := 0; e < c.Experts; e++ {
		d := data[e*per : (e+1)*per]
		ex := &s.experts[i][e]
		if ex.Gate, err = kernels.NewMatrix(t.Type, d[:per/2], c.Embd, c.ExpertFF); err == nil {
			ex.Up, err = kernels.NewMatrix(t.Type, d[per/2:], c.Embd, c.ExpertFF)
		}
		if err != nil {
			return fmt.Errorf("%s: tensor %s expert %d: %w", f.Path, name, e, err)
		}
	}
	return nil
}

func hasTensor(f *gguf.File, name string) bool {
	_, ok := f.Tensor(name)
	return ok
}

func (s *mappedExperts) Get(layer, e int) (*Expert, error) { return &s.experts[layer][e], nil }
func (s *mappedExperts) Release(layer, e int)              {}
func (s *mappedExperts) Need(layer int, ids []int)         {}
func (s *mappedExperts) Guess(layer int, ids []int)        {}
func (s *mappedExperts) Resident(layer, e int) bool        { return true }
func (s *mappedExperts) Ready(layer, e int) bool           { return true }
func (s *mappedExperts) WaitAny(layer int, ids []int)      {}
func (s *mappedExperts) ReadAhead() int                    { return 0 }
func (s *mappedExperts) Close() error                      { return nil }

// Absent is none: every expert is mapped.
func (s *mappedExperts) Absent(layer int, ids, dst []int) []int { return dst }

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

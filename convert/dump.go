package convert

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// DumpChunkWeights bounds memory: the tensor is decoded this many weights
// (rounded down to whole blocks) at a time, whatever its size.
const DumpChunkWeights = 1 << 20

// DumpSummary is what stratactl dump --json prints: the tensor, the bytes
// written and the statistics of its weights. Statistics cover the finite values;
// NaNs and infinities are counted instead (JSON has no NaN).
type DumpSummary struct {
	File         string   `json:"file"`
	Tensor       string   `json:"tensor"`
	Type         string   `json:"type"`
	Dims         []int64  `json:"dims"`
	Elements     int64    `json:"elements"`
	Output       string   `json:"output,omitempty"`
	BytesWritten int64    `json:"bytes_written"`
	Min          *float64 `json:"min"`
	Max          *float64 `json:"max"`
	Mean         *float64 `json:"mean"`
	RMS          *float64 `json:"rms"`
	NaNs         int64    `json:"nan_count"`
	Infs         int64    `json:"inf_count"`
	Path         string   `json:"path"` // decode path used (vector or portable)
}

// Dump decodes tensor ti of f exactly as ggml does, a bounded chunk at a
// time (blocks never straddle rows, so the tensor is one run of blocks),
// writes its weights as raw little-endian float32 to w (nil: nowhere, for
// the summary alone; dest names w in errors) and summarizes them.
func Dump(ctx context.Context, f *gguf.File, ti *gguf.TensorInfo, w io.Writer, dest string, progress ProgressFunc) (*DumpSummary, error) {
	if !quant.CanDequantize(ti.Type) {
		return nil, fmt.Errorf("%s: tensor %q has type %s, which stratactl cannot dequantize", f.Path, ti.Name, ti.Type)
	}
	sum := &DumpSummary{File: f.Path, Tensor: ti.Name, Type: ti.Type.String(), Dims: ti.Dims, Elements: ti.Elements(), Path: "portable Go"}
	if kernels.HasVectorDequantize(ti.Type) {
		sum.Path = kernels.Describe()
	}
	info, _ := quant.Info(ti.Type)
	be, bb := int64(info.BlockElements), int64(info.BlockBytes)
	total := ti.Elements()
	if want, err := quant.RowBytes(ti.Type, total); err != nil || want != ti.Size {
		return nil, fmt.Errorf("%s: tensor %q: %d bytes for %d weights of %s", f.Path, ti.Name, ti.Size, total, ti.Type)
	}
	chunk := max(DumpChunkWeights/be, 1) * be
	src := make([]byte, chunk/be*bb)
	dst := make([]float32, chunk)
	raw := make([]byte, 4*chunk)
	st := &dumpStats{}
	bar := progress.start(4*total, "dump")
	defer bar.Done()
	for done := int64(0); done < total; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(chunk, total-done)
		s, d := src[:n/be*bb], dst[:n]
		if err := f.ReadTensorAt(ti, s, done/be*bb); err != nil {
			return nil, err
		}
		if err := kernels.Dequantize(ti.Type, s, d); err != nil {
			return nil, fmt.Errorf("%s: tensor %q at byte %d of its data: %w", f.Path, ti.Name, done/be*bb, err)
		}
		st.add(d)
		if w != nil {
			r := raw[:4*n]
			for i, v := range d {
				binary.LittleEndian.PutUint32(r[4*i:], math.Float32bits(v))
			}
			if _, err := w.Write(r); err != nil {
				return nil, fmt.Errorf("%s: writing weights of %q: %w", dest, ti.Name, err)
			}
			sum.BytesWritten += int64(len(r))
		}
		done += n
		bar.Add(4 * n)
	}
	st.fill(sum)
	return sum, nil
}

// dumpStats accumulates the summary over the finite weights.
type dumpStats struct {
	n, nan, inf int64
	min, max    float64
	sum, sumSq  float64
}

func (s *dumpStats) add(ws []float32) {
	for _, w := range ws {
		v := float64(w)
		switch {
		case math.IsNaN(v):
			s.nan++
			continue
		case math.IsInf(v, 0):
			s.inf++
			continue
		}
		if s.n == 0 || v < s.min {
			s.min = v
		}
		if s.n == 0 || v > s.max {
			s.max = v
		}
		s.n++
		s.sum += v
		s.sumSq += v * v
	}
}

func (s *dumpStats) fill(d *DumpSummary) {
	d.NaNs, d.Infs = s.nan, s.inf
	if s.n == 0 {
		return
	}
	mean, rms := s.sum/float64(s.n), math.Sqrt(s.sumSq/float64(s.n))
	d.Min, d.Max, d.Mean, d.RMS = &s.min, &s.max, &mean, &rms
}

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
	"golang.org/x/term"
)

func init() { register(newDumpCmd) }

// dumpChunkWeights bounds memory: the tensor is decoded this many weights
// (rounded down to whole blocks) at a time, whatever its size.
const dumpChunkWeights = 1 << 20

// dumpSummary is what --json prints. Statistics cover the finite values;
// NaNs and infinities are counted instead (JSON has no NaN).
type dumpSummary struct {
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

func newDumpCmd(env *cli.Env) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "dump FILE TENSOR",
		Short: "Write a tensor's weights, dequantized, as raw little-endian float32",
		Long: `Dequantize one tensor of a GGUF file exactly as ggml does and write its
weights as raw little-endian float32 (no header, ne0 fastest) to -o OUT
(written atomically) or to stdout.

With --json the raw weights go only to -o OUT (if given), and stdout gets a
JSON summary: tensor, type, dims, elements, bytes written, min/max/mean/rms
of the finite weights and counts of NaN and infinity. --json without -o
decodes the whole tensor for the summary and writes no weights anywhere.
Raw weights are never written to a terminal.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDump(cmd.Context(), env, args[0], args[1], out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the weights to this file instead of stdout")
	return cmd
}

func runDump(ctx context.Context, env *cli.Env, path, name, out string) error {
	if err := checkFiles([]string{path}, []string{out}); err != nil {
		return err
	}
	f, err := gguf.OpenModel(path, false)
	if err != nil {
		return err
	}
	defer f.Close()
	ti, ok := f.Tensor(name)
	if !ok {
		return fmt.Errorf("%s: tensor %q does not exist (the file has %d tensors)", path, name, len(f.Tensors))
	}
	if !quant.CanDequantize(ti.Type) {
		return fmt.Errorf("%s: tensor %q has type %s, which stratactl cannot dequantize", path, name, ti.Type)
	}
	sum := dumpSummary{File: path, Tensor: name, Type: ti.Type.String(), Dims: ti.Dims, Elements: ti.Elements(), Output: out,
		Path: "portable Go"}
	if kernels.HasVectorDequantize(ti.Type) {
		sum.Path = kernels.Describe()
	}

	var w io.Writer = io.Discard
	var atomic *gguf.AtomicFile
	switch {
	case out != "":
		if atomic, err = gguf.CreateAtomic(out); err != nil {
			return err
		}
		defer atomic.Abort() // no effect after Commit
		w = atomic
	case !env.JSON:
		if fd, ok := env.Out.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
			return errors.New("refusing to write raw float32 to a terminal: use -o FILE, redirect stdout, or --json for a summary")
		}
		w = env.Out
	}

	dest := out
	if dest == "" {
		dest = "stdout"
	}
	st, err := dumpTensor(ctx, env, f, ti, w, dest)
	if err != nil {
		return err
	}
	if atomic != nil {
		if err := atomic.Commit(); err != nil {
			return err
		}
	}
	if w != io.Discard {
		sum.BytesWritten = 4 * ti.Elements()
	}
	st.fill(&sum)
	switch {
	case env.JSON:
		return env.PrintJSON(sum)
	case out != "":
		fmt.Fprintf(env.Out, "%s: %s %s %v: %d weights, %d bytes written to %s\n",
			path, name, sum.Type, ti.Dims, sum.Elements, sum.BytesWritten, out)
	}
	return nil
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

func (s *dumpStats) fill(d *dumpSummary) {
	d.NaNs, d.Infs = s.nan, s.inf
	if s.n == 0 {
		return
	}
	mean, rms := s.sum/float64(s.n), math.Sqrt(s.sumSq/float64(s.n))
	d.Min, d.Max, d.Mean, d.RMS = &s.min, &s.max, &mean, &rms
}

// dumpTensor decodes ti a bounded chunk at a time (blocks never straddle
// rows, so the tensor is one run of blocks) and writes each chunk to w.
func dumpTensor(ctx context.Context, env *cli.Env, f *gguf.File, ti *gguf.TensorInfo, w io.Writer, dest string) (*dumpStats, error) {
	info, _ := quant.Info(ti.Type)
	be, bb := int64(info.BlockElements), int64(info.BlockBytes)
	total := ti.Elements()
	if want, err := quant.RowBytes(ti.Type, total); err != nil || want != ti.Size {
		return nil, fmt.Errorf("%s: tensor %q: %d bytes for %d weights of %s", f.Path, ti.Name, ti.Size, total, ti.Type)
	}
	chunk := max(dumpChunkWeights/be, 1) * be
	src := make([]byte, chunk/be*bb)
	dst := make([]float32, chunk)
	raw := make([]byte, 4*chunk)
	st := &dumpStats{}
	bar := env.NewProgress(4*total, "dump", cli.Bytes)
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
		if w != io.Discard {
			r := raw[:4*n]
			for i, v := range d {
				binary.LittleEndian.PutUint32(r[4*i:], math.Float32bits(v))
			}
			if _, err := w.Write(r); err != nil {
				return nil, fmt.Errorf("%s: writing weights of %q: %w", dest, ti.Name, err)
			}
		}
		done += n
		bar.Add(4 * n)
	}
	return st, nil
}

package convert

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// DefaultTensors selects the MoE expert tensors.
const DefaultTensors = `_exps\.`

// chunkElems is the target size of one unit of work: big enough to keep
// per-unit overhead low, small enough that a window of 2×jobs units stays
// in the tens of megabytes.
const chunkElems = 1 << 20

// copyChunk is the unit for tensors copied byte for byte.
const copyChunk = 8 << 20

// Q2Params are the Q2_0 quantizer's settings as recorded in outputs.
type Q2Params struct {
	Mode       quant.Q2Mode
	Candidates int // 0: the quantizer's default
}

func (q Q2Params) effectiveCandidates() int {
	if q.Candidates > 0 {
		return q.Candidates
	}
	return quant.DefaultQ2Candidates
}

// Q2ModeName is the flag spelling of a Q2 mode.
func Q2ModeName(m quant.Q2Mode) string {
	switch m {
	case quant.Q2GGML:
		return "ggml"
	case quant.Q2Field:
		return "field"
	default:
		return "search"
	}
}

// ParseQ2Mode accepts "search", "ggml" or "field".
func ParseQ2Mode(s string) (quant.Q2Mode, error) {
	switch s {
	case "search", "":
		return quant.Q2Search, nil
	case "ggml":
		return quant.Q2GGML, nil
	case "field":
		return quant.Q2Field, nil
	}
	return 0, fmt.Errorf("unknown --q2-mode %q (want search, ggml or field)", s)
}

// QuantizeConfig is what `stratactl quantize` does.
type QuantizeConfig struct {
	In, Out  string
	Type     quant.Type
	Tensors  string // regular expression over tensor names; "" means DefaultTensors
	Q2       Q2Params
	Imatrix  string // importance matrix file, or ""
	Jobs     int
	Version  string // tool version, recorded in the output
	Progress ProgressFunc
	// Split writes the output as shards (llama.cpp's gguf-split naming); the
	// zero value writes one file.
	Split gguf.SplitOptions
	// Experts, when set, encodes the expert matrices it handles (the
	// calibrated quantizer); Calib describes its input for the output.
	Experts ExpertQuantizer
	Calib   *CalibInfo
}

// TensorReport is one tensor's fate.
type TensorReport struct {
	Name     string  `json:"name"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	Elements int64   `json:"elements"`
	InBytes  int64   `json:"in_bytes"`
	OutBytes int64   `json:"out_bytes"`
	Action   string  `json:"action"` // "quantized", "copied" (type already right), "kept" (not selected)
	RelMSE   float64 `json:"rel_mse"`
	// CalibOutputErr is ‖(W−Ŵ)X‖/‖WX‖ on held-back calibration tokens, for
	// a tensor quantized against calibration inputs.
	CalibOutputErr *float64 `json:"calib_output_err,omitempty"`
	Note           string   `json:"note,omitempty"`
}

// QuantizeResult summarizes a quantize run.
type QuantizeResult struct {
	In         string         `json:"in"`
	Out        string         `json:"out"`
	Type       string         `json:"type"`
	Tensors    []TensorReport `json:"tensors"`
	Converted  int            `json:"converted"`
	Shards     []string       `json:"shards,omitempty"` // the files of a split output
	FileType   string         `json:"file_type"`        // what happened to general.file_type
	InBytes    int64          `json:"in_bytes"`
	OutBytes   int64          `json:"out_bytes"`
	Importance bool           `json:"imatrix"`
	Calib      *CalibInfo     `json:"calibration,omitempty"`
}

// llamaFtype maps a tensor type to the llama.cpp file type (llama.h,
// LLAMA_FTYPE_*) whose main type it is, where exactly one fits.
var llamaFtype = map[quant.Type]uint32{
	quant.F32: 0, quant.F16: 1, quant.Q4_0: 2, quant.Q4_1: 3, quant.Q8_0: 7, quant.Q5_0: 8, quant.Q5_1: 9,
	quant.Q6_K: 18, quant.IQ2_XXS: 19, quant.IQ2_XS: 20, quant.IQ3_XXS: 23, quant.IQ1_S: 24, quant.IQ4_NL: 25,
	quant.IQ3_S: 26, quant.IQ2_S: 28, quant.IQ4_XS: 30, quant.IQ1_M: 31, quant.BF16: 32, quant.TQ1_0: 36, quant.TQ2_0: 37,
}

// unit is one piece of work in a GGUF-to-GGUF stream.
type unit struct {
	tensor  int
	off     int64 // byte offset in the source tensor
	size    int64 // source bytes
	elems   int   // elements (when converting)
	matrix  int   // ne0×ne1 matrix index (the expert for 3-D tensors)
	convert bool
	outSize int64
}

type unitResult struct {
	data []byte
	st   errStats
}

// Quantize converts the selected tensors of cfg.In to cfg.Type and writes
// cfg.Out atomically.
func Quantize(ctx context.Context, cfg QuantizeConfig) (*QuantizeResult, error) {
	pattern := cfg.Tensors
	if pattern == "" {
		pattern = DefaultTensors
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("--tensors: %w", err)
	}
	f, err := openToQuantize(cfg.In, cfg.Type)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := notSameFile(cfg, f); err != nil {
		return nil, err
	}
	var imp *Importance
	if cfg.Imatrix != "" {
		if imp, err = LoadImportance(cfg.Imatrix, f); err != nil {
			return nil, err
		}
	}
	res := &QuantizeResult{In: cfg.In, Out: cfg.Out, Type: cfg.Type.String(), Importance: imp != nil, Calib: cfg.Calib}
	calibrated := func(t *gguf.TensorInfo) bool {
		return cfg.Experts != nil && cfg.Type == quant.Q2_0 && len(t.Dims) == 3 && cfg.Experts.Handles(t.Name)
	}

	specs := f.Specs()
	var units []unit
	var convElems, allElems int64
	matched := 0
	for i := range f.Tensors {
		t := &f.Tensors[i]
		rep := TensorReport{Name: t.Name, From: t.Type.String(), To: t.Type.String(), Elements: t.Elements(), InBytes: t.Size, Action: "kept"}
		if len(t.Dims) >= 2 {
			allElems += t.Elements()
		}
		selected := re.MatchString(t.Name)
		if selected {
			matched++
		}
		switch {
		case selected && len(t.Dims) < 2:
			rep.Note = "1-D tensor left as is"
		case selected && !strings.HasSuffix(t.Name, ".weight"):
			// Biases and scales stay exact, as llama.cpp leaves them.
			rep.Note = "not a weight matrix: left as is"
		case selected && t.Type == cfg.Type:
			rep.Action, rep.Note = "copied", "already "+cfg.Type.String()
		case selected:
			if !quant.CanDequantize(t.Type) {
				return nil, &gguf.FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("cannot decode type %s", t.Type)}
			}
			ti, _ := quant.Info(cfg.Type)
			if t.Dims[0]%int64(ti.BlockElements) != 0 {
				return nil, fmt.Errorf("%s: tensor %q: row length %d is not a multiple of %s's block of %d", f.Path, t.Name, t.Dims[0], cfg.Type, ti.BlockElements)
			}
			rep.Action, rep.To = "quantized", cfg.Type.String()
			if calibrated(t) {
				rep.Note = "calibrated (optq)"
			}
			specs[i].Type = cfg.Type
			convElems += t.Elements()
		}
		if rep.Action == "quantized" {
			us, err := convertUnits(f, i, cfg.Type, imp)
			if err != nil {
				return nil, err
			}
			units = append(units, us...)
		} else {
			for off := int64(0); off < t.Size; off += copyChunk {
				n := min(copyChunk, t.Size-off)
				units = append(units, unit{tensor: i, off: off, size: n, outSize: n})
			}
		}
		res.Tensors = append(res.Tensors, rep)
	}
	for _, r := range res.Tensors {
		if r.Action == "quantized" {
			res.Converted++
		}
	}
	if matched == 0 {
		return nil, fmt.Errorf("%s: --tensors %q selects none of its %d tensors: nothing to quantize", f.Path, pattern, len(f.Tensors))
	}
	// Everything selected is left as it is (not already of the type, just
	// not convertible): say why, tensor by tensor, rather than write a copy
	// of the input.
	var why []string
	for _, r := range res.Tensors {
		if r.Action == "copied" || r.Action == "quantized" {
			why = nil
			break
		}
		if r.Note != "" {
			why = append(why, fmt.Sprintf("%s (%s)", r.Name, r.Note))
		}
	}
	if len(why) > 0 {
		if len(why) > 3 {
			why = append(why[:3], fmt.Sprintf("and %d more", len(why)-3))
		}
		return nil, fmt.Errorf("%s: --tensors %q selects %d tensors, none of which it converts to %s: %s", f.Path, pattern, matched, cfg.Type, strings.Join(why, ", "))
	}

	kv := f.KV
	kv, res.FileType = quantizeKeys(f, kv, cfg, pattern, res.Converted, imp, 2*convElems > allElems)
	layout, err := gguf.Plan(kv, specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Out, err)
	}
	out, paths, err := gguf.CreateSplit(cfg.Out, kv, specs, cfg.Split)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, u := range units {
		total += u.size
	}
	prog := cfg.Progress.start(total, "quantize")
	defer prog.Done()
	stats := make([]errStats, len(f.Tensors))
	scratches := make(chan *scratch, jobsOr(cfg.Jobs))
	for range cap(scratches) {
		scratches <- &scratch{}
	}
	err = ordered(ctx, len(units), cfg.Jobs, func(ctx context.Context, k int) (unitResult, error) {
		u := units[k]
		t := &f.Tensors[u.tensor]
		src := make([]byte, u.size)
		if err := f.ReadTensorAt(t, src, u.off); err != nil {
			return unitResult{}, err
		}
		if !u.convert {
			return unitResult{data: src}, nil
		}
		s := <-scratches
		defer func() { scratches <- s }()
		dst := make([]byte, u.outSize)
		var opt *quant.QuantizeOptions
		if o, err := quantOptions(cfg.Type, cfg.Q2, imp, t, u.matrix); err != nil {
			return unitResult{}, err
		} else {
			opt = o
		}
		first := u.off / t.RowBytes() * t.Dims[0]
		expert := -1
		if gguf.IsExpertTensor(t.Name) && len(t.Dims) == 3 {
			expert = u.matrix
		}
		file, off := f.Locate(t)
		where := span{ctx: ctx, file: file, tensor: t.Name, expert: expert, firstElem: first, fileOff: off + u.off}
		if calibrated(t) {
			row0 := u.off/t.RowBytes() - int64(u.matrix)*t.Ne(1)
			data, st, err := calibratedSpan(ctx, cfg.Experts, t, cfg.Type, src, u.elems, s, u.matrix, row0, int64(u.elems)/t.Dims[0], where)
			return unitResult{data: data, st: st}, err
		}
		st, err := convertSpan(t.Type, cfg.Type, src, dst, u.elems, s, opt, where)
		return unitResult{data: dst, st: st}, err
	}, func(k int, r unitResult) error {
		if _, err := out.Write(r.data); err != nil {
			return fmt.Errorf("%s: %w", cfg.Out, err)
		}
		stats[units[k].tensor].add(r.st)
		prog.Add(units[k].size)
		return nil
	})
	if err != nil {
		out.Abort()
		return nil, interrupted(err, "quantize")
	}
	if err := out.Commit(); err != nil {
		return nil, err
	}
	for i := range res.Tensors {
		res.Tensors[i].RelMSE = stats[i].RelMSE()
		if cfg.Experts != nil && res.Tensors[i].Note == "calibrated (optq)" {
			if e, ok := cfg.Experts.OutputError(res.Tensors[i].Name); ok {
				res.Tensors[i].CalibOutputErr = &e
			}
		}
		res.Tensors[i].OutBytes = layout.Sizes[i]
		res.InBytes += res.Tensors[i].InBytes
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		res.OutBytes += st.Size()
	}
	if len(paths) > 1 {
		res.Shards = paths
	}
	return res, nil
}

// convertUnits splits tensor i into units of whole rows that never cross a
// matrix (ne0×ne1) boundary, so each unit has one importance vector.
func convertUnits(f *gguf.File, i int, to quant.Type, imp *Importance) ([]unit, error) {
	t := &f.Tensors[i]
	ne0 := t.Dims[0]
	ne1 := t.Ne(1)
	rows := t.Rows()
	rb := t.RowBytes()
	outRow, err := quant.RowBytes(to, ne0)
	if err != nil {
		return nil, err
	}
	per := max(1, chunkElems/ne0)
	var us []unit
	for r := int64(0); r < rows; {
		m := r / ne1
		end := min(r+per, (m+1)*ne1)
		us = append(us, unit{tensor: i, off: r * rb, size: (end - r) * rb, elems: int((end - r) * ne0), matrix: int(m), convert: true, outSize: (end - r) * outRow})
		r = end
	}
	return us, nil
}

func quantOptions(to quant.Type, q2 Q2Params, imp *Importance, t *gguf.TensorInfo, matrix int) (*quant.QuantizeOptions, error) {
	opt := &quant.QuantizeOptions{Q2Mode: q2.Mode, Q2Candidates: q2.Candidates}
	if imp != nil {
		w, err := imp.For(t.Name, t.Dims[0], matrix, int(t.Ne(2)))
		if err != nil {
			return nil, err
		}
		if w != nil {
			opt.Importance, opt.RowLen = w, int(t.Dims[0])
		}
	}
	return opt, nil
}

// openToQuantize opens the model in (one file or a split) to requantize to
// type to, refusing a type this build cannot quantize to before any work.
func openToQuantize(in string, to quant.Type) (*gguf.File, error) {
	if !quant.CanQuantize(to) {
		return nil, fmt.Errorf("cannot quantize to %s (this build quantizes to %s)", to, quantizableTypes())
	}
	return gguf.OpenModel(in, false)
}

func quantizableTypes() string {
	s := ""
	for t := range quant.NumTypes {
		if quant.CanQuantize(quant.Type(t)) {
			if s != "" {
				s += ", "
			}
			s += quant.Type(t).String()
		}
	}
	return s
}

// setKV replaces key's value in place, or appends it.
func setKV(kv []gguf.KV, key string, v gguf.Value) []gguf.KV {
	for i := range kv {
		if kv[i].Key == key {
			kv[i].Value = v
			return kv
		}
	}
	return append(kv, gguf.KV{Key: key, Value: v})
}

func quantizeKeys(f *gguf.File, src []gguf.KV, cfg QuantizeConfig, pattern string, converted int, imp *Importance, majority bool) ([]gguf.KV, string) {
	kv := append([]gguf.KV(nil), src...)
	note := ""
	old, hasOld := f.Get("general.file_type")
	ft, known := llamaFtype[cfg.Type]
	switch {
	case converted == 0:
		note = "unchanged: no tensor was converted"
	case !known:
		note = fmt.Sprintf("unchanged: llama.cpp has no file type for %s", cfg.Type)
	case !majority:
		note = fmt.Sprintf("unchanged: the %s tensors hold under half of the weights", cfg.Type)
	default:
		kv = setKV(kv, "general.file_type", gguf.Uint32(ft))
		note = fmt.Sprintf("set to %d (llama.cpp's file type for %s)", ft, cfg.Type)
	}
	if hasOld {
		if n, ok := old.AsUint64(); ok {
			kv = setKV(kv, "stratactl.quantize.source_file_type", gguf.Uint32(uint32(n)))
		}
	}
	kv = setKV(kv, "stratactl.version", gguf.String(cfg.Version))
	kv = setKV(kv, "stratactl.quantize.type", gguf.String(cfg.Type.String()))
	kv = setKV(kv, "stratactl.quantize.tensors", gguf.String(pattern))
	kv = setKV(kv, "stratactl.quantize.converted", gguf.Uint32(uint32(converted)))
	kv = setKV(kv, "stratactl.quantize.file_type", gguf.String(note))
	if cfg.Type == quant.Q2_0 {
		kv = setKV(kv, "stratactl.quantize.q2_mode", gguf.String(Q2ModeName(cfg.Q2.Mode)))
		kv = setKV(kv, "stratactl.quantize.q2_candidates", gguf.Uint32(uint32(cfg.Q2.effectiveCandidates())))
	}
	if imp != nil {
		kv = setKV(kv, "stratactl.quantize.imatrix", gguf.String(filepath.Base(cfg.Imatrix)))
	}
	if cfg.Calib != nil {
		kv = calibKeys(kv, cfg.Calib)
	}
	return kv, note
}

// notSameFile refuses an output that is one of the inputs (the model or one
// of its shards, the importance matrix): writing it would replace an input
// while it is being read.
func notSameFile(cfg QuantizeConfig, in *gguf.File) error {
	inputs := []string{in.Path, cfg.Imatrix}
	for _, sh := range in.Shards {
		inputs = append(inputs, sh.Path)
	}
	return osutil.CheckDistinct(inputs, gguf.OutputPaths(cfg.Out, cfg.Split))
}

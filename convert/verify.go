package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// maxFindings bounds the failures kept in a report: a file damaged
// everywhere should not make verify use memory in proportion to it.
const maxFindings = 1000

// VerifyConfig is what `stratactl verify` does.
type VerifyConfig struct {
	Path     string // a pack folder or a GGUF file
	Source   string // the source GGUF, or ""
	Imatrix  string // the importance matrix the checked file was made with, when not recorded or moved
	Jobs     int
	Progress ProgressFunc
}

// Finding is one failed check, located as precisely as the data allows.
type Finding struct {
	Check  string `json:"check"`
	File   string `json:"file,omitempty"`
	Offset int64  `json:"offset"` // -1 when not about one byte
	Layer  int    `json:"layer"`  // block index, -1 when not about one layer
	Expert int    `json:"expert"` // kept expert id, -1 when not about one expert
	Part   string `json:"part,omitempty"`
	Msg    string `json:"message"`
}

func (f Finding) String() string {
	s := f.Check + ": "
	if f.File != "" {
		s += f.File
		if f.Offset >= 0 {
			s += fmt.Sprintf(" byte %d", f.Offset)
		}
		s += ": "
	}
	if f.Layer >= 0 {
		s += fmt.Sprintf("layer %d ", f.Layer)
	}
	if f.Expert >= 0 {
		s += fmt.Sprintf("expert %d ", f.Expert)
	}
	if f.Part != "" {
		s += fmt.Sprintf("part %s ", f.Part)
	}
	return s + f.Msg
}

// Check is one passed or failed group of checks.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// TensorCompare is a tensor of a checked GGUF against its source.
type TensorCompare struct {
	Name      string  `json:"name"`
	Type      string  `json:"type"`
	Source    string  `json:"source_type"`
	RelMSE    float64 `json:"rel_mse"`
	Requant   float64 `json:"requant_rel_mse"` // what the quantizer achieves on the source
	Identical bool    `json:"identical"`       // bytes equal the re-quantized (or copied) source
}

// VerifyReport is verify's result.
type VerifyReport struct {
	Path      string              `json:"path"`
	Kind      string              `json:"kind"` // "pack" or "gguf"
	Source    string              `json:"source,omitempty"`
	OK        bool                `json:"ok"`
	Checks    []Check             `json:"checks"`
	Failures  []Finding           `json:"failures"`
	Omitted   int                 `json:"failures_omitted"`
	Layers    []strata.LayerError `json:"layers,omitempty"`
	Tensors   []TensorCompare     `json:"tensors,omitempty"`
	RelMSE    float64             `json:"rel_mse,omitempty"`
	Slots     int                 `json:"slots_checked,omitempty"`
	SlotBytes uint64              `json:"slot_bytes,omitempty"`
}

func (r *VerifyReport) fail(f Finding) {
	if len(r.Failures) >= maxFindings {
		r.Omitted++
		return
	}
	r.Failures = append(r.Failures, f)
}

func (r *VerifyReport) failf(check, file string, off int64, format string, args ...any) {
	r.fail(Finding{Check: check, File: file, Offset: off, Layer: -1, Expert: -1, Msg: fmt.Sprintf(format, args...)})
}

// check records a group's outcome: failed when it added findings.
func (r *VerifyReport) check(name string, before int, detail string) {
	r.Checks = append(r.Checks, Check{Name: name, OK: len(r.Failures)+r.Omitted == before, Detail: detail})
}

func (r *VerifyReport) nfail() int { return len(r.Failures) + r.Omitted }

// findingOf turns an error into a finding, keeping the location a strata
// or gguf error carries.
func findingOf(check string, err error) Finding {
	f := Finding{Check: check, Offset: -1, Layer: -1, Expert: -1, Msg: err.Error()}
	var se *strata.FormatError
	var ge *gguf.FormatError
	switch {
	case errors.As(err, &se):
		f.File, f.Offset, f.Layer, f.Expert, f.Part, f.Msg = se.File, se.Offset, se.Layer, se.Expert, se.Part, se.Msg
	case errors.As(err, &ge):
		f.File, f.Offset, f.Msg = ge.File, ge.Offset, ge.Msg
		switch {
		case ge.Tensor != "":
			f.Msg = fmt.Sprintf("tensor %q: %s", ge.Tensor, ge.Msg)
		case ge.Key != "":
			f.Msg = fmt.Sprintf("key %q: %s", ge.Key, ge.Msg)
		}
	}
	return f
}

// Verify checks a pack folder or a GGUF file, and with cfg.Source compares
// it with the model it was made from. Problems in the data are findings in
// the report (OK false); the error is for failures to run at all.
func Verify(ctx context.Context, cfg VerifyConfig) (*VerifyReport, error) {
	st, err := os.Stat(cfg.Path)
	if err != nil {
		return nil, err
	}
	r := &VerifyReport{Path: cfg.Path, Source: cfg.Source}
	if st.IsDir() {
		r.Kind = "pack"
		err = verifyPack(ctx, cfg, r)
	} else {
		r.Kind = "gguf"
		err = verifyGGUF(ctx, cfg, r)
	}
	if err != nil {
		return nil, interrupted(err, "verify")
	}
	r.OK = r.nfail() == 0
	return r, nil
}

// checkGGUFPadding reports nonzero bytes between the header and the data
// and between tensors, and a file that does not end with the last tensor's
// padding.
func checkGGUFPadding(f *gguf.File, r *VerifyReport, check string) error {
	type rng struct{ start, end int64 }
	var used []rng
	for i := range f.Tensors {
		t := &f.Tensors[i]
		used = append(used, rng{f.DataStart(t), f.DataStart(t) + t.Size})
	}
	sort.Slice(used, func(a, b int) bool { return used[a].start < used[b].start })
	var gaps []rng
	pos := f.HeaderEnd
	for _, u := range used {
		if u.start > pos {
			gaps = append(gaps, rng{pos, u.start})
		}
		pos = max(pos, u.end)
	}
	if pos < f.Size {
		gaps = append(gaps, rng{pos, f.Size})
	}
	for _, g := range gaps {
		if g.end-g.start > f.Alignment {
			r.failf(check, f.Path, g.start, "%d bytes between data regions [%d, %d): more than the alignment %d", g.end-g.start, g.start, g.end, f.Alignment)
			continue
		}
		b := make([]byte, g.end-g.start)
		if _, err := f.ReaderAt().ReadAt(b, g.start); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		for i, c := range b {
			if c != 0 {
				r.failf(check, f.Path, g.start+int64(i), "padding byte is %#02x, want 0", c)
				break
			}
		}
	}
	return nil
}

// checkDecodes decodes every tensor of f that has a decoder, a chunk at a
// time, and reports NaN or infinite values with the block's offset.
func checkDecodes(ctx context.Context, f *gguf.File, r *VerifyReport, check string, jobs int, skip func(t *gguf.TensorInfo) bool) (int, error) {
	var us []unit
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if !quant.CanDequantize(t.Type) || (skip != nil && skip(t)) {
			continue
		}
		per := max(1, chunkElems/t.Dims[0])
		rb := t.RowBytes()
		for row := int64(0); row < t.Rows(); row += per {
			n := min(per, t.Rows()-row)
			us = append(us, unit{tensor: i, off: row * rb, size: n * rb, elems: int(n * t.Dims[0])})
		}
	}
	type res struct{ f *Finding }
	scratches := make(chan *scratch, jobsOr(jobs))
	for range cap(scratches) {
		scratches <- &scratch{}
	}
	err := ordered(ctx, len(us), jobs, func(ctx context.Context, k int) (res, error) {
		u := us[k]
		t := &f.Tensors[u.tensor]
		b := make([]byte, u.size)
		if err := f.ReadTensorAt(t, b, u.off); err != nil {
			return res{}, err
		}
		s := <-scratches
		defer func() { scratches <- s }()
		x, _ := s.floats(u.elems)
		if err := dequantize(t.Type, b, x); err != nil {
			return res{}, err
		}
		if i := firstNonFinite(x); i >= 0 {
			ti, _ := quant.Info(t.Type)
			fd := Finding{Check: check, File: f.Path, Offset: f.DataStart(t) + u.off + int64(i/ti.BlockElements*ti.BlockBytes), Layer: -1, Expert: -1,
				Msg: fmt.Sprintf("tensor %q element %d decodes to %v", t.Name, u.off/t.RowBytes()*t.Dims[0]+int64(i), x[i])}
			return res{&fd}, nil
		}
		return res{}, nil
	}, func(k int, x res) error {
		if x.f != nil {
			r.fail(*x.f)
		}
		return nil
	})
	return len(us), err
}

// verifyGGUF checks any GGUF file: structure (the reader), padding, that
// every tensor decodes to finite values, and with a source, every tensor
// against the source tensor of the same name.
func verifyGGUF(ctx context.Context, cfg VerifyConfig, r *VerifyReport) error {
	f, err := gguf.Open(cfg.Path)
	if err != nil {
		r.fail(findingOf("gguf.structure", err))
		r.check("gguf.structure", 0, "header, metadata and tensor table")
		return nil
	}
	defer f.Close()
	r.check("gguf.structure", 0, fmt.Sprintf("GGUF v%d, %d keys, %d tensors, alignment %d", f.Version, len(f.KV), len(f.Tensors), f.Alignment))
	n := r.nfail()
	if err := checkGGUFPadding(f, r, "gguf.padding"); err != nil {
		return err
	}
	r.check("gguf.padding", n, "every byte between header, tensors and end of file is zero")
	n = r.nfail()
	chunks, err := checkDecodes(ctx, f, r, "gguf.values", cfg.Jobs, nil)
	if err != nil {
		return err
	}
	r.check("gguf.values", n, fmt.Sprintf("%d chunks decoded, no NaN or Inf", chunks))
	if cfg.Source == "" {
		return nil
	}
	src, err := gguf.OpenModel(cfg.Source, false)
	if err != nil {
		return err
	}
	defer src.Close()
	n = r.nfail()
	q2 := Q2Params{}
	if s, err := f.String("stratactl.quantize.q2_mode"); err == nil {
		if q2.Mode, err = ParseQ2Mode(s); err != nil {
			r.failf("gguf.source", f.Path, f.KeyOffset("stratactl.quantize.q2_mode"), "%v", err)
		}
	}
	if c, err := f.Uint32("stratactl.quantize.q2_candidates"); err == nil {
		q2.Candidates = int(c)
	}
	var imp *Importance
	if name, err := f.String("stratactl.quantize.imatrix"); err == nil {
		if cfg.Imatrix == "" {
			r.failf("gguf.source", f.Path, f.KeyOffset("stratactl.quantize.imatrix"), "made with the importance matrix %q: pass it with --imatrix to re-quantize the source as the file was", name)
			r.check("gguf.source", n, "tensors compared with the source")
			return nil
		}
		if imp, err = LoadImportance(cfg.Imatrix); err != nil {
			return err
		}
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s, ok := src.Tensor(t.Name)
		if !ok {
			r.failf("gguf.source", f.Path, t.InfoOffset, "tensor %q is not in the source %s", t.Name, src.Path)
			continue
		}
		if !sameDims(s.Dims, t.Dims) {
			r.failf("gguf.source", f.Path, t.InfoOffset, "tensor %q has ne %v, the source %v", t.Name, t.Dims, s.Dims)
			continue
		}
		tc, err := compareTensor(ctx, f, t, src, s, q2, imp, r)
		if err != nil {
			return err
		}
		r.Tensors = append(r.Tensors, tc)
	}
	for i := range src.Tensors {
		if _, ok := f.Tensor(src.Tensors[i].Name); !ok {
			r.failf("gguf.source", cfg.Path, -1, "source tensor %q is missing", src.Tensors[i].Name)
		}
	}
	r.check("gguf.source", n, fmt.Sprintf("%d tensors compared with %s: copies byte-identical, conversions no worse than the quantizer", len(r.Tensors), cfg.Source))
	return nil
}

func sameDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// compareTensor compares t (in f) with its source s, a chunk at a time:
// same type means same bytes; otherwise t's error against the source must
// not exceed that of re-quantizing the source with the recorded settings.
func compareTensor(ctx context.Context, f *gguf.File, t *gguf.TensorInfo, src *gguf.File, s *gguf.TensorInfo, q2 Q2Params, imp *Importance, r *VerifyReport) (TensorCompare, error) {
	tc := TensorCompare{Name: t.Name, Type: t.Type.String(), Source: s.Type.String(), Identical: true}
	per := max(1, chunkElems/t.Dims[0])
	ne1 := t.Ne(1)
	var got, want errStats
	var sc scratch
	for row := int64(0); row < t.Rows(); {
		if err := ctx.Err(); err != nil {
			return tc, context.Cause(ctx)
		}
		m := row / ne1
		end := min(row+per, (m+1)*ne1)
		n := end - row
		sb := make([]byte, n*s.RowBytes())
		tb := make([]byte, n*t.RowBytes())
		if err := src.ReadTensorAt(s, sb, row*s.RowBytes()); err != nil {
			return tc, err
		}
		if err := f.ReadTensorAt(t, tb, row*t.RowBytes()); err != nil {
			return tc, err
		}
		if s.Type == t.Type {
			if i := firstDiff(sb, tb); i >= 0 {
				tc.Identical = false
				r.failf("gguf.source", f.Path, f.DataStart(t)+row*t.RowBytes()+int64(i), "tensor %q: byte differs from the source's (same type %s, so it must be a copy)", t.Name, t.Type)
				return tc, nil
			}
			row = end
			continue
		}
		if !quant.CanDequantize(s.Type) || !quant.CanDequantize(t.Type) || !quant.CanQuantize(t.Type) {
			return tc, fmt.Errorf("tensor %q: cannot compare %s with %s", t.Name, t.Type, s.Type)
		}
		opt, err := quantOptions(t.Type, q2, imp, s, int(m))
		if err != nil {
			return tc, err
		}
		expect := make([]byte, len(tb))
		st, err := convertSpan(s.Type, t.Type, sb, expect, int(n*t.Dims[0]), &sc, opt, span{ctx: ctx, file: src.Path, tensor: s.Name, expert: -1, firstElem: row * t.Dims[0], fileOff: src.DataStart(s) + row*s.RowBytes()})
		if err != nil {
			return tc, err
		}
		want.add(st)
		x, ye := sc.floats(int(n * t.Dims[0]))
		y := sc.extra(len(x))
		if err := dequantize(t.Type, tb, y); err != nil {
			return tc, err
		}
		got.add(measure(x, y))
		ti, _ := quant.Info(t.Type)
		if i := firstNonFinite(y); i >= 0 {
			r.failf("gguf.source", f.Path, f.DataStart(t)+row*t.RowBytes()+int64(i/ti.BlockElements*ti.BlockBytes), "tensor %q: element %d decodes to %v", t.Name, row*t.Dims[0]+int64(i), y[i])
		}
		if !bytes.Equal(expect, tb) {
			tc.Identical = false
			if b := worseBlock(t.Type, x, y, ye); b >= 0 {
				r.failf("gguf.source", f.Path, f.DataStart(t)+row*t.RowBytes()+int64(b*ti.BlockBytes), "tensor %q: block %d (elements from %d) is further from the source than %s quantization of the source gives", t.Name, b, row*t.Dims[0]+int64(b*ti.BlockElements), t.Type)
			}
		}
		row = end
	}
	tc.RelMSE, tc.Requant = got.RelMSE(), want.RelMSE()
	return tc, nil
}

// worseBlock is the acceptance rule for converted data that is not exactly
// the re-quantized source: block by block, its squared error against the
// source x may exceed that of the re-quantized data (decoded as ye) by 1% at
// most. It returns the first block that is worse, or -1. A damaged byte
// almost always makes its block worse than the quantizer's choice, while a
// quantizer that changed since the file was written passes.
func worseBlock(t quant.Type, x, yg, ye []float32) int {
	ti, _ := quant.Info(t)
	be := ti.BlockElements
	for b := 0; b+be <= len(x); b += be {
		var eg, ee, en float64
		for i := b; i < b+be; i++ {
			dg := float64(x[i]) - float64(yg[i])
			de := float64(x[i]) - float64(ye[i])
			eg += dg * dg
			ee += de * de
			en += float64(x[i]) * float64(x[i])
		}
		if !(eg <= ee*1.01+1e-9*en+1e-30) {
			return b / be
		}
	}
	return -1
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

func verifyPack(ctx context.Context, cfg VerifyConfig, r *VerifyReport) error {
	dir := cfg.Path
	n := r.nfail()
	for _, name := range strata.PackFiles {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			r.failf("pack.files", filepath.Join(dir, name), -1, "missing or not a regular file")
		}
	}
	r.check("pack.files", n, "model.gguf, model.experts, keep.strp and manifest.json present")
	if r.nfail() != n {
		return nil
	}

	// model.experts: header, table, table padding.
	xpath := filepath.Join(dir, strata.ExpertsFile)
	n = r.nfail()
	x, err := strata.OpenExperts(xpath)
	if err != nil {
		r.fail(findingOf("experts.header", err))
	}
	if x != nil {
		defer x.Close()
		r.SlotBytes = x.SlotBytes
		r.check("experts.header", n, fmt.Sprintf("STRX v%d: %d layers × %d experts, parts %s/%s/%s, slots of %d bytes (payload %d) from byte %d, %d bytes",
			x.Version, x.NLayer(), x.NExpert, x.Parts[0].Type, x.Parts[1].Type, x.Parts[2].Type, x.SlotBytes, x.PayloadBytes(), x.DataOffset, x.FileBytes))
	} else {
		r.check("experts.header", n, "STRX header, slot table and table padding")
	}

	// keep.strp.
	kpath := filepath.Join(dir, strata.KeepFile)
	n = r.nfail()
	keep, err := strata.ReadKeep(kpath)
	if err != nil {
		r.fail(findingOf("keep", err))
	}
	if keep != nil && x != nil {
		if len(keep.Layers) != x.NLayer() {
			r.failf("keep", kpath, 8, "%d layers, model.experts has %d", len(keep.Layers), x.NLayer())
		} else {
			for i := range keep.Layers {
				if keep.Layers[i] != x.Layers[i] {
					r.failf("keep", kpath, int64(24+4*i), "layer %d is block %d, model.experts says block %d", i, keep.Layers[i], x.Layers[i])
				}
			}
		}
		if keep.NKeep() != int(x.NExpert) {
			r.failf("keep", kpath, 16, "n_keep %d, model.experts stores %d experts per layer", keep.NKeep(), x.NExpert)
		}
	}
	if keep != nil {
		r.check("keep", n, fmt.Sprintf("STRP: %d layers, %d of %d experts kept, ranking of %d, statistics: %v", len(keep.Layers), keep.NKeep(), keep.NExpert, keep.NRank(), keep.Stats != nil))
	} else {
		r.check("keep", n, "STRP keep map")
	}

	// model.gguf.
	mpath := filepath.Join(dir, strata.ModelFile)
	n = r.nfail()
	mf, err := gguf.Open(mpath)
	if err != nil {
		r.fail(findingOf("model.structure", err))
		r.check("model.structure", n, "GGUF")
	} else {
		defer mf.Close()
		r.check("model.structure", n, fmt.Sprintf("GGUF v%d, %d keys, %d tensors", mf.Version, len(mf.KV), len(mf.Tensors)))
		n = r.nfail()
		if err := checkGGUFPadding(mf, r, "model.padding"); err != nil {
			return err
		}
		r.check("model.padding", n, "every byte between header, tensors and end of file is zero")
		n = r.nfail()
		checkPackKeys(mf, x, keep, xpath, r)
		r.check("model.keys", n, "strata.* keys and the expert count agree with model.experts and keep.strp")
		n = r.nfail()
		routers, err := checkRouters(mf, x, r)
		if err != nil {
			return err
		}
		r.check("model.routers", n, fmt.Sprintf("%d Q8_0 router copies within Q8_0 rounding of their routers", routers))
		n = r.nfail()
		chunks, err := checkDecodes(ctx, mf, r, "model.values", cfg.Jobs, nil)
		if err != nil {
			return err
		}
		r.check("model.values", n, fmt.Sprintf("%d chunks decoded, no NaN or Inf", chunks))
	}

	// manifest.json.
	n = r.nfail()
	man, err := checkManifest(ctx, dir, cfg.Source, r)
	if err != nil {
		return err
	}
	r.check("manifest", n, "outputs' sizes and sha256 match; inputs checked where given")

	if x == nil || keep == nil {
		return nil
	}
	var src *gguf.File
	var sm *gguf.MoE
	var imp *Importance
	var params *strata.PackParams
	if cfg.Source != "" {
		n = r.nfail()
		if src, err = gguf.OpenModel(cfg.Source, false); err != nil {
			return err
		}
		defer src.Close()
		if sm, err = src.MoE(); err != nil {
			return err
		}
		if man != nil {
			params = &man.Parameters
			path := params.Imatrix
			if cfg.Imatrix != "" {
				path = cfg.Imatrix
			}
			if path != "" {
				if imp, err = LoadImportance(path); err != nil {
					r.failf("source", path, -1, "the pack was made with an importance matrix (%s), which cannot be read now: %v", params.Imatrix, err)
				} else {
					defer imp.Close()
				}
			}
		} else {
			r.failf("source", filepath.Join(dir, strata.ManifestFile), -1, "no readable manifest: the quantizer settings to compare with are unknown")
		}
		if err := keep.Fits(sm, src.Path); err != nil {
			r.failf("source", kpath, -1, "%v", err)
			src = nil
		}
		if mf != nil && src != nil {
			compareDense(mf, src, sm, keep, r)
		}
		r.check("source.dense", n, "every non-expert tensor of model.gguf equals the source's (kept rows for routers)")
	}
	if src != nil && !keepMatchesSlots(keep, x) {
		// Without a keep entry for every slot there is no saying which source
		// expert a slot holds.
		r.failf("source", kpath, -1, "keep.strp keeps %d experts in each of %d layers, but model.experts holds %d in each of %d: slots cannot be matched with source experts", keep.NKeep(), len(keep.Keep), x.NExpert, x.NLayer())
		src = nil
	}
	n = r.nfail()
	if err := verifySlots(ctx, cfg, x, keep, src, sm, params, imp, man, r); err != nil {
		return err
	}
	detail := fmt.Sprintf("%d slots: CRC-32C, zero padding, every block decodes to finite values", r.Slots)
	if src != nil {
		detail += fmt.Sprintf("; compared with %s through the keep map", cfg.Source)
	}
	r.check("experts.slots", n, detail)
	return nil
}

func blocksOf(m *gguf.MoE) []uint32 {
	out := make([]uint32, len(m.Layers))
	for i, l := range m.Layers {
		out[i] = uint32(l.Block)
	}
	return out
}

func checkPackKeys(mf *gguf.File, x *strata.Experts, keep *strata.Keep, xpath string, r *VerifyReport) {
	key := func(k string) (uint64, bool) {
		v, ok := mf.Get(k)
		if !ok {
			r.failf("model.keys", mf.Path, -1, "key %s missing", k)
			return 0, false
		}
		u, ok := v.AsUint64()
		if !ok {
			r.failf("model.keys", mf.Path, mf.KeyOffset(k), "key %s holds %s, want an integer", k, v.TypeName())
		}
		return u, ok
	}
	if v, ok := key(strata.KeyFormatVersion); ok && v != strata.FormatVersion {
		r.failf("model.keys", mf.Path, mf.KeyOffset(strata.KeyFormatVersion), "%s = %d, this tool knows %d", strata.KeyFormatVersion, v, strata.FormatVersion)
	}
	if s, err := mf.String(strata.KeyExpertsFile); err != nil {
		r.failf("model.keys", mf.Path, mf.KeyOffset(strata.KeyExpertsFile), "%v", err)
	} else if s != strata.ExpertsFile {
		r.failf("model.keys", mf.Path, mf.KeyOffset(strata.KeyExpertsFile), "%s = %q, want %q", strata.KeyExpertsFile, s, strata.ExpertsFile)
	}
	st, _ := os.Stat(xpath)
	if v, ok := key(strata.KeyExpertsBytes); ok && st != nil && v != uint64(st.Size()) {
		r.failf("model.keys", mf.Path, mf.KeyOffset(strata.KeyExpertsBytes), "%s = %d, model.experts has %d bytes", strata.KeyExpertsBytes, v, st.Size())
	}
	if v, ok := key(strata.KeySlotBytes); ok && x != nil && v != x.SlotBytes {
		r.failf("model.keys", mf.Path, mf.KeyOffset(strata.KeySlotBytes), "%s = %d, model.experts says %d", strata.KeySlotBytes, v, x.SlotBytes)
	}
	if v, ok := key(strata.KeySourceNExpert); ok && keep != nil && v != uint64(keep.NExpert) {
		r.failf("model.keys", mf.Path, mf.KeyOffset(strata.KeySourceNExpert), "%s = %d, keep.strp says %d", strata.KeySourceNExpert, v, keep.NExpert)
	}
	ck := mf.ArchKey("expert_count")
	if v, ok := key(ck); ok && x != nil && v != uint64(x.NExpert) {
		r.failf("model.keys", mf.Path, mf.KeyOffset(ck), "%s = %d, model.experts stores %d per layer", ck, v, x.NExpert)
	}
	if used, err := mf.Uint32(mf.ArchKey("expert_used_count")); err == nil && x != nil && used > x.NExpert {
		r.failf("model.keys", mf.Path, mf.KeyOffset(mf.ArchKey("expert_used_count")), "%d experts used per token, only %d stored", used, x.NExpert)
	}
	if x != nil {
		if v, err := mf.Uint64(mf.ArchKey("embedding_length")); err == nil && (v != uint64(x.Parts[0].Ne0) || v != uint64(x.Parts[2].Ne1)) {
			r.failf("model.keys", mf.Path, mf.KeyOffset(mf.ArchKey("embedding_length")), "n_embd %d does not match the expert parts' shapes", v)
		}
		if v, err := mf.Uint64(mf.ArchKey("expert_feed_forward_length")); err == nil && (v != uint64(x.Parts[0].Ne1) || v != uint64(x.Parts[2].Ne0)) {
			r.failf("model.keys", mf.Path, mf.KeyOffset(mf.ArchKey("expert_feed_forward_length")), "n_ff_exp %d does not match the expert parts' shapes", v)
		}
	}
	for i := range mf.Tensors {
		t := &mf.Tensors[i]
		if b, rest, ok := gguf.SplitBlockName(t.Name); ok && (rest == "ffn_gate_exps.weight" || rest == "ffn_up_exps.weight" || rest == "ffn_down_exps.weight") {
			r.failf("model.keys", mf.Path, t.InfoOffset, "block %d's expert matrix %q belongs in model.experts", b, t.Name)
		}
	}
}

// checkRouters checks each stored layer's router and its Q8_0 copy: shapes,
// and every element of the copy within Q8_0's rounding of the router's.
func checkRouters(mf *gguf.File, x *strata.Experts, r *VerifyReport) (int, error) {
	if x == nil {
		return 0, nil
	}
	count := 0
	for _, b := range x.Layers {
		name := fmt.Sprintf("blk.%d.ffn_gate_inp.weight", b)
		rt, ok := mf.Tensor(name)
		if !ok {
			r.failf("model.routers", mf.Path, -1, "router %s missing", name)
			continue
		}
		cp, ok := mf.Tensor(strata.RouterCopyName(int(b)))
		if !ok {
			r.failf("model.routers", mf.Path, -1, "router copy %s missing", strata.RouterCopyName(int(b)))
			continue
		}
		want := []int64{int64(x.Parts[0].Ne0), int64(x.NExpert)}
		if !sameDims(rt.Dims, want) {
			r.failf("model.routers", mf.Path, rt.InfoOffset, "%s has ne %v, want %v", name, rt.Dims, want)
			continue
		}
		if cp.Type != quant.Q8_0 || !sameDims(cp.Dims, want) {
			r.failf("model.routers", mf.Path, cp.InfoOffset, "%s is %s %v, want Q8_0 %v", cp.Name, cp.Type, cp.Dims, want)
			continue
		}
		if !quant.CanDequantize(rt.Type) {
			r.failf("model.routers", mf.Path, rt.InfoOffset, "%s: cannot decode %s", name, rt.Type)
			continue
		}
		rb, err := mf.ReadTensor(rt)
		if err != nil {
			return count, err
		}
		cb, err := mf.ReadTensor(cp)
		if err != nil {
			return count, err
		}
		xs := make([]float32, rt.Elements())
		ys := make([]float32, rt.Elements())
		if err := dequantize(rt.Type, rb, xs); err != nil {
			return count, err
		}
		if err := dequantize(quant.Q8_0, cb, ys); err != nil {
			return count, err
		}
		for blk := 0; blk < len(xs); blk += 32 {
			var amax float64
			for _, v := range xs[blk : blk+32] {
				amax = math.Max(amax, math.Abs(float64(v)))
			}
			// Half a step of 127 levels, plus the fp16 rounding of the scale
			// (2^-11 relative) times the largest code.
			tol := amax/127*(0.5+127.0/2048) + 1e-30
			bad := -1
			for k := blk; k < blk+32; k++ {
				if d := math.Abs(float64(xs[k]) - float64(ys[k])); !(d <= tol) {
					bad = k
					break
				}
			}
			if bad >= 0 {
				r.failf("model.routers", mf.Path, mf.DataStart(cp)+int64(blk/32*34), "%s element %d is %v, router %s has %v (Q8_0 allows ±%.3g)", cp.Name, bad, ys[bad], name, xs[bad], tol)
				break
			}
		}
		count++
	}
	return count, nil
}

func checkManifest(ctx context.Context, dir, source string, r *VerifyReport) (*strata.Manifest, error) {
	path := filepath.Join(dir, strata.ManifestFile)
	b, err := osutil.ReadFile(ctx, path, osutil.MaxMetaBytes)
	if err != nil {
		r.failf("manifest", path, -1, "%v", err)
		return nil, nil
	}
	man, err := strata.ParseManifest(b, path)
	if err != nil {
		r.fail(findingOf("manifest", err))
		if man == nil {
			return nil, nil
		}
	}
	listed := map[string]bool{}
	for _, o := range man.Outputs {
		listed[o.Path] = true
		if filepath.Base(o.Path) != o.Path {
			r.failf("manifest", path, -1, "output %q is not a file of the pack folder", o.Path)
			continue
		}
		size, sum, err := strata.HashFile(ctx, filepath.Join(dir, o.Path))
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			r.failf("manifest", path, -1, "output %s: %v", o.Path, err)
			continue
		}
		if size != o.Bytes || sum != o.SHA256 {
			r.failf("manifest", filepath.Join(dir, o.Path), -1, "%d bytes sha256 %s, the manifest says %d bytes sha256 %s", size, sum, o.Bytes, o.SHA256)
		}
	}
	for _, name := range []string{strata.ModelFile, strata.ExpertsFile, strata.KeepFile} {
		if !listed[name] {
			r.failf("manifest", path, -1, "output %s not listed", name)
		}
	}
	var keepIn *strata.FileRecord
	var models []strata.FileRecord
	for i, in := range man.Inputs {
		switch in.Role {
		case strata.RoleKeep:
			keepIn = &man.Inputs[i]
		case strata.RoleModel:
			models = append(models, in)
		}
	}
	if source != "" {
		// A split source is compared shard by shard, in order.
		files := []string{source}
		if prefix, _, count, ok := gguf.ParseSplitPath(source); ok {
			files = files[:0]
			for k := 0; k < count; k++ {
				files = append(files, gguf.SplitPath(prefix, k, count))
			}
		}
		if len(files) != len(models) {
			r.failf("manifest", source, -1, "the source is %d file(s); the pack was made from %d", len(files), len(models))
		} else {
			for k, in := range models {
				size, sum, err := strata.HashFile(ctx, files[k])
				if err != nil {
					return nil, err
				}
				if size != in.Bytes || sum != in.SHA256 {
					r.failf("manifest", files[k], -1, "the source has %d bytes sha256 %s; the pack was made from %d bytes sha256 %s", size, sum, in.Bytes, in.SHA256)
				}
			}
		}
	}
	// The keep map in the pack is the one the pack was made with.
	if keepIn != nil {
		for _, o := range man.Outputs {
			if o.Path == strata.KeepFile && o.SHA256 != keepIn.SHA256 {
				r.failf("manifest", path, -1, "keep.strp differs from the keep map given to pack (%s)", keepIn.Path)
			}
		}
	}
	return man, nil
}

// compareDense checks model.gguf's non-expert tensors against the source:
// copies byte for byte, per-expert tensors reduced to the kept rows.
func compareDense(mf, src *gguf.File, sm *gguf.MoE, keep *strata.Keep, r *VerifyReport) {
	layerOf := map[int]int{}
	for i, l := range sm.Layers {
		layerOf[l.Block] = i
	}
	var sb, mb []byte
	for i := range mf.Tensors {
		t := &mf.Tensors[i]
		b, rest, inBlock := gguf.SplitBlockName(t.Name)
		if inBlock && strata.IsRouterCopy(rest) {
			continue
		}
		s, ok := src.Tensor(t.Name)
		if !ok {
			r.failf("source.dense", mf.Path, t.InfoOffset, "tensor %q is not in the source", t.Name)
			continue
		}
		if t.Type != s.Type {
			r.failf("source.dense", mf.Path, t.InfoOffset, "tensor %q is %s, the source's %s", t.Name, t.Type, s.Type)
			continue
		}
		if l, moe := layerOf[b]; inBlock && moe && strata.ExpertIndexed(rest) {
			// Per-expert tensors are small (routers, biases): compare whole.
			want, err := keptRows(src, s, keep.Keep[l])
			if err != nil {
				r.failf("source.dense", src.Path, s.InfoOffset, "%v", err)
				continue
			}
			got, err := mf.ReadTensor(t)
			if err != nil {
				r.failf("source.dense", mf.Path, t.InfoOffset, "%v", err)
				continue
			}
			if i := firstDiff(got, want); i >= 0 {
				r.failf("source.dense", mf.Path, mf.DataStart(t)+int64(i), "tensor %q differs from the source's kept rows at byte %d of the tensor", t.Name, i)
			}
			continue
		}
		if t.Size != s.Size {
			r.failf("source.dense", mf.Path, t.InfoOffset, "tensor %q has %d bytes, the source's %d", t.Name, t.Size, s.Size)
			continue
		}
		// Copies can be large (embeddings): compare a chunk at a time.
		if sb == nil {
			sb, mb = make([]byte, copyChunk), make([]byte, copyChunk)
		}
		for off := int64(0); off < t.Size; off += copyChunk {
			n := min(copyChunk, t.Size-off)
			if err := src.ReadTensorAt(s, sb[:n], off); err != nil {
				r.failf("source.dense", src.Path, s.InfoOffset, "%v", err)
				break
			}
			if err := mf.ReadTensorAt(t, mb[:n], off); err != nil {
				r.failf("source.dense", mf.Path, t.InfoOffset, "%v", err)
				break
			}
			if i := firstDiff(sb[:n], mb[:n]); i >= 0 {
				r.failf("source.dense", mf.Path, mf.DataStart(t)+off+int64(i), "tensor %q differs from the source's at byte %d of the tensor", t.Name, off+int64(i))
				break
			}
		}
	}
}

// slotCheck is what verifying one slot found.
type slotCheck struct {
	findings []Finding
	got      [strata.NumParts]errStats // slot against the source
	want     [strata.NumParts]errStats // re-quantized source against the source
}

func verifySlots(ctx context.Context, cfg VerifyConfig, x *strata.Experts, keep *strata.Keep, src *gguf.File, sm *gguf.MoE, params *strata.PackParams, imp *Importance, man *strata.Manifest, r *VerifyReport) error {
	nE := int(x.NExpert)
	prog := cfg.Progress.start(int64(x.FileBytes), "verify")
	defer prog.Done()
	var q2 Q2Params
	if params != nil {
		if m, err := ParseQ2Mode(params.Q2Mode); err == nil {
			q2.Mode = m
		}
		q2.Candidates = params.Q2Candidates
	}
	got := make([][strata.NumParts]errStats, x.NLayer())
	want := make([][strata.NumParts]errStats, x.NLayer())
	scratches := make(chan *scratch, jobsOr(cfg.Jobs))
	for range cap(scratches) {
		scratches <- &scratch{}
	}
	err := ordered(ctx, x.NSlot(), cfg.Jobs, func(ctx context.Context, i int) (slotCheck, error) {
		l, e := i/nE, i%nE
		block := int(x.Layers[l])
		var sc slotCheck
		add := func(f Finding) { sc.findings = append(sc.findings, f) }
		raw := make([]byte, x.SlotBytes)
		off := x.Table[i].Offset
		if _, err := x.ReaderAt().ReadAt(raw, int64(off)); err != nil {
			return sc, fmt.Errorf("%s: %w", x.Path, err)
		}
		pay := raw[:x.PayloadBytes()]
		crcBad := strata.CRC32C(pay) != x.Table[i].CRC
		for j := x.PayloadBytes(); j < x.SlotBytes; j++ {
			if raw[j] != 0 {
				add(Finding{Check: "experts.slots", File: x.Path, Offset: int64(off + j), Layer: block, Expert: e, Msg: fmt.Sprintf("slot padding byte is %#02x, want 0", raw[j])})
				break
			}
		}
		s := <-scratches
		defer func() { scratches <- s }()
		located := false
		for p := range strata.NumParts {
			pt := x.Parts[p]
			part := x.PartBytes(pay, p)
			partOff := int64(off + pt.Offset)
			n := int(pt.Ne0) * int(pt.Ne1)
			var y []float32
			if quant.CanDequantize(pt.Type) {
				_, y = s.floats(n)
				if err := dequantize(pt.Type, part, y); err != nil {
					return sc, err
				}
				if k := firstNonFinite(y); k >= 0 {
					ti, _ := quant.Info(pt.Type)
					add(Finding{Check: "experts.slots", File: x.Path, Offset: partOff + int64(k/ti.BlockElements*ti.BlockBytes), Layer: block, Expert: e, Part: strata.PartNames[p],
						Msg: fmt.Sprintf("element %d decodes to %v", k, y[k])})
				}
			}
			if src == nil {
				continue
			}
			// Compare with the source expert this slot holds.
			srcID := int(keep.Keep[l][e])
			ml := &sm.Layers[l]
			st := []*gguf.TensorInfo{ml.Gate, ml.Up, ml.Down}[p]
			if st.Dims[0] != int64(pt.Ne0) || st.Dims[1] != int64(pt.Ne1) {
				add(Finding{Check: "experts.slots", File: x.Path, Offset: -1, Layer: block, Expert: e, Part: strata.PartNames[p], Msg: fmt.Sprintf("part is %d × %d, the source's %s is %v", pt.Ne0, pt.Ne1, st.Name, st.Dims)})
				continue
			}
			so, size, err := gguf.ExpertSlice(st, srcID)
			if err != nil {
				return sc, err
			}
			sb := make([]byte, size)
			if err := src.ReadTensorAt(st, sb, so); err != nil {
				return sc, err
			}
			var expect []byte
			worse := -1
			if st.Type == pt.Type {
				expect = sb
			} else {
				opt, err := quantOptions(pt.Type, q2, imp, st, srcID)
				if err != nil {
					return sc, err
				}
				expect = make([]byte, pt.Bytes)
				// convertSpan leaves the source values in s.x.
				if sc.want[p], err = convertSpan(st.Type, pt.Type, sb, expect, n, s, opt, span{ctx: ctx, file: src.Path, tensor: st.Name, expert: srcID, firstElem: int64(srcID) * int64(n), fileOff: src.DataStart(st) + so}); err != nil {
					return sc, err
				}
				xs, ye := s.floats(n)
				// Decode the slot again: convertSpan reused the buffer.
				ys := s.extra(n)
				if err := dequantize(pt.Type, part, ys); err != nil {
					return sc, err
				}
				sc.got[p] = measure(xs, ys)
				worse = worseBlock(pt.Type, xs, ys, ye)
			}
			if k := firstDiff(part, expect); k >= 0 {
				if crcBad {
					located = true
					add(Finding{Check: "experts.slots", File: x.Path, Offset: partOff + int64(k), Layer: block, Expert: e, Part: strata.PartNames[p],
						Msg: fmt.Sprintf("byte %d of the part is %#02x, the source gives %#02x; the slot's CRC-32C does not match", k, part[k], expect[k])})
				} else if st.Type == pt.Type {
					add(Finding{Check: "experts.slots", File: x.Path, Offset: partOff + int64(k), Layer: block, Expert: e, Part: strata.PartNames[p],
						Msg: fmt.Sprintf("source expert %d is already %s, so the part must be a copy; byte %d differs", srcID, pt.Type, k)})
				} else if worse >= 0 {
					ti, _ := quant.Info(pt.Type)
					add(Finding{Check: "experts.slots", File: x.Path, Offset: partOff + int64(worse*ti.BlockBytes), Layer: block, Expert: e, Part: strata.PartNames[p],
						Msg: fmt.Sprintf("block %d is further from source expert %d than the quantizer's own result", worse, srcID)})
				}
			}
		}
		if crcBad && !located {
			msg := fmt.Sprintf("payload CRC-32C %#08x, the slot table entry (byte %d) says %#08x", strata.CRC32C(pay), x.TableEntryOffset(i)+8, x.Table[i].CRC)
			at := int64(off)
			if src != nil {
				// The payload is what the source gives: the table entry is the damaged part.
				msg = fmt.Sprintf("slot table entry's CRC-32C is %#08x, but the payload (which matches the source) has %#08x", x.Table[i].CRC, strata.CRC32C(pay))
				at = x.TableEntryOffset(i) + 8
			}
			add(Finding{Check: "experts.slots", File: x.Path, Offset: at, Layer: block, Expert: e, Msg: msg})
		}
		return sc, nil
	}, func(i int, sc slotCheck) error {
		l := i / nE
		for _, f := range sc.findings {
			r.fail(f)
		}
		for p := range sc.got {
			got[l][p].add(sc.got[p])
			want[l][p].add(sc.want[p])
		}
		r.Slots++
		prog.Add(int64(x.SlotBytes))
		return nil
	})
	if err != nil {
		return err
	}
	if src == nil {
		return nil
	}
	var total errStats
	for l, ml := range sm.Layers {
		le := strata.LayerError{Block: ml.Block}
		var sum errStats
		for p, t := range []*gguf.TensorInfo{ml.Gate, ml.Up, ml.Down} {
			_, rest, _ := gguf.SplitBlockName(t.Name)
			action := "quantized"
			if t.Type == x.Parts[p].Type {
				action = "copied"
			}
			le.Parts = append(le.Parts, strata.PartError{Tensor: rest, From: t.Type.String(), To: x.Parts[p].Type.String(), Action: action, RelMSE: got[l][p].RelMSE()})
			sum.add(got[l][p])
			// The manifest's figures are recomputed here.
			if man != nil && l < len(man.Layers) && p < len(man.Layers[l].Parts) {
				if rec := man.Layers[l].Parts[p].RelMSE; !closeRel(rec, got[l][p].RelMSE()) {
					r.failf("manifest", filepath.Join(cfg.Path, strata.ManifestFile), -1, "block %d %s: relative MSE %.9g recorded, %.9g measured", ml.Block, rest, rec, got[l][p].RelMSE())
				}
			}
		}
		le.RelMSE = sum.RelMSE()
		total.add(sum)
		r.Layers = append(r.Layers, le)
	}
	r.RelMSE = total.RelMSE()
	return nil
}

func closeRel(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-15
}

// keepMatchesSlots reports whether keep has one entry for every slot of x.
func keepMatchesSlots(keep *strata.Keep, x *strata.Experts) bool {
	if keep == nil || len(keep.Keep) != x.NLayer() {
		return false
	}
	for _, ids := range keep.Keep {
		if len(ids) != int(x.NExpert) {
			return false
		}
	}
	return true
}

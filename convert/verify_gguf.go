package convert

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

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
	// Experts quantized against calibration inputs cannot be rebuilt from
	// the source alone: their error is measured, not bounded block by block.
	_, calErr := f.String(calibKeySource)
	calibrated := calErr == nil
	var imp *Importance
	if name, err := f.String("stratactl.quantize.imatrix"); err == nil {
		if cfg.Imatrix == "" {
			r.failf("gguf.source", f.Path, f.KeyOffset("stratactl.quantize.imatrix"), "made with the importance matrix %q: pass it with --imatrix to re-quantize the source as the file was", name)
			r.check("gguf.source", n, "tensors compared with the source")
			return nil
		}
		if imp, err = LoadImportance(cfg.Imatrix, src); err != nil {
			return err
		}
	}
	// A pruned file is compared with the source as its keep map cuts it.
	var keep *strata.Keep
	kept := map[string]*strata.KeptTensor{}
	if cfg.KeepMap != "" {
		if keep, err = strata.ReadKeep(cfg.KeepMap); err != nil {
			return err
		}
		sm, err := src.MoE()
		if err != nil {
			return err
		}
		if err := keep.Fits(sm, src.Path); err != nil {
			return fmt.Errorf("%s: %w", cfg.KeepMap, err)
		}
		// The multi-token-prediction blocks were carried whole, or left out.
		carryMTP := false
		for i := range src.Tensors {
			if b, _, ok := gguf.SplitBlockName(src.Tensors[i].Name); ok && slices.Contains(sm.MTP, b) {
				if _, in := f.Tensor(src.Tensors[i].Name); in {
					carryMTP = true
				}
			}
		}
		kts, err := strata.KeptTensors(src, sm, keep, carryMTP)
		if err != nil {
			return err
		}
		for i := range kts {
			kept[kts[i].Src.Name] = &kts[i]
		}
	}
	nSource, _ := f.Uint32(strata.KeySourceNExpert)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s, ok := src.Tensor(t.Name)
		if !ok {
			r.failf("gguf.source", f.Path, t.InfoOffset, "tensor %q is not in the source %s", t.Name, src.Path)
			continue
		}
		kt := kept[t.Name]
		if kt == nil {
			kt = &strata.KeptTensor{Src: s, Spec: gguf.TensorSpec{Dims: s.Dims}, Layer: -1}
		}
		if !slices.Equal(kt.Spec.Dims, t.Dims) {
			msg := fmt.Sprintf("tensor %q has ne %v, the source %v", t.Name, t.Dims, kt.Spec.Dims)
			if keep == nil && nSource > 0 && len(t.Dims) > 0 && slices.Equal(t.Dims[:len(t.Dims)-1], s.Dims[:len(s.Dims)-1]) {
				msg += fmt.Sprintf(": the file keeps %d of %d experts (%s); give its keep map with --keep-map", t.Dims[len(t.Dims)-1], nSource, strata.KeySourceNExpert)
			}
			r.failf("gguf.source", f.Path, t.InfoOffset, "%s", msg)
			continue
		}
		tc, err := compareKept(ctx, f, t, src, kt, keep, q2, imp, calibrated, r)
		if err != nil {
			return err
		}
		r.Tensors = append(r.Tensors, tc)
	}
	for i := range src.Tensors {
		if _, cut := kept[src.Tensors[i].Name]; keep != nil && !cut {
			continue // not in the pruned model (a left-out MTP block)
		}
		if _, ok := f.Tensor(src.Tensors[i].Name); !ok {
			r.failf("gguf.source", cfg.Path, -1, "source tensor %q is missing", src.Tensors[i].Name)
		}
	}
	r.check("gguf.source", n, fmt.Sprintf("%d tensors compared with %s: copies byte-identical, conversions no worse than the quantizer", len(r.Tensors), cfg.Source))
	return nil
}

// compareKept compares t (in f) with its source, a chunk at a time (same
// type means same bytes; otherwise t's error against the source must not
// exceed that of re-quantizing the source with the recorded settings), as a keep map cuts it
// (keep nil: whole): the pruned tensor's expert i is source expert
// keep.Keep[layer][i], read, and quantized with its importance, as such.
func compareKept(ctx context.Context, f *gguf.File, t *gguf.TensorInfo, src *gguf.File, kt *strata.KeptTensor, keep *strata.Keep, q2 Q2Params, imp *Importance, calibrated bool, r *VerifyReport) (TensorCompare, error) {
	s := kt.Src
	srcMatrix := func(m int64) int {
		if kt.Layer >= 0 && len(t.Dims) == 3 {
			return int(keep.Keep[kt.Layer][m])
		}
		return int(m)
	}
	calibrated = calibrated && t.Type == quant.Q2_0 && gguf.IsExpertTensor(t.Name)
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
		if err := kt.ReadAt(src, keep, sb, row*s.RowBytes()); err != nil {
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
		opt, err := quantOptions(t.Type, q2, imp, s, srcMatrix(m))
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
			if b := worseBlock(t.Type, x, y, ye); b >= 0 && !calibrated {
				r.failf("gguf.source", f.Path, f.DataStart(t)+row*t.RowBytes()+int64(b*ti.BlockBytes), "tensor %q: block %d (elements from %d) is further from the source than %s quantization of the source gives", t.Name, b, row*t.Dims[0]+int64(b*ti.BlockElements), t.Type)
			}
		}
		row = end
	}
	tc.RelMSE, tc.Requant = got.RelMSE(), want.RelMSE()
	return tc, nil
}

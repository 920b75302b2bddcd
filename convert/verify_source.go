package convert

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// compareDense checks model.gguf's non-expert tensors against the source:
// copies byte for byte, per-expert tensors reduced to the kept rows.
func compareDense(mf, src *gguf.File, sm *gguf.MoE, keep *strata.Keep, r *VerifyReport) {
	// With the MTP blocks (whole) too: a pack may carry them.
	kept, err := strata.KeptTensors(src, sm, keep, true)
	if err != nil {
		r.fail(findingOf("source.dense", err))
		return
	}
	byName := make(map[string]*strata.KeptTensor, len(kept))
	for i := range kept {
		byName[kept[i].Src.Name] = &kept[i]
	}
	var sb, mb []byte
	for i := range mf.Tensors {
		t := &mf.Tensors[i]
		if _, rest, inBlock := gguf.SplitBlockName(t.Name); inBlock && strata.IsRouterCopy(rest) {
			continue
		}
		kt, ok := byName[t.Name]
		if !ok {
			r.failf("source.dense", mf.Path, t.InfoOffset, "tensor %q is not in the source", t.Name)
			continue
		}
		s := kt.Src
		if t.Type != s.Type {
			r.failf("source.dense", mf.Path, t.InfoOffset, "tensor %q is %s, the source's %s", t.Name, t.Type, s.Type)
			continue
		}
		if kt.Layer >= 0 {
			// Per-expert tensors are small (routers, biases): compare whole.
			want, err := kt.Bytes(src, keep)
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

func verifySlots(ctx context.Context, cfg VerifyConfig, x *strata.Experts, keep *strata.Keep, src *gguf.File, sm *gguf.MoE, params *strata.PackParams, imp *Importance, measureOnly bool, man *strata.Manifest, r *VerifyReport) error {
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
		st, _ := x.CheckSlot(i, raw)
		pay, crcBad := st.Payload, !st.CRCOK
		if st.Padding >= 0 {
			add(Finding{Check: "experts.slots", File: x.Path, Offset: st.Padding, Layer: block, Expert: e, Msg: fmt.Sprintf("slot padding byte is %#02x, want 0", raw[st.Padding-int64(off)])})
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
			sparts, ok := ml.Parts()
			if !ok {
				add(Finding{Check: "experts.slots", File: x.Path, Offset: -1, Layer: block, Expert: e, Part: strata.PartNames[p], Msg: fmt.Sprintf("the source's block %d has no gate matrix", ml.Block)})
				continue
			}
			sp := sparts[p]
			st := sp.Tensor
			if sp.Ne0 != int64(pt.Ne0) || sp.Rows != int64(pt.Ne1) {
				add(Finding{Check: "experts.slots", File: x.Path, Offset: -1, Layer: block, Expert: e, Part: strata.PartNames[p], Msg: fmt.Sprintf("part is %d × %d, the source's %s is %d × %d", pt.Ne0, pt.Ne1, sp.Label(), sp.Ne0, sp.Rows)})
				continue
			}
			so, size, err := sp.Slice(srcID)
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
			} else if measureOnly || calibratedParts(params, pt.Type) {
				// Calibrated experts depend on the calibration run as well,
				// and experts made with an importance matrix not at hand on
				// it: their bytes cannot be rebuilt from the source alone, so
				// only their error against it is measured (and checked
				// against the manifest below).
				xs, ys := s.floats(n)
				if err := dequantize(st.Type, sb, xs); err != nil {
					return sc, err
				}
				if err := dequantize(pt.Type, part, ys); err != nil {
					return sc, err
				}
				sc.got[p] = measure(xs, ys)
				continue
			} else {
				opt, err := quantOptions(pt.Type, q2, imp, st, srcID)
				if err != nil {
					return sc, err
				}
				expect = make([]byte, pt.Bytes)
				// convertSpan leaves the source values in s.x.
				if sc.want[p], err = convertSpan(st.Type, pt.Type, sb, expect, n, s, opt, span{ctx: ctx, file: src.Path, tensor: st.Name, expert: srcID, firstElem: sp.FirstElement(srcID), fileOff: src.DataStart(st) + so}); err != nil {
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
			msg := fmt.Sprintf("payload CRC-32C %#08x, the slot table entry (byte %d) says %#08x", st.CRC, x.TableEntryOffset(i)+8, x.Table[i].CRC)
			at := int64(off)
			if src != nil {
				// The payload is what the source gives: the table entry is the damaged part.
				msg = fmt.Sprintf("slot table entry's CRC-32C is %#08x, but the payload (which matches the source) has %#08x", x.Table[i].CRC, st.CRC)
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
	var to [strata.NumParts]quant.Type
	for p := range to {
		to[p] = x.Parts[p].Type
	}
	r.Layers, r.RelMSE = layerErrors(sm, to, got)
	// The manifest's figures are recomputed here.
	if man != nil {
		for l, le := range r.Layers {
			for p, pe := range le.Parts {
				if l < len(man.Layers) && p < len(man.Layers[l].Parts) {
					if rec := man.Layers[l].Parts[p].RelMSE; !closeRel(rec, pe.RelMSE) {
						r.failf("manifest", filepath.Join(cfg.Path, strata.ManifestFile), -1, "block %d %s: relative MSE %.9g recorded, %.9g measured", le.Block, pe.Tensor, rec, pe.RelMSE)
					}
				}
			}
		}
	}
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

// calibratedParts reports whether a pack's parts of type t were quantized
// against calibration inputs (the manifest records it).
func calibratedParts(params *strata.PackParams, t quant.Type) bool {
	return params != nil && params.Calibration != nil && t == quant.Q2_0
}

package convert

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

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

	// keep.strp and model.gguf, then what CrossCheck finds between the three.
	kpath := filepath.Join(dir, strata.KeepFile)
	keep, kerr := strata.ReadKeep(kpath)
	mf, merr := gguf.Open(filepath.Join(dir, strata.ModelFile))
	if merr == nil {
		defer mf.Close()
	} else {
		mf = nil
	}
	problems := strata.CrossCheck(dir, mf, x, keep)
	found := func(check string) {
		for _, p := range problems {
			if p.Check == check {
				r.fail(findingOf(check, p.Err))
			}
		}
	}

	n = r.nfail()
	if kerr != nil {
		r.fail(findingOf("keep", kerr))
	}
	found("keep")
	if keep != nil {
		r.check("keep", n, fmt.Sprintf("STRP: %d layers, %d of %d experts kept, ranking of %d, statistics: %v", len(keep.Layers), keep.NKeep(), keep.NExpert, keep.NRank(), keep.Stats != nil))
	} else {
		r.check("keep", n, "STRP keep map")
	}

	n = r.nfail()
	if merr != nil {
		r.fail(findingOf("model.structure", merr))
		r.check("model.structure", n, "GGUF")
	} else {
		r.check("model.structure", n, fmt.Sprintf("GGUF v%d, %d keys, %d tensors", mf.Version, len(mf.KV), len(mf.Tensors)))
		n = r.nfail()
		if err := checkGGUFPadding(mf, r, "model.padding"); err != nil {
			return err
		}
		r.check("model.padding", n, "every byte between header, tensors and end of file is zero")
		n = r.nfail()
		found("model.keys")
		r.check("model.keys", n, "strata.* keys and the expert count agree with model.experts and keep.strp")
		n = r.nfail()
		found("model.routers")
		routers, err := checkRouterCopies(mf, x, r)
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

	var src *gguf.File
	var sm *gguf.MoE
	var org *origin
	if cfg.Source != "" {
		if src, err = gguf.OpenModel(cfg.Source, false); err != nil {
			return err
		}
		defer src.Close()
		if sm, err = src.MoE(); err != nil {
			return err
		}
		_, rec := src.Get(strata.KeySourceKeep)
		org = &origin{experts: sm.Experts, hasRecord: rec}
	}

	// manifest.json.
	n = r.nfail()
	man, err := checkManifest(ctx, dir, cfg.Source, org, keep, r)
	if err != nil {
		return err
	}
	if man != nil && x != nil && man.FormatVersion >= 2 && man.PackID != x.PackID.String() {
		r.failf("manifest", filepath.Join(dir, strata.ManifestFile), -1, "pack_id %q, but %s is of pack %s", man.PackID, strata.ExpertsFile, x.PackID)
	}
	detail := "outputs' sizes and sha256 match, pack id too; inputs checked where given"
	if r.SourceMadeFrom != "" {
		detail += fmt.Sprintf("; the pack was made from %s, a pruned GGUF: %s is not that file but holds the %d experts keep.strp names, so it is checked as the original model", r.SourceMadeFrom, cfg.Source, keep.NExpert)
	}
	r.check("manifest", n, detail)

	if x == nil || keep == nil {
		return nil
	}
	var imp *Importance
	var params *strata.PackParams
	measureOnly := false // the experts' bytes cannot be rebuilt: compare their error only
	if cfg.Source != "" {
		n = r.nfail()
		if man != nil {
			params = &man.Parameters
			ni := r.nfail()
			path, err := packImatrix(ctx, cfg, man, r)
			if err != nil {
				return err
			}
			measureOnly = path == "" && params.Imatrix != ""
			if path != "" {
				if imp, err = LoadImportance(path, src); err != nil {
					r.failf("inputs", path, -1, "the pack was made with an importance matrix (%s), which cannot be read now: %v", params.Imatrix, err)
					measureOnly = true
				} else {
					defer imp.Close()
				}
			}
			if params.Imatrix != "" {
				detail := "the importance matrix the pack was made with: " + path
				if measureOnly {
					detail = "the importance matrix the pack was made with is not at hand: experts compared by their error only"
				}
				r.check("inputs", ni, detail)
			}
		} else {
			r.failf("source", filepath.Join(dir, strata.ManifestFile), -1, "no readable manifest: the quantizer settings to compare with are unknown")
		}
		// A pack made from a pruned GGUF keeps original expert ids; against
		// that GGUF (which records the original experts it holds) they are
		// read as its own.
		rec, err := strata.SourceKeep(src, sm)
		if err != nil {
			return err
		}
		if rec != nil && keep.NExpert == rec.NExpert && int(keep.NExpert) != sm.Experts {
			local, err := rec.Local(keep)
			if err != nil {
				r.failf("source", kpath, -1, "%s: %v", src.Path, err)
				src = nil
			} else {
				keep = local
			}
		}
		if src != nil {
			if err := keep.Fits(sm, src.Path); err != nil {
				r.failf("source", kpath, -1, "%v", err)
				src = nil
			}
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
	if err := verifySlots(ctx, cfg, x, keep, src, sm, params, imp, measureOnly, man, r); err != nil {
		return err
	}
	detail = fmt.Sprintf("%d slots: CRC-32C, zero padding, every block decodes to finite values", r.Slots)
	if src != nil {
		detail += fmt.Sprintf("; compared with %s through the keep map", cfg.Source)
		if r.SourceMadeFrom != "" {
			detail += fmt.Sprintf(" (each with its original expert: the pack was made from %s, pruned from it)", r.SourceMadeFrom)
			if r.nfail() != n {
				detail += fmt.Sprintf("; if %s is not the model %s was pruned from, its experts differ from the pack's", cfg.Source, r.SourceMadeFrom)
			}
		}
	}
	r.check("experts.slots", n, detail)
	return nil
}

// checkRouterCopies checks every element of each stored layer's Q8_0
// router copy against its router: within Q8_0's rounding. Layers whose
// router or copy is missing or misshapen are skipped (strata.CrossCheck
// reports them).
func checkRouterCopies(mf *gguf.File, x *strata.Experts, r *VerifyReport) (int, error) {
	if x == nil {
		return 0, nil
	}
	count := 0
	for _, b := range x.Layers {
		name := gguf.RouterName(int(b))
		rt, ok := mf.Tensor(name)
		cp, ok2 := mf.Tensor(strata.RouterCopyName(int(b)))
		want := []int64{int64(x.Parts[0].Ne0), int64(x.NExpert)}
		if !ok || !ok2 || !slices.Equal(rt.Dims, want) || cp.Type != quant.Q8_0 || !slices.Equal(cp.Dims, want) || !quant.CanDequantize(rt.Type) {
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

// packImatrix is the importance matrix to rebuild a pack's experts with:
// --imatrix when given (it must be the one recorded), else the recorded
// input found by its sha256 (findInput). "" when the pack was made without
// one, or when it is missing (reported under "inputs", never as damage to
// the pack: the experts are then compared by error only).
func packImatrix(ctx context.Context, cfg VerifyConfig, man *strata.Manifest, r *VerifyReport) (string, error) {
	rec := inputRecord(man, strata.RoleImatrix)
	switch {
	case cfg.Imatrix != "" && rec != nil:
		size, sum, err := strata.HashFile(ctx, cfg.Imatrix)
		if err != nil {
			if ctx.Err() != nil {
				return "", context.Cause(ctx)
			}
			r.failf("inputs", cfg.Imatrix, -1, "%v", err)
			return "", nil
		}
		if size != rec.Bytes || sum != rec.SHA256 {
			r.failf("inputs", cfg.Imatrix, -1, "%d bytes sha256 %s: not the importance matrix the pack was made with (%s: %d bytes sha256 %s)", size, sum, rec.Path, rec.Bytes, rec.SHA256)
			return "", nil
		}
		return cfg.Imatrix, nil
	case cfg.Imatrix != "":
		return cfg.Imatrix, nil
	case rec != nil:
		path, err := findInput(ctx, rec, cfg.Path, cfg.Source)
		if err != nil {
			return "", err
		}
		if path == "" {
			r.failf("inputs", rec.Path, -1, "missing: the importance matrix the pack was made with (%d bytes, sha256 %s) is neither there nor beside the pack or the source; give --imatrix to compare the experts byte for byte", rec.Bytes, rec.SHA256)
		}
		return path, nil
	}
	return man.Parameters.Imatrix, nil
}

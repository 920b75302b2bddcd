package strata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
)

// Pack is an open pack folder whose files agree with each other: model.gguf
// parsed, model.experts's header and slot table checked, keep.strp read
// when the folder has one, and every cross-file check of CrossCheck passed.
type Pack struct {
	Dir     string
	Model   *gguf.File
	Experts *Experts
	Keep    *Keep // nil when the folder has no keep.strp
}

// OpenOptions tune OpenPack.
type OpenOptions struct {
	// Mapped maps model.gguf read-only (gguf.OpenMapped), so its tensors
	// can be used in place; otherwise it is read with pread.
	Mapped bool
}

// OpenPack opens the pack folder dir and refuses it, with an error naming
// the file and byte offset, when any file is malformed or the files do not
// belong together. manifest.json is not read: run and eval need none, and
// verify checks it.
func OpenPack(dir string, opt OpenOptions) (*Pack, error) {
	mpath := filepath.Join(dir, ModelFile)
	var mf *gguf.File
	var err error
	if opt.Mapped {
		mf, err = gguf.OpenMapped(mpath)
	} else {
		mf, err = gguf.Open(mpath)
	}
	if err != nil {
		return nil, err
	}
	p := &Pack{Dir: dir, Model: mf}
	xpath, err := ExpertsPath(mf, dir)
	if err != nil {
		p.Close()
		return nil, err
	}
	if p.Experts, err = OpenExperts(xpath); err != nil {
		p.Close()
		return nil, err
	}
	if p.Keep, err = ReadKeep(filepath.Join(dir, KeepFile)); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			p.Close()
			return nil, err
		}
		p.Keep = nil
	}
	if probs := CrossCheck(dir, mf, p.Experts, p.Keep); len(probs) > 0 {
		p.Close()
		return nil, probs[0].Err
	}
	return p, nil
}

// Close releases the files.
func (p *Pack) Close() error {
	var errs []error
	if p.Experts != nil {
		errs = append(errs, p.Experts.Close())
	}
	if p.Model != nil {
		errs = append(errs, p.Model.Close())
	}
	return errors.Join(errs...)
}

// ExpertsPath is where model.gguf (mf, in the folder dir) says its experts
// file is: strata.experts.file, a file name beside it.
func ExpertsPath(mf *gguf.File, dir string) (string, error) {
	name, err := mf.String(KeyExpertsFile)
	if err != nil {
		return "", fmt.Errorf("%s: not a pack's model.gguf: %w", mf.Path, err)
	}
	if name == "" || filepath.Base(name) != name {
		return "", &gguf.FormatError{File: mf.Path, Offset: mf.KeyOffset(KeyExpertsFile), Key: KeyExpertsFile, Msg: fmt.Sprintf("%q must be a file name beside %s", name, ModelFile)}
	}
	return filepath.Join(dir, name), nil
}

// Problem is one disagreement between a pack's files.
type Problem struct {
	// Check is the group it belongs to in verify's report: "keep" (keep.strp
	// against model.experts), "model.keys" (model.gguf's keys and tensors
	// against the other two) or "model.routers" (the routers and their
	// copies against model.experts).
	Check string
	Err   *FormatError
}

// CrossCheck lists every disagreement between the files of the pack folder
// dir: model.gguf (mf), model.experts (x) and keep.strp (k), each located by
// file and byte offset (-1 when it is about no one byte). Any of the three
// may be nil (missing or unreadable): the checks that need it are skipped.
// It reads only metadata; OpenPack refuses a pack with any problem, verify
// reports them all.
func CrossCheck(dir string, mf *gguf.File, x *Experts, k *Keep) []Problem {
	var out []Problem
	add := func(check, file string, off int64, format string, args ...any) {
		out = append(out, Problem{Check: check, Err: formatErr(file, off, format, args...)})
	}
	// The pack id first: files of two packs disagree in many ways, and this
	// is the one that says so.
	if mf != nil && x != nil {
		if p := bindingProblem(mf, x); p != nil {
			out = append(out, *p)
		}
	}
	if k != nil && x != nil {
		kpath := filepath.Join(dir, KeepFile)
		if len(k.Layers) != x.NLayer() {
			add("keep", kpath, 8, "%d layers, %s has %d", len(k.Layers), ExpertsFile, x.NLayer())
		} else {
			for i := range k.Layers {
				if k.Layers[i] != x.Layers[i] {
					add("keep", kpath, int64(keepFixed+4*i), "layer %d is block %d, %s says block %d", i, k.Layers[i], ExpertsFile, x.Layers[i])
				}
			}
		}
		if k.NKeep() != int(x.NExpert) {
			add("keep", kpath, 16, "n_keep %d, %s stores %d experts per layer", k.NKeep(), ExpertsFile, x.NExpert)
		}
	}
	if mf == nil {
		return out
	}

	const mk = "model.keys"
	key := func(name string) (uint64, bool) {
		v, ok := mf.Get(name)
		if !ok {
			add(mk, mf.Path, -1, "key %s missing", name)
			return 0, false
		}
		u, ok := v.AsUint64()
		if !ok {
			add(mk, mf.Path, mf.KeyOffset(name), "key %s holds %s, want an integer", name, v.TypeName())
		}
		return u, ok
	}
	if v, ok := key(KeyFormatVersion); ok && (v < 1 || v > FormatVersion) {
		add(mk, mf.Path, mf.KeyOffset(KeyFormatVersion), "%s = %d, this tool knows versions 1..%d", KeyFormatVersion, v, FormatVersion)
	}
	if s, err := mf.String(KeyExpertsFile); err != nil {
		add(mk, mf.Path, mf.KeyOffset(KeyExpertsFile), "%v", err)
	} else if s != ExpertsFile {
		add(mk, mf.Path, mf.KeyOffset(KeyExpertsFile), "%s = %q, want %q", KeyExpertsFile, s, ExpertsFile)
	}
	if v, ok := key(KeyExpertsBytes); ok && x != nil && v != uint64(x.Size) {
		add(mk, mf.Path, mf.KeyOffset(KeyExpertsBytes), "%s = %d, %s has %d bytes", KeyExpertsBytes, v, x.Path, x.Size)
	}
	if v, ok := key(KeySlotBytes); ok && x != nil && v != x.SlotBytes {
		add(mk, mf.Path, mf.KeyOffset(KeySlotBytes), "%s = %d, %s says %d", KeySlotBytes, v, x.Path, x.SlotBytes)
	}
	if v, ok := key(KeySourceNExpert); ok && k != nil && v != uint64(k.NExpert) {
		add(mk, mf.Path, mf.KeyOffset(KeySourceNExpert), "%s = %d, %s says %d", KeySourceNExpert, v, KeepFile, k.NExpert)
	}
	ck := mf.ArchKey("expert_count")
	if v, ok := key(ck); ok && x != nil && v != uint64(x.NExpert) {
		add(mk, mf.Path, mf.KeyOffset(ck), "%s = %d, %s stores %d per layer", ck, v, x.Path, x.NExpert)
	}
	if x != nil {
		uk := mf.ArchKey("expert_used_count")
		if used, err := mf.Uint32(uk); err == nil && used > x.NExpert {
			add(mk, mf.Path, mf.KeyOffset(uk), "%d experts used per token, only %d stored", used, x.NExpert)
		}
		ek := mf.ArchKey("embedding_length")
		if v, err := mf.Uint64(ek); err == nil && (v != uint64(x.Parts[0].Ne0) || v != uint64(x.Parts[2].Ne1)) {
			add(mk, mf.Path, mf.KeyOffset(ek), "n_embd %d does not match the expert parts' shapes", v)
		}
		fk := mf.ArchKey("expert_feed_forward_length")
		if v, err := mf.Uint64(fk); err == nil && (v != uint64(x.Parts[0].Ne1) || v != uint64(x.Parts[2].Ne0)) {
			add(mk, mf.Path, mf.KeyOffset(fk), "n_ff_exp %d does not match the expert parts' shapes", v)
		}
	}
	// A carried multi-token-prediction block keeps its experts here, whole.
	mtpFirst, mtpN, err := mf.MTPBlocks()
	if err != nil {
		add(mk, mf.Path, mf.KeyOffset(mf.ArchKey(gguf.NextNKey)), "%v", err)
	}
	for i := range mf.Tensors {
		t := &mf.Tensors[i]
		b, rest, ok := gguf.SplitBlockName(t.Name)
		if ok && (slices.Contains(gguf.ExpertMatrices[:], rest) || rest == gguf.FusedGateUp) && (mtpN == 0 || b < mtpFirst) {
			add(mk, mf.Path, t.InfoOffset, "block %d's expert matrix %q belongs in %s", b, t.Name, ExpertsFile)
		}
	}

	if x != nil {
		const mr = "model.routers"
		for _, b := range x.Layers {
			want := []int64{int64(x.Parts[0].Ne0), int64(x.NExpert)}
			name := gguf.RouterName(int(b))
			if rt, ok := mf.Tensor(name); !ok {
				add(mr, mf.Path, -1, "router %s missing", name)
			} else if !slices.Equal(rt.Dims, want) {
				add(mr, mf.Path, rt.InfoOffset, "%s has ne %v, want %v", name, rt.Dims, want)
			} else if !quant.CanDequantize(rt.Type) {
				add(mr, mf.Path, rt.InfoOffset, "%s: cannot decode %s", name, rt.Type)
			}
			cname := RouterCopyName(int(b))
			if cp, ok := mf.Tensor(cname); !ok {
				add(mr, mf.Path, -1, "router copy %s missing", cname)
			} else if cp.Type != quant.Q8_0 || !slices.Equal(cp.Dims, want) {
				add(mr, mf.Path, cp.InfoOffset, "%s is %s %v, want Q8_0 %v", cp.Name, cp.Type, cp.Dims, want)
			}
		}
	}
	return out
}

// bindingProblem says whether model.gguf (mf) and model.experts (x) are of
// one pack: the same pack id in both (format version 2), or neither with
// one (a version 1 pack, written before packs had ids: not bound).
func bindingProblem(mf *gguf.File, x *Experts) *Problem {
	bad := func(file string, off int64, format string, args ...any) *Problem {
		return &Problem{Check: "model.keys", Err: formatErr(file, off, format, args...)}
	}
	s, err := mf.String(KeyPackID)
	_, has := mf.Get(KeyPackID)
	switch {
	case has && err != nil:
		return bad(mf.Path, mf.KeyOffset(KeyPackID), "%v", err)
	case !has && x.Version >= 2:
		return bad(mf.Path, -1, "%s has no %s, but %s is STRX version %d of pack %s: the files are of different packs", ModelFile, KeyPackID, x.Path, x.Version, x.PackID)
	case !has:
		return nil // version 1: nothing binds the files
	}
	id, err := ParsePackID(s)
	if err != nil {
		return bad(mf.Path, mf.KeyOffset(KeyPackID), "%s: %v", KeyPackID, err)
	}
	if x.Version < 2 {
		return bad(x.Path, 4, "%s belongs to pack %s, but %s is STRX version %d, which carries no pack id: the files are of different packs", ModelFile, id, x.Path, x.Version)
	}
	if id != x.PackID {
		return bad(x.Path, PackIDOffset, "%s is of pack %s, but %s (%s) is of pack %s: the files are of different packs", x.Path, x.PackID, mf.Path, KeyPackID, id)
	}
	return nil
}

package convert

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
	"golang.org/x/sync/errgroup"
)

// PackConfig is what `stratactl pack` does.
type PackConfig struct {
	In       string
	OutDir   string
	Type     quant.Type // expert type in model.experts (the command's default is Q2_0; the zero value is F32)
	Keep     string     // keep.strp path, or "" to keep every expert
	Imatrix  string
	Q2       Q2Params
	Jobs     int
	Version  string
	Args     []string // the full command line, for the manifest
	Progress ProgressFunc
}

// slotResult is one converted expert.
type slotResult struct {
	parts   [strata.NumParts][]byte
	st      [strata.NumParts]errStats
	inBytes int64
}

// Pack converts cfg.In into a pack folder at cfg.OutDir. The folder appears
// only when complete.
func Pack(ctx context.Context, cfg PackConfig) (*strata.Manifest, error) {
	if !quant.CanQuantize(cfg.Type) {
		return nil, fmt.Errorf("cannot quantize to %s (this build quantizes to %s)", cfg.Type, quantizableTypes())
	}
	f, err := gguf.OpenModel(cfg.In, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := f.MoE()
	if err != nil {
		return nil, err
	}
	for _, l := range m.Layers {
		if l.Gate == nil {
			return nil, &gguf.FormatError{File: f.Path, Offset: l.Up.InfoOffset, Tensor: l.Up.Name, Msg: fmt.Sprintf("block %d has no ffn_gate_exps: a strata slot holds gate, up and down", l.Block)}
		}
		for _, t := range []*gguf.TensorInfo{l.Gate, l.Up, l.Down} {
			if t.Type != cfg.Type && !quant.CanDequantize(t.Type) {
				return nil, &gguf.FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("cannot decode type %s", t.Type)}
			}
		}
	}
	blocks := make([]uint32, len(m.Layers))
	for i, l := range m.Layers {
		blocks[i] = uint32(l.Block)
	}
	keep := strata.IdentityKeep(blocks, m.Experts)
	if cfg.Keep != "" {
		if keep, err = strata.ReadKeep(cfg.Keep); err != nil {
			return nil, err
		}
		if err := keep.Fits(m, f.Path); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Keep, err)
		}
	}
	nKeep := keep.NKeep()
	if m.Embd%32 != 0 {
		return nil, fmt.Errorf("%s: n_embd %d is not a multiple of 32: no Q8_0 router copy possible", f.Path, m.Embd)
	}
	h, err := strata.NewHeader(blocks, nKeep, [strata.NumParts]strata.PartShape{
		{Type: cfg.Type, Ne0: m.Embd, Ne1: m.ExpertFF}, {Type: cfg.Type, Ne0: m.Embd, Ne1: m.ExpertFF}, {Type: cfg.Type, Ne0: m.ExpertFF, Ne1: m.Embd}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	var imp *Importance
	if cfg.Imatrix != "" {
		if imp, err = LoadImportance(cfg.Imatrix); err != nil {
			return nil, err
		}
		defer imp.Close()
	}

	out := filepath.Clean(cfg.OutDir)
	if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("%s already exists: remove it or choose another -o", out)
	}
	// The room: model.experts exactly, model.gguf about the dense bytes.
	if err := osutil.CheckSpace(out, int64(h.FileBytes)+m.DenseBytes); err != nil {
		return nil, err
	}
	tmpDir, err := osutil.MkdirTemp(out)
	if err != nil {
		return nil, err
	}
	tmp := tmpDir.Path
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
		tmpDir.Release()
	}()

	// The source is hashed by a sequential read beside the conversion.
	hashCtx, stopHash := context.WithCancel(ctx)
	defer stopHash()
	hg, hctx := errgroup.WithContext(hashCtx)
	inputs := []strata.FileRecord{{Role: strata.RoleModel, Path: cfg.In}}
	if len(f.Shards) > 0 {
		// A split model's provenance is every one of its files.
		inputs = inputs[:0]
		for _, sh := range f.Shards {
			inputs = append(inputs, strata.FileRecord{Role: strata.RoleModel, Path: sh.Path})
		}
	}
	if cfg.Keep != "" {
		inputs = append(inputs, strata.FileRecord{Role: strata.RoleKeep, Path: cfg.Keep})
	}
	if cfg.Imatrix != "" {
		inputs = append(inputs, strata.FileRecord{Role: strata.RoleImatrix, Path: cfg.Imatrix})
	}
	for i := range inputs {
		hg.Go(func() error {
			n, sum, err := strata.HashFile(hctx, inputs[i].Path)
			inputs[i].Bytes, inputs[i].SHA256 = n, sum
			return err
		})
	}
	var work int64
	for _, l := range m.Layers {
		work += int64(nKeep) * (l.Gate.Size + l.Up.Size + l.Down.Size) / int64(m.Experts)
	}
	prog := cfg.Progress.start(work+m.DenseBytes, "pack")
	defer prog.Done()

	layerStats, err := writeExperts(ctx, filepath.Join(tmp, strata.ExpertsFile), f, m, keep, h, cfg, imp, prog)
	if err != nil {
		stopHash()
		hg.Wait()
		return nil, interrupted(err, "pack")
	}
	if err := writePackModel(ctx, filepath.Join(tmp, strata.ModelFile), f, m, keep, h, prog); err != nil {
		stopHash()
		hg.Wait()
		return nil, interrupted(err, "pack")
	}
	if err := strata.WriteKeep(filepath.Join(tmp, strata.KeepFile), keep); err != nil {
		stopHash()
		hg.Wait()
		return nil, err
	}
	if err := hg.Wait(); err != nil {
		return nil, interrupted(err, "pack")
	}

	man := &strata.Manifest{
		Format: strata.ManifestFormat, FormatVersion: strata.FormatVersion, Tool: "stratactl", ToolVersion: cfg.Version,
		CommandLine: append([]string{}, cfg.Args...),
		Parameters:  strata.PackParams{Type: cfg.Type.String(), Keep: cfg.Keep, Imatrix: cfg.Imatrix, Jobs: jobsOr(cfg.Jobs)},
		Model: strata.PackShape{Arch: m.Arch, MoELayers: len(m.Layers), SourceExpert: m.Experts, Expert: nKeep, ExpertsUsed: m.ExpertsUsed,
			Embd: m.Embd, ExpertFF: m.ExpertFF, SlotBytes: h.SlotBytes, PayloadBytes: h.PayloadBytes()},
		Inputs: inputs,
	}
	if cfg.Type == quant.Q2_0 {
		man.Parameters.Q2Mode = Q2ModeName(cfg.Q2.Mode)
		man.Parameters.Q2Candidates = cfg.Q2.effectiveCandidates()
	}
	var total errStats
	for l, ml := range m.Layers {
		le := strata.LayerError{Block: ml.Block}
		var sum errStats
		for p, t := range []*gguf.TensorInfo{ml.Gate, ml.Up, ml.Down} {
			_, rest, _ := gguf.SplitBlockName(t.Name)
			action := "quantized"
			if t.Type == cfg.Type {
				action = "copied"
			}
			le.Parts = append(le.Parts, strata.PartError{Tensor: rest, From: t.Type.String(), To: cfg.Type.String(), Action: action, RelMSE: layerStats[l][p].RelMSE()})
			sum.add(layerStats[l][p])
		}
		le.RelMSE = sum.RelMSE()
		total.add(sum)
		man.Layers = append(man.Layers, le)
	}
	man.RelMSE = total.RelMSE()
	for _, o := range [][2]string{{strata.RoleModel, strata.ModelFile}, {strata.RoleExperts, strata.ExpertsFile}, {strata.RoleKeep, strata.KeepFile}} {
		n, sum, err := strata.HashFile(ctx, filepath.Join(tmp, o[1]))
		if err != nil {
			return nil, interrupted(err, "pack")
		}
		man.Outputs = append(man.Outputs, strata.FileRecord{Role: o[0], Path: o[1], Bytes: n, SHA256: sum})
	}
	if err := strata.WriteManifest(filepath.Join(tmp, strata.ManifestFile), man); err != nil {
		return nil, err
	}
	if err := publishDir(tmp, out); err != nil {
		return nil, err
	}
	done = true
	return man, nil
}

// writeExperts converts every kept expert into its slot and returns the
// error statistics per layer and part.
func writeExperts(ctx context.Context, path string, f *gguf.File, m *gguf.MoE, keep *strata.Keep, h *strata.Header, cfg PackConfig, imp *Importance, prog Progress) ([][strata.NumParts]errStats, error) {
	xf, err := strata.CreateExperts(path, h)
	if err != nil {
		return nil, err
	}
	nKeep := keep.NKeep()
	stats := make([][strata.NumParts]errStats, len(m.Layers))
	scratches := make(chan *scratch, jobsOr(cfg.Jobs))
	for range cap(scratches) {
		scratches <- &scratch{}
	}
	err = ordered(ctx, h.NSlot(), cfg.Jobs, func(ctx context.Context, i int) (slotResult, error) {
		l, e := i/nKeep, i%nKeep
		ml := &m.Layers[l]
		src := int(keep.Keep[l][e])
		var r slotResult
		for p, t := range []*gguf.TensorInfo{ml.Gate, ml.Up, ml.Down} {
			off, size, err := gguf.ExpertSlice(t, src)
			if err != nil {
				return r, err
			}
			in := make([]byte, size)
			if err := f.ReadTensorAt(t, in, off); err != nil {
				return r, err
			}
			r.inBytes += size
			if t.Type == cfg.Type {
				r.parts[p] = in
				continue
			}
			opt, err := quantOptions(cfg.Type, cfg.Q2, imp, t, src)
			if err != nil {
				return r, err
			}
			r.parts[p] = make([]byte, h.Parts[p].Bytes)
			n := int(t.Dims[0] * t.Dims[1])
			file, fileOff := f.Locate(t)
			s := <-scratches
			r.st[p], err = convertSpan(t.Type, cfg.Type, in, r.parts[p], n, s, opt, span{ctx: ctx, file: file, tensor: t.Name, expert: src, firstElem: int64(src) * int64(n), fileOff: fileOff + off})
			scratches <- s
			if err != nil {
				return r, err
			}
		}
		return r, nil
	}, func(i int, r slotResult) error {
		l, e := i/nKeep, i%nKeep
		if err := xf.WriteSlot(l, e, r.parts); err != nil {
			return err
		}
		for p := range r.st {
			stats[l][p].add(r.st[p])
		}
		prog.Add(r.inBytes)
		return nil
	})
	if err != nil {
		xf.Abort()
		return nil, err
	}
	if err := xf.Commit(); err != nil {
		return nil, err
	}
	return stats, nil
}

// writePackModel writes model.gguf: every tensor but the expert matrices,
// per-expert tensors reduced to the kept experts, and a Q8_0 copy after each
// router.
func writePackModel(ctx context.Context, path string, f *gguf.File, m *gguf.MoE, keep *strata.Keep, h *strata.Header, prog Progress) error {
	layerOf := map[int]int{}
	for i, l := range m.Layers {
		layerOf[l.Block] = i
	}
	type job struct {
		src    *gguf.TensorInfo
		layer  int  // MoE layer index when pruned along the expert dimension, else -1
		q8copy bool // the Q8_0 router copy of layer
	}
	var jobs []job
	var specs []gguf.TensorSpec
	matrices := map[*gguf.TensorInfo]bool{}
	for _, l := range m.Layers {
		matrices[l.Gate], matrices[l.Up], matrices[l.Down] = true, true, true
	}
	nKeep := int64(keep.NKeep())
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if matrices[t] {
			continue
		}
		b, rest, inBlock := gguf.SplitBlockName(t.Name)
		l, moe := layerOf[b]
		pruned := inBlock && moe && strata.ExpertIndexed(rest)
		dims := append([]int64(nil), t.Dims...)
		if pruned {
			if dims[len(dims)-1] != int64(m.Experts) {
				return &gguf.FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("ne %v: last dimension should be n_expert = %d", t.Dims, m.Experts)}
			}
			dims[len(dims)-1] = nKeep
			jobs = append(jobs, job{src: t, layer: l})
		} else {
			jobs = append(jobs, job{src: t, layer: -1})
		}
		specs = append(specs, gguf.TensorSpec{Name: t.Name, Type: t.Type, Dims: dims})
		if pruned && rest == "ffn_gate_inp.weight" {
			specs = append(specs, gguf.TensorSpec{Name: strata.RouterCopyName(b), Type: quant.Q8_0, Dims: []int64{m.Embd, nKeep}})
			jobs = append(jobs, job{src: t, layer: l, q8copy: true})
		}
	}
	kv := append([]gguf.KV(nil), f.KV...)
	kv = setKV(kv, f.ArchKey("expert_count"), gguf.Uint32(uint32(nKeep)))
	kv = setKV(kv, strata.KeyFormatVersion, gguf.Uint32(strata.FormatVersion))
	kv = setKV(kv, strata.KeyExpertsFile, gguf.String(strata.ExpertsFile))
	kv = setKV(kv, strata.KeyExpertsBytes, gguf.Uint64(h.FileBytes))
	kv = setKV(kv, strata.KeySlotBytes, gguf.Uint64(h.SlotBytes))
	kv = setKV(kv, strata.KeySourceNExpert, gguf.Uint32(uint32(m.Experts)))
	w, err := gguf.Create(path, kv, specs)
	if err != nil {
		return err
	}
	for k, j := range jobs {
		if err := ctx.Err(); err != nil {
			w.Abort()
			return context.Cause(ctx)
		}
		name := specs[k].Name
		var err error
		switch {
		case j.layer < 0:
			err = w.CopyTensor(name, f.SectionReader(j.src))
			prog.Add(j.src.Size)
		case !j.q8copy:
			var b []byte
			if b, err = keptRows(f, j.src, keep.Keep[j.layer]); err == nil {
				err = w.WriteTensor(name, b)
			}
		default:
			err = writeRouterCopy(w, name, f, j.src, keep.Keep[j.layer], m.Embd)
		}
		if !j.q8copy && j.layer >= 0 {
			prog.Add(j.src.Size)
		}
		if err != nil {
			w.Abort()
			return err
		}
	}
	return w.Commit()
}

// keptRows is the kept experts' slices of a tensor indexed by expert along
// its last dimension, in keep-map order.
func keptRows(f *gguf.File, t *gguf.TensorInfo, ids []uint32) ([]byte, error) {
	// A 1-D tensor (exp_probs_b: one bias per expert) has one element per
	// expert, so the slice is taken along the last dimension whatever the rank.
	n := t.Dims[len(t.Dims)-1]
	if n <= 0 || t.Size%n != 0 {
		return nil, &gguf.FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("ne %v (%d bytes) does not split into %d experts", t.Dims, t.Size, n)}
	}
	size := t.Size / n
	out := make([]byte, int64(len(ids))*size)
	for i, id := range ids {
		if err := f.ReadTensorAt(t, out[int64(i)*size:int64(i+1)*size], int64(id)*size); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func writeRouterCopy(w *gguf.FileWriter, name string, f *gguf.File, router *gguf.TensorInfo, ids []uint32, embd int64) error {
	rows, err := keptRows(f, router, ids)
	if err != nil {
		return err
	}
	x := make([]float32, embd*int64(len(ids)))
	if err := dequantize(router.Type, rows, x); err != nil {
		return fmt.Errorf("%s: tensor %q: %w", f.Path, router.Name, err)
	}
	if i := firstNonFinite(x); i >= 0 {
		return fmt.Errorf("%s: tensor %q: kept row %d column %d is %v: refusing a non-finite router", f.Path, router.Name, int64(i)/embd, int64(i)%embd, x[i])
	}
	q := make([]byte, len(x)/32*34)
	if err := quantize(quant.Q8_0, x, q, nil); err != nil {
		return err
	}
	return w.WriteTensor(name, q)
}

// publishDir makes a finished temporary folder readable and renames it into
// place, syncing both so the result survives a crash.
func publishDir(tmp, out string) error {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.Chmod(filepath.Join(tmp, e.Name()), 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("publishing %s: %w", out, err)
	}
	return syncDir(filepath.Dir(out))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

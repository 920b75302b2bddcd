package convert

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

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
	CarryMTP bool // keep the multi-token-prediction blocks (whole) in model.gguf instead of dropping them
	Q2       Q2Params
	Jobs     int
	Version  string
	Args     []string // the full command line, for the manifest
	Progress ProgressFunc
	// Experts, when set, encodes the expert matrices it handles (the
	// calibrated quantizer); Calib describes its input for the manifest.
	Experts ExpertQuantizer
	Calib   *CalibInfo
	// Times, when set, is filled with where the pack's time went.
	Times *PackTimes
}

// PackTimes is where a pack's time went, phase by phase, on the clock and
// in the process's CPU time (all threads, 0 where the system does not
// tell). The source's hash runs beside the phases; HashWait is the time
// the pack waited for it after the last of them.
type PackTimes struct {
	Seconds    float64 `json:"s"`
	CPUSeconds float64 `json:"cpu_s"`
	// Experts is the slots' conversion and writes (model.experts).
	Experts    float64 `json:"experts_s"`
	ExpertsCPU float64 `json:"experts_cpu_s"`
	// Work is the workers' time on slots, summed; BusyWorkers is Work
	// over Experts, the workers busy on average.
	Work        float64 `json:"experts_work_s"`
	BusyWorkers float64 `json:"experts_busy_workers"`
	// Emit is the writer's time on slots (model.experts' writes), EmitWait
	// its time waiting for the next slot in order.
	Emit     float64 `json:"experts_emit_s"`
	EmitWait float64 `json:"experts_emit_wait_s"`
	// Finish is model.experts' completion after the last slot.
	Finish float64 `json:"experts_finish_s"`
	// Dense is model.gguf: the dense tensors, the kept routers and their
	// copies.
	Dense    float64 `json:"dense_s"`
	DenseCPU float64 `json:"dense_cpu_s"`
	HashWait float64 `json:"hash_wait_s"`
	// Commit is keep.strp, the outputs' hashes, the manifest and the
	// rename.
	Commit    float64 `json:"commit_s"`
	CommitCPU float64 `json:"commit_cpu_s"`
	// Slots, when SlotTimes is set, holds each slot's start and end in
	// seconds from the start of the experts phase, in slot order.
	SlotTimes bool         `json:"-"`
	Slots     [][2]float64 `json:"slots_s,omitempty"`
}

// lap returns the time and CPU time since *t0 and *c0 and moves them to
// now.
func lap(t0 *time.Time, c0 *float64) (float64, float64) {
	now, c := time.Now(), osutil.CPUSeconds()
	d, dc := now.Sub(*t0).Seconds(), c-*c0
	*t0, *c0 = now, c
	return d, dc
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
	tt := cfg.Times
	if tt == nil {
		tt = &PackTimes{}
	}
	start, startCPU := time.Now(), osutil.CPUSeconds()
	f, err := openToQuantize(cfg.In, cfg.Type)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := f.MoE()
	if err != nil {
		return nil, err
	}
	for _, l := range m.Layers {
		parts, ok := l.Parts()
		if !ok {
			return nil, &gguf.FormatError{File: f.Path, Offset: l.Up.InfoOffset, Tensor: l.Up.Name, Msg: fmt.Sprintf("block %d has no ffn_gate_exps: a strata slot holds gate, up and down", l.Block)}
		}
		for _, pt := range parts {
			if t := pt.Tensor; t.Type != cfg.Type && !quant.CanDequantize(t.Type) {
				return nil, &gguf.FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("cannot decode type %s", t.Type)}
			}
		}
	}
	blocks := m.LayerBlocks()
	keep := strata.IdentityKeep(blocks, m.Experts)
	if cfg.Keep != "" {
		if keep, err = strata.ReadKeep(cfg.Keep); err != nil {
			return nil, err
		}
		if err := keep.Fits(m, f.Path); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Keep, err)
		}
		if err := keep.FitsGroups(f, m); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Keep, err)
		}
	}
	nKeep := keep.NKeep()
	// A pruned source records which original experts it holds: the pack's
	// keep.strp and strata.source.n_expert then describe the original model.
	packKeep, sourceNExpert := keep, m.Experts
	rec, err := strata.SourceKeep(f, m)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		packKeep = rec.Compose(keep)
		sourceNExpert = int(rec.NExpert)
	}
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
		if imp, err = LoadImportance(cfg.Imatrix, f); err != nil {
			return nil, err
		}
		defer imp.Close()
	}

	// The room: model.experts exactly, model.gguf about the dense bytes.
	if err := osutil.CheckSpace(cfg.OutDir, int64(h.FileBytes)+m.DenseBytes); err != nil {
		return nil, err
	}
	pw, err := strata.CreatePack(cfg.OutDir, h)
	if err != nil {
		return nil, err
	}
	defer pw.Abort()

	// The source is hashed by a sequential read beside the conversion.
	hashCtx, stopHash := context.WithCancel(ctx)
	defer stopHash()
	hg, hctx := errgroup.WithContext(hashCtx)
	// Inputs are recorded by absolute path (and sha256, below), so that
	// verify finds them from any folder.
	inputs := []strata.FileRecord{{Role: strata.RoleModel, Path: absPath(cfg.In)}}
	if len(f.Shards) > 0 {
		// A split model's provenance is every one of its files.
		inputs = inputs[:0]
		for _, sh := range f.Shards {
			inputs = append(inputs, strata.FileRecord{Role: strata.RoleModel, Path: absPath(sh.Path)})
		}
	}
	if cfg.Keep != "" {
		inputs = append(inputs, strata.FileRecord{Role: strata.RoleKeep, Path: absPath(cfg.Keep)})
	}
	if cfg.Imatrix != "" {
		inputs = append(inputs, strata.FileRecord{Role: strata.RoleImatrix, Path: absPath(cfg.Imatrix)})
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
		parts, _ := l.Parts()
		for _, pt := range parts {
			_, size, _ := pt.Slice(0)
			work += int64(nKeep) * size
		}
	}
	if cfg.CarryMTP {
		work += m.MTPBytes
	}
	prog := cfg.Progress.start(work+m.DenseBytes, "pack")
	defer prog.Done()

	t0, c0 := time.Now(), osutil.CPUSeconds()
	layerStats, err := writeExperts(ctx, pw, f, m, keep, cfg, imp, prog, tt)
	tt.Experts, tt.ExpertsCPU = lap(&t0, &c0)
	if tt.Experts > 0 {
		tt.BusyWorkers = tt.Work / tt.Experts
	}
	if err == nil {
		err = writePackModel(ctx, pw, f, m, keep, packKeep, sourceNExpert, cfg.CarryMTP, prog)
		tt.Dense, tt.DenseCPU = lap(&t0, &c0)
	}
	if err != nil {
		stopHash()
		hg.Wait()
		return nil, interrupted(err, "pack")
	}
	if err := hg.Wait(); err != nil {
		return nil, interrupted(err, "pack")
	}
	tt.HashWait, _ = lap(&t0, &c0)

	man := &strata.Manifest{
		Tool: "stratactl", ToolVersion: cfg.Version,
		CommandLine: append([]string{}, cfg.Args...),
		Parameters:  strata.PackParams{Type: cfg.Type.String(), Keep: absPath(cfg.Keep), Imatrix: absPath(cfg.Imatrix), Jobs: jobsOr(cfg.Jobs), Calibration: cfg.Calib, SourceKeep: rec != nil},
		Model: strata.PackShape{Arch: m.Arch, MoELayers: len(m.Layers), SourceExpert: sourceNExpert, Expert: nKeep, ExpertsUsed: m.ExpertsUsed,
			Embd: m.Embd, ExpertFF: m.ExpertFF, SlotBytes: h.SlotBytes, PayloadBytes: h.PayloadBytes()},
		Inputs: inputs,
	}
	if len(m.MTP) > 0 {
		man.MTP = &strata.MTPRecord{Blocks: m.MTP, Carried: cfg.CarryMTP}
	}
	if cfg.Type == quant.Q2_0 {
		man.Parameters.Q2Mode = Q2ModeName(cfg.Q2.Mode)
		man.Parameters.Q2Candidates = cfg.Q2.effectiveCandidates()
	}
	man.Layers, man.RelMSE = layerErrors(m, [strata.NumParts]quant.Type{cfg.Type, cfg.Type, cfg.Type}, layerStats)
	for l, ml := range m.Layers {
		parts, _ := ml.Parts()
		for p, pt := range parts {
			if t := pt.Tensor; packCalibrated(cfg, t) {
				if e, ok := cfg.Experts.OutputError(t.Name); ok {
					man.Layers[l].Parts[p].CalibOutputErr = &e
				}
			}
		}
	}
	if err := pw.Commit(ctx, packKeep, man); err != nil {
		return nil, interrupted(err, "pack")
	}
	tt.Commit, tt.CommitCPU = lap(&t0, &c0)
	tt.Seconds, tt.CPUSeconds = lap(&start, &startCPU)
	return man, nil
}

// layerErrors is the per-layer, per-matrix conversion error table of a pack
// whose parts have the types to, from the error statistics of each layer's
// kept experts; and the error over all of them.
func layerErrors(m *gguf.MoE, to [strata.NumParts]quant.Type, stats [][strata.NumParts]errStats) ([]strata.LayerError, float64) {
	var out []strata.LayerError
	var total errStats
	for l, ml := range m.Layers {
		le := strata.LayerError{Block: ml.Block}
		var sum errStats
		parts, _ := ml.Parts()
		for p, pt := range parts {
			t, rest := pt.Tensor, pt.Label()
			action := "quantized"
			if t.Type == to[p] {
				action = "copied"
			}
			le.Parts = append(le.Parts, strata.PartError{Tensor: rest, From: t.Type.String(), To: to[p].String(), Action: action, RelMSE: stats[l][p].RelMSE()})
			sum.add(stats[l][p])
		}
		le.RelMSE = sum.RelMSE()
		total.add(sum)
		out = append(out, le)
	}
	return out, total.RelMSE()
}

// writeExperts converts every kept expert into its slot and returns the
// error statistics per layer and part.
func writeExperts(ctx context.Context, pw *strata.PackWriter, f *gguf.File, m *gguf.MoE, keep *strata.Keep, cfg PackConfig, imp *Importance, prog Progress, tt *PackTimes) ([][strata.NumParts]errStats, error) {
	h := pw.Header()
	nKeep := keep.NKeep()
	stats := make([][strata.NumParts]errStats, len(m.Layers))
	scratches := make(chan *scratch, jobsOr(cfg.Jobs))
	for range cap(scratches) {
		scratches <- &scratch{}
	}
	t0 := time.Now()
	var work atomic.Int64 // nanoseconds
	if tt.SlotTimes {
		tt.Slots = make([][2]float64, h.NSlot())
	}
	lastEmit := t0
	err := ordered(ctx, h.NSlot(), cfg.Jobs, func(ctx context.Context, i int) (slotResult, error) {
		ts := time.Now()
		defer func() {
			te := time.Now()
			work.Add(int64(te.Sub(ts)))
			if tt.Slots != nil {
				tt.Slots[i] = [2]float64{ts.Sub(t0).Seconds(), te.Sub(t0).Seconds()}
			}
		}()
		l, e := i/nKeep, i%nKeep
		ml := &m.Layers[l]
		src := int(keep.Keep[l][e])
		var r slotResult
		parts, _ := ml.Parts()
		for p, pt := range parts {
			t := pt.Tensor
			off, size, err := pt.Slice(src)
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
			n := int(pt.Ne0 * pt.Rows)
			file, fileOff := f.Locate(t)
			where := span{ctx: ctx, file: file, tensor: t.Name, expert: src, firstElem: pt.FirstElement(src), fileOff: fileOff + off}
			if packCalibrated(cfg, t) {
				s := <-scratches
				r.parts[p], r.st[p], err = calibratedSpan(ctx, cfg.Experts, t, cfg.Type, in, n, s, src, pt.RowOffset(), pt.Rows, where)
				scratches <- s
				if err != nil {
					return r, err
				}
				continue
			}
			r.parts[p] = make([]byte, h.Parts[p].Bytes)
			s := <-scratches
			r.st[p], err = convertSpan(t.Type, cfg.Type, in, r.parts[p], n, s, opt, where)
			scratches <- s
			if err != nil {
				return r, err
			}
		}
		return r, nil
	}, func(i int, r slotResult) error {
		ts := time.Now()
		tt.EmitWait += ts.Sub(lastEmit).Seconds()
		defer func() {
			lastEmit = time.Now()
			tt.Emit += lastEmit.Sub(ts).Seconds()
		}()
		l, e := i/nKeep, i%nKeep
		if err := pw.WriteSlot(l, e, r.parts); err != nil {
			return err
		}
		for p := range r.st {
			stats[l][p].add(r.st[p])
		}
		prog.Add(r.inBytes)
		return nil
	})
	tt.Work = float64(work.Load()) / 1e9
	if err != nil {
		return nil, err
	}
	tf := time.Now()
	if err := pw.FinishExperts(); err != nil {
		return nil, err
	}
	tt.Finish = time.Since(tf).Seconds()
	return stats, nil
}

// writePackModel writes model.gguf: every tensor of the source but the
// expert matrices, as strata.KeptTensors cuts them to the kept experts, and
// a Q8_0 copy right after each router. The multi-token-prediction blocks
// are dropped unless carryMTP copies them whole.
func writePackModel(ctx context.Context, pw *strata.PackWriter, f *gguf.File, m *gguf.MoE, keep, packKeep *strata.Keep, sourceNExpert int, carryMTP bool, prog Progress) error {
	kept, err := strata.KeptTensors(f, m, keep, carryMTP)
	if err != nil {
		return err
	}
	matrices := map[*gguf.TensorInfo]bool{}
	for _, l := range m.Layers {
		parts, _ := l.Parts()
		for _, pt := range parts {
			matrices[pt.Tensor] = true
		}
	}
	type job struct {
		kt     *strata.KeptTensor
		q8copy bool // the Q8_0 copy of the router kt
	}
	var jobs []job
	var specs []gguf.TensorSpec
	nKeep := int64(keep.NKeep())
	for i := range kept {
		kt := &kept[i]
		if matrices[kt.Src] {
			continue
		}
		jobs = append(jobs, job{kt: kt})
		specs = append(specs, kt.Spec)
		if b, _, _ := gguf.SplitBlockName(kt.Src.Name); kt.Layer >= 0 && kt.Src.Name == gguf.RouterName(b) {
			specs = append(specs, strata.RouterCopySpec(b, m.Embd, nKeep))
			jobs = append(jobs, job{kt: kt, q8copy: true})
		}
	}
	keys, err := pw.Keys(sourceNExpert)
	if err != nil {
		return err
	}
	if _, ok := f.Get(strata.KeySourceKeep); ok {
		// A pruned source's record, carried, names the pack's experts.
		keys = append(keys, packKeep.SourceKV()...)
	}
	kv, err := strata.KeptKV(f, m, int(nKeep), carryMTP, keys)
	if err != nil {
		return err
	}
	w, err := pw.CreateModel(kv, specs)
	if err != nil {
		return err
	}
	for k, j := range jobs {
		if err := ctx.Err(); err != nil {
			w.Abort()
			return context.Cause(ctx)
		}
		if j.q8copy {
			err = writeRouterCopy(w, specs[k].Name, f, j.kt, keep, m.Embd)
		} else {
			err = w.CopyTensor(specs[k].Name, j.kt.Reader(f, keep))
			prog.Add(j.kt.Src.Size)
		}
		if err != nil {
			w.Abort()
			return err
		}
	}
	return w.Commit()
}

func writeRouterCopy(w *gguf.FileWriter, name string, f *gguf.File, router *strata.KeptTensor, keep *strata.Keep, embd int64) error {
	rows, err := router.Bytes(f, keep)
	if err != nil {
		return err
	}
	x := make([]float32, embd*int64(keep.NKeep()))
	if err := dequantize(router.Src.Type, rows, x); err != nil {
		return fmt.Errorf("%s: tensor %q: %w", f.Path, router.Src.Name, err)
	}
	q, err := strata.RouterCopy(x, int(embd))
	if err != nil {
		return fmt.Errorf("%s: tensor %q: %w", f.Path, router.Src.Name, err)
	}
	return w.WriteTensor(name, q)
}

// packCalibrated reports whether t's experts come from the calibrated
// quantizer.
func packCalibrated(cfg PackConfig, t *gguf.TensorInfo) bool {
	return cfg.Experts != nil && cfg.Type == quant.Q2_0 && cfg.Experts.Handles(t.Name)
}

// absPath is path made absolute ("" stays ""), for the manifest's records.
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

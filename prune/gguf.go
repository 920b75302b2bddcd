package prune

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/strata"
)

// KeyCriterion records how the experts were chosen; the pruned GGUF also
// gains strata.strata.KeySourceNExpert.
const KeyCriterion = "stratactl.prune.criterion"

// Result describes a written pruned model.
type Result struct {
	Path          string `json:"path"`
	Bytes         int64  `json:"bytes"`
	SourceBytes   int64  `json:"source_bytes"`
	NExpert       int    `json:"n_expert_source"`
	NKeep         int    `json:"n_expert"`
	SlicedTensors int    `json:"sliced_tensors"`
	CopiedTensors int    `json:"copied_tensors"`
	// Shards lists the files of a split output (absent for one file).
	Shards []string `json:"shards,omitempty"`
	// MTP says what became of the source's multi-token-prediction blocks
	// (absent when it has none).
	MTP *strata.MTPRecord `json:"mtp,omitempty"`
}

// Options tune Write.
type Options struct {
	// Criterion is recorded under stratactl.prune.criterion ("keep-map" when
	// the plan came from an existing keep map).
	Criterion string
	// Progress is called with the bytes of tensor data written so far since
	// the last call; nil for none.
	Progress func(n int64)
	// SliceBuffer bounds the bytes read at once (default 8 MiB).
	SliceBuffer int
	// Split writes the output as shards (llama.cpp's gguf-split naming);
	// the zero value writes one file.
	Split gguf.SplitOptions
	// CarryMTP copies the multi-token-prediction blocks unchanged, every
	// expert kept; by default they are dropped and the keys say so
	// (strata.KeptTensors, strata.KeptKV).
	CarryMTP bool
	// KeepMap, when set, is where the keep map is written beside the model:
	// both outputs or neither (the model's files are removed again when the
	// keep map cannot be written).
	KeepMap string
}

// Write streams src into a GGUF at out that holds only the experts of keep:
// every per-expert tensor of a MoE layer (strata.ExpertIndexed) is cut down
// to the kept slices (in keep-map order), {arch}.expert_count becomes the
// kept count, the original experts kept (strata.Keep.SourceKV: the
// original count and ids, composed with src's own record when src was
// pruned already) and the criterion are recorded, and every
// other tensor and key is copied unchanged. Nothing appears at out unless all
// of it was written.
func Write(ctx context.Context, src *gguf.File, keep *strata.Keep, out string, opt Options) (*Result, error) {
	if err := keep.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", src.Path, err)
	}
	m, err := src.MoE()
	if err != nil {
		return nil, err
	}
	if err := keep.Fits(m, src.Path); err != nil {
		return nil, fmt.Errorf("%s: %w", src.Path, err)
	}
	nExpert := m.Experts
	k := keep.NKeep()
	// Grouped routing survives a group-balanced keep (the group keys are
	// copied unchanged); any other keep is refused.
	if err := keep.FitsGroups(src, m); err != nil {
		return nil, err
	}
	// The file records the original experts it holds; pruning a pruned
	// file composes its record with keep, so the record always names the
	// original model's experts.
	orig := keep
	rec, err := strata.SourceKeep(src, m)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		orig = rec.Compose(keep)
	}
	set := orig.SourceKV()
	if opt.Criterion != "" {
		set = append(set, gguf.KV{Key: KeyCriterion, Value: gguf.String(opt.Criterion)})
	}
	kv, err := strata.KeptKV(src, m, k, opt.CarryMTP, set)
	if err != nil {
		return nil, err
	}
	kept, err := strata.KeptTensors(src, m, keep, opt.CarryMTP)
	if err != nil {
		return nil, err
	}
	specs := make([]gguf.TensorSpec, len(kept))
	res := &Result{Path: out, SourceBytes: src.Size, NExpert: nExpert, NKeep: k}
	if len(m.MTP) > 0 {
		res.MTP = &strata.MTPRecord{Blocks: m.MTP, Carried: opt.CarryMTP}
	}
	for i := range kept {
		specs[i] = kept[i].Spec
		if kept[i].Layer < 0 {
			res.CopiedTensors++
		} else {
			res.SlicedTensors++
		}
	}

	w, paths, err := gguf.CreateSplit(out, kv, specs, opt.Split)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	bufSize := opt.SliceBuffer
	if bufSize <= 0 {
		bufSize = 8 << 20
	}
	for i := range kept {
		t := kept[i].Src
		r := &progressReader{ctx: ctx, r: bufio.NewReaderSize(kept[i].Reader(src, keep), bufSize), progress: opt.Progress}
		if err := w.CopyTensor(t.Name, r); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s: tensor %q: %w", src.Path, t.Name, err)
		}
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	ok = true
	if opt.KeepMap != "" {
		if err := strata.WriteKeep(opt.KeepMap, keep); err != nil {
			for _, p := range paths {
				os.Remove(p)
			}
			return nil, err
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		res.Bytes += st.Size()
	}
	if len(paths) > 1 {
		res.Shards = paths
	}
	return res, nil
}

// progressReader reports bytes as they are read and stops when ctx is done.
type progressReader struct {
	ctx      context.Context
	r        io.Reader
	progress func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	if p.progress != nil && n > 0 {
		p.progress(int64(n))
	}
	return n, err
}

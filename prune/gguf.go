package prune

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
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
	// KeepMap, when set, is where the keep map is written beside the model:
	// both outputs or neither (the model's files are removed again when the
	// keep map cannot be written).
	KeepMap string
}

// Write streams src into a GGUF at out that holds only the experts of keep:
// every per-expert tensor of a MoE layer (strata.ExpertIndexed) is cut down
// to the kept slices (in keep-map order), {arch}.expert_count becomes the
// kept count, the source count and the criterion are recorded, and every
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
	if g, err := src.Uint32(src.ArchKey("expert_group_count")); err == nil && g > 1 {
		return nil, fmt.Errorf("%s: %s = %d: grouped routing ties experts to fixed groups, which pruning would break", src.Path, src.ArchKey("expert_group_count"), g)
	}
	layerOf := map[int]int{}
	for l, ml := range m.Layers {
		layerOf[ml.Block] = l
	}

	kv, err := prunedKV(src, k, nExpert, opt.Criterion)
	if err != nil {
		return nil, err
	}
	specs := src.Specs()
	sliced := make([]int, len(specs)) // MoE layer index + 1 of a sliced tensor, 0 to copy
	res := &Result{Path: out, SourceBytes: src.Size, NExpert: nExpert, NKeep: k}
	for i := range specs {
		t := &src.Tensors[i]
		b, name, ok := gguf.SplitBlockName(t.Name)
		l, moe := layerOf[b]
		if !ok || !moe || !strata.ExpertIndexed(name) {
			res.CopiedTensors++
			continue
		}
		last := len(t.Dims) - 1
		if t.Dims[last] != int64(nExpert) {
			return nil, fmt.Errorf("%s: tensor %q (info at byte %d): last dimension %d is not the %d experts", src.Path, t.Name, t.InfoOffset, t.Dims[last], nExpert)
		}
		if per, err := quant.RowBytes(t.Type, t.Elements()/int64(nExpert)); err != nil || per*int64(nExpert) != t.Size {
			return nil, fmt.Errorf("%s: tensor %q (info at byte %d): %d bytes of %s do not split into %d whole experts", src.Path, t.Name, t.InfoOffset, t.Size, t.Type, nExpert)
		}
		specs[i].Dims[last] = int64(k)
		sliced[i] = l + 1
		res.SlicedTensors++
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
	for i := range specs {
		t := &src.Tensors[i]
		var parts []io.Reader
		if sliced[i] == 0 {
			parts = append(parts, src.SectionReader(t))
		} else {
			per := t.Size / int64(nExpert)
			for _, e := range keep.Keep[sliced[i]-1] {
				parts = append(parts, io.NewSectionReader(src.SectionReader(t), int64(e)*per, per))
			}
		}
		r := &progressReader{ctx: ctx, r: bufio.NewReaderSize(io.MultiReader(parts...), bufSize), progress: opt.Progress}
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

// prunedKV is src's metadata with the expert count set to k and the source
// count and criterion recorded, in the source's key order (new keys last).
func prunedKV(src *gguf.File, k, nExpert int, criterion string) ([]gguf.KV, error) {
	countKey := src.ArchKey("expert_count")
	kv := make([]gguf.KV, 0, len(src.KV)+2)
	set := map[string]gguf.Value{
		countKey:                gguf.Uint32(uint32(k)),
		strata.KeySourceNExpert: gguf.Uint32(uint32(nExpert)),
	}
	if criterion != "" {
		set[KeyCriterion] = gguf.String(criterion)
	}
	done := map[string]bool{}
	for _, p := range src.KV {
		if v, ok := set[p.Key]; ok {
			if p.Key == countKey {
				// Keep the source's integer type so readers that insist on it
				// (u32 in llama.cpp) see what they expect.
				var err error
				if v, err = sameIntType(p.Value, uint64(k)); err != nil {
					return nil, fmt.Errorf("%s: key %q: %w", src.Path, p.Key, err)
				}
			}
			kv = append(kv, gguf.KV{Key: p.Key, Value: v})
			done[p.Key] = true
			continue
		}
		kv = append(kv, p)
	}
	for _, key := range []string{countKey, strata.KeySourceNExpert, KeyCriterion} {
		if v, ok := set[key]; ok && !done[key] {
			kv = append(kv, gguf.KV{Key: key, Value: v})
		}
	}
	return kv, nil
}

func sameIntType(old gguf.Value, x uint64) (gguf.Value, error) {
	switch old.Type {
	case gguf.TypeUint32:
		return gguf.Uint32(uint32(x)), nil
	case gguf.TypeInt32:
		return gguf.Int32(int32(x)), nil
	case gguf.TypeUint64:
		return gguf.Uint64(x), nil
	case gguf.TypeInt64:
		return gguf.Int64(int64(x)), nil
	case gguf.TypeUint16:
		return gguf.Uint16(uint16(x)), nil
	}
	return gguf.Value{}, fmt.Errorf("holds %s, want an integer", old.TypeName())
}

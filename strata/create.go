package strata

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// PackWriter writes a pack folder; every writer of packs (stratactl pack,
// the engine's synthetic packs, the test packs) goes through it, so the
// folder, its keys and its files are laid out in one place. The files are
// written into a temporary folder beside the target, which Commit renames
// into place only once every file is complete; Abort removes it.
//
// The order is fixed: the slots (WriteSlot, any order, any goroutine), then
// FinishExperts, then model.gguf (Keys, CreateModel), then Commit.
type PackWriter struct {
	dir, tmp string
	lock     *osutil.Temp // the temporary folder's lock, held while it is written
	h        *Header
	x        *ExpertsOut
	experts  bool // model.experts is complete
	done     bool
}

// CreatePack starts a pack at dir (which must not exist) whose experts file
// has header h.
func CreatePack(dir string, h *Header) (*PackWriter, error) {
	out := filepath.Clean(dir)
	if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("%s already exists: remove it or choose another -o", out)
	}
	// The temporary folder is locked while it is written, and a stale one
	// a killed run left under the same name is swept (osutil.MkdirTemp).
	lock, err := osutil.MkdirTemp(out)
	if err != nil {
		return nil, err
	}
	tmp := lock.Path
	x, err := CreateExperts(filepath.Join(tmp, ExpertsFile), h)
	if err != nil {
		os.RemoveAll(tmp)
		lock.Release()
		return nil, err
	}
	return &PackWriter{dir: out, tmp: tmp, lock: lock, h: h, x: x}, nil
}

// RemoveEmptyDir removes dir when it is an empty folder, so that a pack can
// be created under its name by a caller given a fresh temporary folder; a
// missing dir is fine, and anything else is left for CreatePack to refuse.
func RemoveEmptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) > 0 {
		return nil
	}
	return os.Remove(dir)
}

// Header is the experts file's header.
func (w *PackWriter) Header() *Header { return w.h }

// Path is where file name of the pack is being written (in the temporary
// folder until Commit).
func (w *PackWriter) Path(name string) string { return filepath.Join(w.tmp, name) }

// WriteSlot writes the slot of (layer index, kept expert) from its parts;
// see ExpertsWriter.WriteSlot.
func (w *PackWriter) WriteSlot(layerIdx, expert int, parts [NumParts][]byte) error {
	return w.x.WriteSlot(layerIdx, expert, parts)
}

// FinishExperts completes model.experts once every slot is written.
func (w *PackWriter) FinishExperts() error {
	if err := w.x.Commit(); err != nil {
		return err
	}
	w.experts = true
	return nil
}

// Keys are the strata.* keys of the pack's model.gguf, in the order a
// writer appends them; sourceNExpert is the experts per layer before
// pruning.
func (w *PackWriter) Keys(sourceNExpert int) ([]gguf.KV, error) {
	if !w.experts {
		return nil, fmt.Errorf("%s: the keys of model.gguf are known once model.experts is complete", w.dir)
	}
	return []gguf.KV{
		{Key: KeyFormatVersion, Value: gguf.Uint32(FormatVersion)},
		{Key: KeyExpertsFile, Value: gguf.String(ExpertsFile)},
		{Key: KeyExpertsBytes, Value: gguf.Uint64(w.h.FileBytes)},
		{Key: KeySlotBytes, Value: gguf.Uint64(w.h.SlotBytes)},
		{Key: KeySourceNExpert, Value: gguf.Uint32(uint32(sourceNExpert))},
		{Key: KeyPackID, Value: gguf.String(w.h.PackID.String())},
	}, nil
}

// CreateModel starts model.gguf with the metadata kv (which must hold Keys)
// and the tensors specs.
func (w *PackWriter) CreateModel(kv []gguf.KV, specs []gguf.TensorSpec) (*gguf.FileWriter, error) {
	if !w.experts {
		return nil, fmt.Errorf("%s: model.gguf is written after model.experts", w.dir)
	}
	return gguf.Create(w.Path(ModelFile), kv, specs)
}

// Commit writes keep.strp from keep (the kept source experts of each
// stored layer, as many as the experts file stores) and, when man is not
// nil, manifest.json (its outputs measured here, its format set), then
// publishes the folder under its name. model.gguf must have been committed.
func (w *PackWriter) Commit(ctx context.Context, keep *Keep, man *Manifest) error {
	if !slices.Equal(keep.Layers, w.h.Layers) || keep.NKeep() != int(w.h.NExpert) {
		return fmt.Errorf("%s: the keep map keeps %d experts of layers %v, the experts file stores %d of layers %v", w.dir, keep.NKeep(), keep.Layers, w.h.NExpert, w.h.Layers)
	}
	if err := WriteKeep(w.Path(KeepFile), keep); err != nil {
		return err
	}
	if man != nil {
		man.Format, man.FormatVersion, man.PackID = ManifestFormat, FormatVersion, w.h.PackID.String()
		man.Outputs = man.Outputs[:0]
		for _, o := range [][2]string{{RoleModel, ModelFile}, {RoleExperts, ExpertsFile}, {RoleKeep, KeepFile}} {
			n, sum, err := HashFile(ctx, w.Path(o[1]))
			if err != nil {
				return err
			}
			man.Outputs = append(man.Outputs, FileRecord{Role: o[0], Path: o[1], Bytes: n, SHA256: sum})
		}
		if err := WriteManifest(w.Path(ManifestFile), man); err != nil {
			return err
		}
	}
	for _, name := range []string{ModelFile, ExpertsFile} {
		if st, err := os.Stat(w.Path(name)); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("%s: %s was not written", w.dir, name)
		}
	}
	if err := publishDir(w.tmp, w.dir); err != nil {
		return err
	}
	w.done = true
	w.lock.Release()
	return nil
}

// Abort discards everything written; after Commit it does nothing.
func (w *PackWriter) Abort() {
	if w.done {
		return
	}
	if !w.experts {
		w.x.Abort()
	}
	os.RemoveAll(w.tmp)
	w.lock.Release()
	w.done = true
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

// RouterCopySpec is the tensor of block's Q8_0 router copy for a router of
// nExpert rows of embd.
func RouterCopySpec(block int, embd, nExpert int64) gguf.TensorSpec {
	return gguf.TensorSpec{Name: RouterCopyName(block), Type: quant.Q8_0, Dims: []int64{embd, nExpert}}
}

// RouterCopy is the Q8_0 copy of a router's values (rows of embd, one per
// kept expert), refusing a non-finite value, whose row and column it names.
func RouterCopy(router []float32, embd int) ([]byte, error) {
	for i, v := range router {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("kept row %d column %d is %v: refusing a non-finite router", i/embd, i%embd, v)
		}
	}
	q := make([]byte, len(router)/32*34)
	if err := quant.Quantize(quant.Q8_0, router, q, nil); err != nil {
		return nil, err
	}
	return q, nil
}

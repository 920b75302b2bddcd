package convert

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/strata"
)

// origin is what verify knows of --source before the manifest is read:
// its expert count, and whether it records original experts of its own
// (strata.SourceKeep), to tell the original model of a pruned pack source
// from another file.
type origin struct {
	experts   int
	hasRecord bool
}

// checkManifest checks manifest.json: the outputs' sizes and sha256, and
// with a source, that it is the model the pack was made from. A pack made
// from a pruned GGUF (parameters.source_keep: keep.strp names the original
// model's experts) may be compared with that original model instead: a
// source that is not the recorded file but holds keep's NExpert experts and
// no record of its own. Then r.SourceMadeFrom names the recorded file and
// the experts are compared with their original experts (the slots and the
// dense tensors, not the hash, tie the pack to it).
func checkManifest(ctx context.Context, dir, source string, src *origin, keep *strata.Keep, r *VerifyReport) (*strata.Manifest, error) {
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
		var bad []Finding
		if len(files) != len(models) {
			bad = append(bad, Finding{Check: "manifest", File: source, Offset: -1, Layer: -1, Expert: -1, Msg: fmt.Sprintf("the source is %d file(s); the pack was made from %d", len(files), len(models))})
		} else {
			for k, in := range models {
				size, sum, err := strata.HashFile(ctx, files[k])
				if err != nil {
					return nil, err
				}
				if size != in.Bytes || sum != in.SHA256 {
					bad = append(bad, Finding{Check: "manifest", File: files[k], Offset: -1, Layer: -1, Expert: -1, Msg: fmt.Sprintf("the source has %d bytes sha256 %s; the pack was made from %d bytes sha256 %s", size, sum, in.Bytes, in.SHA256)})
				}
			}
		}
		made := madeFrom(models)
		switch {
		case len(bad) == 0:
		case man.Parameters.SourceKeep && keep != nil && src != nil && !src.hasRecord && src.experts == int(keep.NExpert):
			r.SourceMadeFrom = made
		case man.Parameters.SourceKeep:
			hint := fmt.Sprintf(": the pack was made from %s, a GGUF stratactl prune made; give it, or the original model it was pruned from", made)
			if keep != nil {
				hint += fmt.Sprintf(" (%d experts per layer)", keep.NExpert)
			}
			for i := range bad {
				bad[i].Msg += hint
			}
			fallthrough
		default:
			for _, f := range bad {
				r.fail(f)
			}
		}
	}
	// The keep map in the pack is the one the pack was made with (unless
	// it was composed with a pruned source's record, over other ids).
	if keepIn != nil && !man.Parameters.SourceKeep {
		for _, o := range man.Outputs {
			if o.Path == strata.KeepFile && o.SHA256 != keepIn.SHA256 {
				r.failf("manifest", path, -1, "keep.strp differs from the keep map given to pack (%s)", keepIn.Path)
			}
		}
	}
	return man, nil
}

// madeFrom names the model files a manifest records.
func madeFrom(models []strata.FileRecord) string {
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Path
	}
	return strings.Join(names, ", ")
}

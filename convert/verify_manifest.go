package convert

import (
	"context"
	"path/filepath"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/strata"
)

func checkManifest(ctx context.Context, dir, source string, r *VerifyReport) (*strata.Manifest, error) {
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
		if len(files) != len(models) {
			r.failf("manifest", source, -1, "the source is %d file(s); the pack was made from %d", len(files), len(models))
		} else {
			for k, in := range models {
				size, sum, err := strata.HashFile(ctx, files[k])
				if err != nil {
					return nil, err
				}
				if size != in.Bytes || sum != in.SHA256 {
					r.failf("manifest", files[k], -1, "the source has %d bytes sha256 %s; the pack was made from %d bytes sha256 %s", size, sum, in.Bytes, in.SHA256)
				}
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

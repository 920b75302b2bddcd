package convert

import (
	"context"
	"path/filepath"

	"github.com/stratactl/stratactl/strata"
)

// inputRecord is the manifest's record of the input of role, nil when none.
func inputRecord(man *strata.Manifest, role string) *strata.FileRecord {
	if man == nil {
		return nil
	}
	for i := range man.Inputs {
		if man.Inputs[i].Role == role {
			return &man.Inputs[i]
		}
	}
	return nil
}

// findInput looks for the file a manifest records (by absolute path since
// pack records inputs so; older packs by a path relative to where they were
// made) and returns the first candidate whose size and sha256 match: the
// recorded path, then the same name beside the pack folder, beside the
// source and in the working directory. "" when none matches: the input is
// missing (moved or deleted), which is not damage to the pack.
func findInput(ctx context.Context, rec *strata.FileRecord, pack, source string) (string, error) {
	name := filepath.Base(rec.Path)
	cands := []string{rec.Path}
	if !filepath.IsAbs(rec.Path) {
		cands = append(cands, filepath.Join(filepath.Dir(filepath.Clean(pack)), rec.Path))
	}
	cands = append(cands, filepath.Join(filepath.Dir(filepath.Clean(pack)), name))
	if source != "" {
		cands = append(cands, filepath.Join(filepath.Dir(source), name))
	}
	cands = append(cands, name)
	seen := map[string]bool{}
	for _, c := range cands {
		abs, err := filepath.Abs(c)
		if err != nil || seen[abs] {
			continue
		}
		seen[abs] = true
		size, sum, err := strata.HashFile(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return "", context.Cause(ctx)
			}
			continue
		}
		if size == rec.Bytes && sum == rec.SHA256 {
			return c, nil
		}
	}
	return "", nil
}

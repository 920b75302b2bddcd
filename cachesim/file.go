package cachesim

import (
	"context"
	"fmt"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
)

// WriteFile writes t to path; the file appears only when complete.
func WriteFile(path string, t *Trace) error {
	out, err := gguf.CreateAtomic(path)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := t.WriteTo(out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return out.Commit()
}

// ReadFile reads and checks the trace at path.
func ReadFile(path string) (*Trace, error) {
	b, err := osutil.ReadFile(context.Background(), path, osutil.MaxTextBytes)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

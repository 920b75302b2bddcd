package cachesim

import (
	"fmt"
	"io"

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
	fh, size, err := osutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(fh, b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(b, path)
}

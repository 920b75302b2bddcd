package engine

import (
	"fmt"

	"github.com/stratactl/stratactl/internal/osutil"
)

// mapArena returns n zero bytes starting at a multiple of align, outside
// the Go heap (osutil.MapAnon: an anonymous private mapping, on huge pages
// where the kernel gives them), and the function that unmaps them. The
// expert arena lives there so that the collector's heap goal (by default
// twice the live heap) is not doubled by it: on the Go heap a 12 GB arena
// let up to 12 GB of the decode's garbage, or a closed store's whole arena,
// stay resident before the next collection. Close unmaps it at once. (On a
// platform without anonymous mappings through package syscall MapAnon's
// bytes are the heap's, and the collector frees them.)
func mapArena(n, align int) ([]byte, func() error, error) {
	b, unmap, err := osutil.MapAnon(n, align)
	if err != nil {
		return nil, nil, fmt.Errorf("expert arena: %w", err)
	}
	return b, unmap, nil
}

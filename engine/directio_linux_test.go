package engine

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stratactl/stratactl/engine/enginetest"
	"github.com/stratactl/stratactl/internal/testutil"
)

// TestPackFallsBackToBuffered: when the filesystem refuses O_DIRECT the
// store reads buffered, says so, and decodes the same tokens.
func TestPackFallsBackToBuffered(t *testing.T) {
	dir := t.TempDir()
	enginetest.BuildPack(t, testutil.TinyModel(t, "model-iq4nl.gguf"), dir)
	saved := openDirect
	openDirect = func(string) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: dir, Err: syscall.EINVAL}
	}
	defer func() { openDirect = saved }()
	m, err := Open(dir, Options{Mode: Exact, Stream: StreamOptions{ArenaMB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	direct, note := m.Stream().Direct()
	if direct || !strings.Contains(note, "refused O_DIRECT") {
		t.Fatalf("direct %v, note %q", direct, note)
	}
	ref := readGreedy(t, testutil.TinyModel(t, "refs-iq4nl", "greedy.json"))
	ids, _ := greedy(t, m, ref.PromptIDs, 8)
	for i := range ids {
		if ids[i] != ref.GeneratedIDs[i] {
			t.Fatalf("step %d: %d, want %d", i, ids[i], ref.GeneratedIDs[i])
		}
	}
}

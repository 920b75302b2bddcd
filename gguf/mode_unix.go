//go:build unix

package gguf

import (
	"bytes"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

// outputMode is 0666 less the process umask, read once: the mode os.Create
// would give a new file. The umask is read from /proc (Linux) rather than
// with umask(2), whose set-and-restore would race with other goroutines
// creating files; where /proc has no Umask line, 0644 is the common default.
var outputMode = sync.OnceValue(func() fs.FileMode {
	status, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range bytes.Split(status, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
				if mask, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32); err == nil {
					return fs.FileMode(0o666 &^ mask)
				}
			}
		}
	}
	return 0o644
})

//go:build unix

package gguf

import (
	"io/fs"
	"sync"
	"syscall"
)

// outputMode is 0666 less the process umask, read once: the mode os.Create
// would give a new file.
var outputMode = sync.OnceValue(func() fs.FileMode {
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	return fs.FileMode(0o666 &^ mask)
})

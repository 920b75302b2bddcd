//go:build !unix

package gguf

import "io/fs"

func outputMode() fs.FileMode { return 0o666 }

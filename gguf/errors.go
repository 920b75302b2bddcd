package gguf

import (
	"errors"
	"fmt"
)

// ErrFormat is wrapped by every error about a malformed file, so callers can
// tell bad input from I/O failures with errors.Is.
var ErrFormat = errors.New("gguf: malformed file")

// FormatError locates a problem in a file: the byte offset, and the key or
// tensor it concerns when there is one.
type FormatError struct {
	File   string
	Offset int64
	Key    string // metadata key, if the problem is in one
	Tensor string // tensor name, if the problem is in one
	Msg    string
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("%s: byte %d: ", e.File, e.Offset)
	switch {
	case e.Tensor != "":
		s += fmt.Sprintf("tensor %q: ", e.Tensor)
	case e.Key != "":
		s += fmt.Sprintf("key %q: ", e.Key)
	}
	return s + e.Msg
}

func (e *FormatError) Unwrap() error { return ErrFormat }

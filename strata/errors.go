// Package strata reads and writes the two binary files of a strata pack
// (docs/FORMATS.md): model.experts (STRX: one aligned slot per MoE layer and
// expert) and keep.strp (STRP: which source experts a pruned model kept, the
// per-layer hotness ranking and optional statistics). Readers trust nothing in
// a file: every count is checked against the bytes present before anything
// is allocated, and every rejection names the file and the byte offset.
package strata

import (
	"errors"
	"fmt"
)

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("strata: malformed file")

// ErrChecksum is wrapped by every CRC mismatch, so a caller can tell damage
// from a structural error with errors.Is.
var ErrChecksum = errors.New("strata: checksum mismatch")

// FormatError locates a problem in a strata file (Offset -1 when it is
// about no one byte). Layer (the block index),
// Expert and Part are set when the problem lies inside one slot; Layer is -1
// otherwise.
type FormatError struct {
	File   string
	Offset int64
	Layer  int // block index N, or -1
	Expert int // -1 when not about one expert
	Part   string
	Msg    string
	err    error // ErrFormat or ErrChecksum
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("%s: byte %d: ", e.File, e.Offset)
	if e.Offset < 0 {
		s = e.File + ": "
	}
	if e.Layer >= 0 {
		s += fmt.Sprintf("layer %d ", e.Layer)
	}
	if e.Expert >= 0 {
		s += fmt.Sprintf("expert %d ", e.Expert)
	}
	if e.Part != "" {
		s += fmt.Sprintf("part %s ", e.Part)
	}
	if e.Layer >= 0 || e.Expert >= 0 || e.Part != "" {
		s = s[:len(s)-1] + ": "
	}
	return s + e.Msg
}

func (e *FormatError) Unwrap() error {
	if e.err == nil {
		return ErrFormat
	}
	return e.err
}

func formatErr(file string, off int64, format string, args ...any) *FormatError {
	return &FormatError{File: file, Offset: off, Layer: -1, Expert: -1, Msg: fmt.Sprintf(format, args...)}
}

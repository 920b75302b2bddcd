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
	"strings"
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
	return Location(e.File, e.Offset, e.Layer, e.Expert, e.Part) + e.Msg
}

// Location is how a report names a place in a pack's file, before what is
// wrong there: "FILE: byte N: layer L expert E part P: ", each part only
// where known (file "", offset, layer or expert < 0, part ""). verify's
// findings name places the same way.
func Location(file string, offset int64, layer, expert int, part string) string {
	var s string
	if file != "" {
		s = file + ": "
	}
	if offset >= 0 {
		s += fmt.Sprintf("byte %d: ", offset)
	}
	var at []string
	if layer >= 0 {
		at = append(at, fmt.Sprintf("layer %d", layer))
	}
	if expert >= 0 {
		at = append(at, fmt.Sprintf("expert %d", expert))
	}
	if part != "" {
		at = append(at, "part "+part)
	}
	if len(at) > 0 {
		s += strings.Join(at, " ") + ": "
	}
	return s
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

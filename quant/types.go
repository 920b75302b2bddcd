// Package quant owns ggml's tensor types: the type table, and the numeric
// definitions of every block format (dequantize, quantize). Speed lives in
// package kernels; this package is the reference.
package quant

//go:generate go run ./internal/gentables -in ../../shared/fixtures/ggml/tables.json -out tables_gen.go

import "fmt"

// Type is a ggml tensor type id (ggml_type).
type Type uint32

// The ggml type ids this project names in code. The full table, with every id
// 0..42, comes from ggml's own constants (tables_gen.go).
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
	Q1_0    Type = 41
	Q2_0    Type = 42
)

// TypeInfo is one row of ggml's type table.
type TypeInfo struct {
	ID            Type
	Name          string // ggml_type_name, e.g. "q4_K", "iq3_s", "bf16"
	BlockElements int    // weights per block (1 for plain types)
	BlockBytes    int    // bytes per block
	Quantized     bool
	HasToFloat    bool // ggml has a to_float for it
	Removed       bool // an id ggml retired; files must not use it
}

// NumTypes is one past the largest type id known.
const NumTypes = len(typeTable)

// Info returns the table row of t, and false for an id that is unknown or
// retired (such a type cannot appear in a valid file).
func Info(t Type) (TypeInfo, bool) {
	if int(t) >= len(typeTable) {
		return TypeInfo{}, false
	}
	ti := typeTable[t]
	if ti.Removed || ti.BlockBytes == 0 {
		return TypeInfo{}, false
	}
	return ti, true
}

// Valid reports whether t is a type id a file may use.
func (t Type) Valid() bool { _, ok := Info(t); return ok }

// String is ggml's type name in upper case as llama.cpp prints it (Q4_K,
// IQ3_S, BF16), or "type(N)" for an unknown id.
func (t Type) String() string {
	ti, ok := Info(t)
	if !ok {
		return fmt.Sprintf("type(%d)", uint32(t))
	}
	return upper(ti.Name)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// ParseType accepts a type by name, case-insensitively ("q2_0", "IQ3_S",
// "bf16").
func ParseType(name string) (Type, error) {
	u := upper(name)
	for _, ti := range typeTable {
		if !ti.Removed && ti.BlockBytes != 0 && upper(ti.Name) == u {
			return ti.ID, nil
		}
	}
	return 0, fmt.Errorf("unknown ggml type %q", name)
}

// RowBytes is the size in bytes of n weights of type t, and an error when t
// is unknown or n is not a whole number of blocks.
func RowBytes(t Type, n int64) (int64, error) {
	ti, ok := Info(t)
	if !ok {
		return 0, fmt.Errorf("unknown ggml type id %d", uint32(t))
	}
	be := int64(ti.BlockElements)
	if n < 0 || n%be != 0 {
		return 0, fmt.Errorf("%d elements is not a multiple of %s's block of %d", n, t, be)
	}
	return n / be * int64(ti.BlockBytes), nil
}

package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type tag of a metadata value (gguf_type).
type ValueType uint32

// The GGUF metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// size is the encoded size of a fixed-size scalar, 0 for string and array.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

func (t ValueType) valid() bool { return t <= TypeFloat64 }

// Value is one metadata value. Scalars hold the Go type of their tag
// (uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64,
// int64, float64). An array holds a typed slice of its element type
// ([]uint32, []string, ...), or []Value when its elements are arrays.
type Value struct {
	Type ValueType
	Elem ValueType // element type when Type is TypeArray
	v    any
}

// Scalar constructors, for writers.
func Uint8(x uint8) Value     { return Value{Type: TypeUint8, v: x} }
func Int8(x int8) Value       { return Value{Type: TypeInt8, v: x} }
func Uint16(x uint16) Value   { return Value{Type: TypeUint16, v: x} }
func Int16(x int16) Value     { return Value{Type: TypeInt16, v: x} }
func Uint32(x uint32) Value   { return Value{Type: TypeUint32, v: x} }
func Int32(x int32) Value     { return Value{Type: TypeInt32, v: x} }
func Float32(x float32) Value { return Value{Type: TypeFloat32, v: x} }
func Bool(x bool) Value       { return Value{Type: TypeBool, v: x} }
func String(x string) Value   { return Value{Type: TypeString, v: x} }
func Uint64(x uint64) Value   { return Value{Type: TypeUint64, v: x} }
func Int64(x int64) Value     { return Value{Type: TypeInt64, v: x} }
func Float64(x float64) Value { return Value{Type: TypeFloat64, v: x} }

// Array builds an array value from a typed slice ([]uint8 ... []float64,
// []bool, []string). Nested arrays are read but never written.
func Array(slice any) (Value, error) {
	var et ValueType
	switch slice.(type) {
	case []uint8:
		et = TypeUint8
	case []int8:
		et = TypeInt8
	case []uint16:
		et = TypeUint16
	case []int16:
		et = TypeInt16
	case []uint32:
		et = TypeUint32
	case []int32:
		et = TypeInt32
	case []float32:
		et = TypeFloat32
	case []bool:
		et = TypeBool
	case []string:
		et = TypeString
	case []uint64:
		et = TypeUint64
	case []int64:
		et = TypeInt64
	case []float64:
		et = TypeFloat64
	default:
		return Value{}, fmt.Errorf("gguf: cannot make an array of %T", slice)
	}
	return Value{Type: TypeArray, Elem: et, v: slice}, nil
}

// MustArray is Array for slices whose type is known at compile time.
func MustArray(slice any) Value {
	v, err := Array(slice)
	if err != nil {
		panic(err)
	}
	return v
}

// Any is the Go value: a scalar, a typed slice, or []Value.
func (v Value) Any() any { return v.v }

// Len is the element count of an array, 0 otherwise.
func (v Value) Len() int {
	if v.Type != TypeArray {
		return 0
	}
	switch a := v.v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// TypeName is "u32", "string", "array[string]", "array[array]"...
func (v Value) TypeName() string {
	if v.Type == TypeArray {
		return "array[" + v.Elem.String() + "]"
	}
	return v.Type.String()
}

// AsUint64 converts any integer scalar that is not negative.
func (v Value) AsUint64() (uint64, bool) {
	switch x := v.v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// AsInt64 converts any integer scalar that fits.
func (v Value) AsInt64() (int64, bool) {
	switch x := v.v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// AsFloat64 converts a float scalar.
func (v Value) AsFloat64() (float64, bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// JSON is the value as plain Go data for encoding/json: NaN and infinities
// become strings, since JSON has no literal for them, and a u8 array a list
// of numbers (encoding/json would write []byte as base64).
func (v Value) JSON() any {
	switch x := v.v.(type) {
	case []uint8:
		out := make([]uint16, len(x))
		for i, b := range x {
			out[i] = uint16(b)
		}
		return out
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case []float32:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = jsonFloat(float64(f))
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = jsonFloat(f)
		}
		return out
	case []Value:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e.JSON()
		}
		return out
	}
	return v.v
}

func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

// KV is one metadata pair, in file order.
type KV struct {
	Key   string
	Value Value
}

// Metadata is the ordered key/value list of a file, with typed accessors
// whose errors name the key and what was found.
type Metadata struct {
	File string // for error messages
	KV   []KV
	idx  map[string]int
	// offsets[i] is where KV[i]'s record starts in the file it was read
	// from, so that errors found after parsing can still point at bytes.
	offsets []int64
}

// KeyOffset is the byte offset of key's record in the file it was read from,
// or 0 when unknown (absent key, metadata built in memory or edited).
func (m *Metadata) KeyOffset(key string) int64 {
	if _, ok := m.Get(key); !ok || len(m.offsets) != len(m.KV) {
		return 0
	}
	i := m.idx[key]
	if m.KV[i].Key != key {
		return 0
	}
	return m.offsets[i]
}

func (m *Metadata) index() {
	m.idx = make(map[string]int, len(m.KV))
	for i, kv := range m.KV {
		m.idx[kv.Key] = i
	}
}

// Get returns the value of key.
func (m *Metadata) Get(key string) (Value, bool) {
	if m.idx == nil || len(m.idx) != len(m.KV) {
		m.index()
	}
	i, ok := m.idx[key]
	if !ok {
		return Value{}, false
	}
	return m.KV[i].Value, true
}

// Has reports whether key is present.
func (m *Metadata) Has(key string) bool { _, ok := m.Get(key); return ok }

// KeyError says that a key is missing or holds the wrong type.
type KeyError struct {
	File, Key string
	Want, Got string // Got is "" when the key is missing
	// Offset is where the key's pair starts in File, 0 when unknown (a
	// missing key, or metadata not read from a file).
	Offset int64
}

func (e *KeyError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("%s: metadata key %q is missing (want %s)", e.File, e.Key, e.Want)
	}
	if e.Offset > 0 {
		return fmt.Sprintf("%s: byte %d: metadata key %q holds %s, want %s", e.File, e.Offset, e.Key, e.Got, e.Want)
	}
	return fmt.Sprintf("%s: metadata key %q holds %s, want %s", e.File, e.Key, e.Got, e.Want)
}

// typeError is the KeyError of a key present with the wrong type.
func (m *Metadata) typeError(key, want, got string) error {
	return &KeyError{File: m.File, Key: key, Want: want, Got: got, Offset: m.KeyOffset(key)}
}

func (m *Metadata) lookup(key, want string) (Value, error) {
	v, ok := m.Get(key)
	if !ok {
		return Value{}, &KeyError{File: m.File, Key: key, Want: want}
	}
	return v, nil
}

// String returns a string value.
func (m *Metadata) String(key string) (string, error) {
	v, err := m.lookup(key, "string")
	if err != nil {
		return "", err
	}
	s, ok := v.v.(string)
	if !ok {
		return "", m.typeError(key, "string", v.TypeName())
	}
	return s, nil
}

// Uint32 returns an unsigned (or non-negative signed) integer that fits 32 bits.
func (m *Metadata) Uint32(key string) (uint32, error) {
	v, err := m.lookup(key, "u32")
	if err != nil {
		return 0, err
	}
	u, ok := v.AsUint64()
	if !ok || u > math.MaxUint32 {
		return 0, m.typeError(key, "u32", describe(v))
	}
	return uint32(u), nil
}

// Uint64 returns a non-negative integer.
func (m *Metadata) Uint64(key string) (uint64, error) {
	v, err := m.lookup(key, "u64")
	if err != nil {
		return 0, err
	}
	u, ok := v.AsUint64()
	if !ok {
		return 0, m.typeError(key, "u64", describe(v))
	}
	return u, nil
}

// Int64 returns any integer that fits int64.
func (m *Metadata) Int64(key string) (int64, error) {
	v, err := m.lookup(key, "i64")
	if err != nil {
		return 0, err
	}
	i, ok := v.AsInt64()
	if !ok {
		return 0, m.typeError(key, "i64", describe(v))
	}
	return i, nil
}

// Float32 returns a float value (f32, or f64 narrowed).
func (m *Metadata) Float32(key string) (float32, error) {
	v, err := m.lookup(key, "f32")
	if err != nil {
		return 0, err
	}
	f, ok := v.AsFloat64()
	if !ok {
		return 0, m.typeError(key, "f32", describe(v))
	}
	return float32(f), nil
}

// Bool returns a bool value.
func (m *Metadata) Bool(key string) (bool, error) {
	v, err := m.lookup(key, "bool")
	if err != nil {
		return false, err
	}
	b, ok := v.v.(bool)
	if !ok {
		return false, m.typeError(key, "bool", v.TypeName())
	}
	return b, nil
}

// Strings returns an array of strings.
func (m *Metadata) Strings(key string) ([]string, error) {
	v, err := m.lookup(key, "array[string]")
	if err != nil {
		return nil, err
	}
	s, ok := v.v.([]string)
	if !ok {
		return nil, m.typeError(key, "array[string]", v.TypeName())
	}
	return s, nil
}

// Int32s returns an array of i32 (token types, for example).
func (m *Metadata) Int32s(key string) ([]int32, error) {
	v, err := m.lookup(key, "array[i32]")
	if err != nil {
		return nil, err
	}
	s, ok := v.v.([]int32)
	if !ok {
		return nil, m.typeError(key, "array[i32]", v.TypeName())
	}
	return s, nil
}

// Float32s returns an array of f32 (token scores, for example).
func (m *Metadata) Float32s(key string) ([]float32, error) {
	v, err := m.lookup(key, "array[f32]")
	if err != nil {
		return nil, err
	}
	s, ok := v.v.([]float32)
	if !ok {
		return nil, m.typeError(key, "array[f32]", v.TypeName())
	}
	return s, nil
}

func describe(v Value) string {
	if v.Type == TypeArray {
		return v.TypeName()
	}
	return fmt.Sprintf("%s %v", v.TypeName(), v.v)
}

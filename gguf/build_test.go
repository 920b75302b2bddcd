package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// raw assembles GGUF bytes field by field, so that tests can build files the
// Writer would refuse to make (duplicate keys, nested arrays, bad versions).
type raw struct{ bytes.Buffer }

func (r *raw) u8(x uint8)   { r.WriteByte(x) }
func (r *raw) u32(x uint32) { r.Write(binary.LittleEndian.AppendUint32(nil, x)) }
func (r *raw) u64(x uint64) { r.Write(binary.LittleEndian.AppendUint64(nil, x)) }
func (r *raw) str(s string) { r.u64(uint64(len(s))); r.WriteString(s) }

// header writes magic, version and counts.
func (r *raw) header(version uint32, nTensors, nKV uint64) {
	r.WriteString(Magic)
	r.u32(version)
	r.u64(nTensors)
	r.u64(nKV)
}

func (r *raw) kvU32(key string, x uint32) { r.str(key); r.u32(uint32(TypeUint32)); r.u32(x) }

// tensor writes one tensor info record.
func (r *raw) tensor(name string, typ quant.Type, off uint64, dims ...uint64) {
	r.str(name)
	r.u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	r.u32(uint32(typ))
	r.u64(off)
}

// pad extends the buffer with zeros to a multiple of a.
func (r *raw) pad(a int) {
	for r.Len()%a != 0 {
		r.WriteByte(0)
	}
}

// build writes a file with the Writer, filling tensor i with bytes derived
// from i so that misplaced data is detected.
func build(t testing.TB, kv []KV, specs []TensorSpec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		data := make([]byte, w.Layout().Sizes[i])
		for j := range data {
			data[j] = byte(i*31 + j*7)
		}
		if err := w.WriteTensor(s.Name, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// valueEqual compares values exactly, floats by bit pattern (so NaN equals
// the same NaN), which reflect.DeepEqual does not.
func valueEqual(a, b Value) bool {
	if a.Type != b.Type || a.Elem != b.Elem || a.Len() != b.Len() {
		return false
	}
	switch x := a.v.(type) {
	case float32:
		y, ok := b.v.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.v.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []float32:
		y, ok := b.v.([]float32)
		if !ok {
			return false
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	case []float64:
		y, ok := b.v.([]float64)
		if !ok {
			return false
		}
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return true
	case []Value:
		y, ok := b.v.([]Value)
		if !ok {
			return false
		}
		for i := range x {
			if !valueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.v, b.v)
}

// sameContent reports the first difference between two parsed files'
// metadata, tensor declarations and tensor bytes, or "".
func sameContent(t testing.TB, a, b *File) string {
	t.Helper()
	if len(a.KV) != len(b.KV) {
		return "metadata count differs"
	}
	for i := range a.KV {
		if a.KV[i].Key != b.KV[i].Key || !valueEqual(a.KV[i].Value, b.KV[i].Value) {
			return "metadata " + a.KV[i].Key + " differs"
		}
	}
	if len(a.Tensors) != len(b.Tensors) {
		return "tensor count differs"
	}
	for i := range a.Tensors {
		x, y := &a.Tensors[i], &b.Tensors[i]
		if x.Name != y.Name || x.Type != y.Type || !slices.Equal(x.Dims, y.Dims) || x.Size != y.Size {
			return "tensor " + x.Name + " declaration differs"
		}
		dx, err := a.ReadTensor(x)
		if err != nil {
			t.Fatal(err)
		}
		dy, err := b.ReadTensor(y)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dx, dy) {
			return "tensor " + x.Name + " data differs"
		}
	}
	return ""
}

// hasNested reports whether any metadata value is an array of arrays, which
// the reader accepts and the Writer refuses.
func hasNested(m *Metadata) bool {
	for _, kv := range m.KV {
		if kv.Value.Type == TypeArray && kv.Value.Elem == TypeArray {
			return true
		}
	}
	return false
}

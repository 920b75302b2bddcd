package gguf

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// randomScalar returns a random value of scalar type vt, including the edge
// values (extremes, NaN, infinities, negative zero).
func randomScalar(rng *rand.Rand, vt ValueType) Value {
	pick := rng.IntN(4)
	switch vt {
	case TypeUint8:
		return Uint8([]uint8{0, math.MaxUint8, 1, uint8(rng.Uint32())}[pick])
	case TypeInt8:
		return Int8([]int8{math.MinInt8, math.MaxInt8, -1, int8(rng.Uint32())}[pick])
	case TypeUint16:
		return Uint16([]uint16{0, math.MaxUint16, 1, uint16(rng.Uint32())}[pick])
	case TypeInt16:
		return Int16([]int16{math.MinInt16, math.MaxInt16, -1, int16(rng.Uint32())}[pick])
	case TypeUint32:
		return Uint32([]uint32{0, math.MaxUint32, 1, rng.Uint32()}[pick])
	case TypeInt32:
		return Int32([]int32{math.MinInt32, math.MaxInt32, -1, int32(rng.Uint32())}[pick])
	case TypeFloat32:
		return Float32([]float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.Float32frombits(rng.Uint32())}[pick])
	case TypeBool:
		return Bool(pick%2 == 0)
	case TypeString:
		return String(randomString(rng))
	case TypeUint64:
		return Uint64([]uint64{0, math.MaxUint64, 1, rng.Uint64()}[pick])
	case TypeInt64:
		return Int64([]int64{math.MinInt64, math.MaxInt64, -1, int64(rng.Uint64())}[pick])
	case TypeFloat64:
		return Float64([]float64{math.NaN(), math.Inf(1), math.SmallestNonzeroFloat64, math.Float64frombits(rng.Uint64())}[pick])
	}
	panic(fmt.Sprintf("not a scalar type %v", vt))
}

// randomString mixes ASCII, multi-byte UTF-8, NUL and invalid UTF-8: GGUF
// strings are bytes and must come back unchanged.
func randomString(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.IntN(12); n > 0; n-- {
		switch rng.IntN(4) {
		case 0:
			b.WriteByte(byte('a' + rng.IntN(26)))
		case 1:
			b.WriteString("é→😀")
		case 2:
			b.WriteByte(0)
		default:
			b.WriteByte(byte(0x80 + rng.IntN(0x80)))
		}
	}
	return b.String()
}

// randomArray builds an array of n elements of scalar type et.
func randomArray(rng *rand.Rand, et ValueType, n int) Value {
	var slice any
	switch et {
	case TypeUint8:
		a := make([]uint8, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(uint8)
		}
		slice = a
	case TypeInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(int8)
		}
		slice = a
	case TypeUint16:
		a := make([]uint16, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(uint16)
		}
		slice = a
	case TypeInt16:
		a := make([]int16, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(int16)
		}
		slice = a
	case TypeUint32:
		a := make([]uint32, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(uint32)
		}
		slice = a
	case TypeInt32:
		a := make([]int32, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(int32)
		}
		slice = a
	case TypeFloat32:
		a := make([]float32, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(float32)
		}
		slice = a
	case TypeBool:
		a := make([]bool, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(bool)
		}
		slice = a
	case TypeString:
		a := make([]string, n)
		for i := range a {
			a[i] = randomString(rng)
		}
		slice = a
	case TypeUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(uint64)
		}
		slice = a
	case TypeInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(int64)
		}
		slice = a
	case TypeFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = randomScalar(rng, et).Any().(float64)
		}
		slice = a
	}
	return MustArray(slice)
}

var scalarTypes = []ValueType{TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeFloat32, TypeBool, TypeString, TypeUint64, TypeInt64, TypeFloat64}

// randomFile draws metadata of every value type (scalars and arrays,
// empty arrays included) and tensors of random valid types and shapes.
func randomFile(rng *rand.Rand) ([]KV, []TensorSpec) {
	var kv []KV
	if rng.IntN(2) == 0 {
		kv = append(kv, KV{Key: "general.alignment", Value: Uint32(1 << rng.IntN(8))})
	}
	for i, n := 0, rng.IntN(30); i < n; i++ {
		vt := scalarTypes[rng.IntN(len(scalarTypes))]
		key := fmt.Sprintf("k%d.%s", i, randomString(rng))
		if rng.IntN(3) == 0 {
			kv = append(kv, KV{Key: key, Value: randomArray(rng, vt, rng.IntN(20))})
		} else {
			kv = append(kv, KV{Key: key, Value: randomScalar(rng, vt)})
		}
	}
	var valid []quant.Type
	for id := 0; id < quant.NumTypes; id++ {
		if quant.Type(id).Valid() {
			valid = append(valid, quant.Type(id))
		}
	}
	var specs []TensorSpec
	for i, n := 0, rng.IntN(8); i < n; i++ {
		typ := valid[rng.IntN(len(valid))]
		ti, _ := quant.Info(typ)
		dims := []int64{int64(ti.BlockElements * (1 + rng.IntN(3)))}
		for d, nd := 1, 1+rng.IntN(MaxDims); d < nd; d++ {
			dims = append(dims, int64(1+rng.IntN(3)))
		}
		specs = append(specs, TensorSpec{Name: fmt.Sprintf("t%d.%s", i, strings.Repeat("x", rng.IntN(50))), Type: typ, Dims: dims})
	}
	return kv, specs
}

// TestRandomRoundTrip: random files -> Writer -> reader gives back exactly
// what was written, the layout the Writer planned, and writing the parsed
// file again gives the same bytes.
func TestRandomRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seenTypes := map[string]bool{}
	for iter := 0; iter < 300; iter++ {
		kv, specs := randomFile(rng)
		data := build(t, kv, specs)
		name := fmt.Sprintf("random-%d.gguf", iter)
		f, err := FromBytes(data, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		l, err := Plan(kv, specs)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != l.FileSize || f.DataOffset != l.DataOffset || f.HeaderEnd != l.HeaderEnd || f.Alignment != l.Alignment {
			t.Fatalf("%s: %d bytes, data at %d, header end %d, alignment %d; plan said %+v", name, len(data), f.DataOffset, f.HeaderEnd, f.Alignment, l)
		}
		if len(f.KV) != len(kv) || len(f.Tensors) != len(specs) {
			t.Fatalf("%s: %d pairs and %d tensors, wrote %d and %d", name, len(f.KV), len(f.Tensors), len(kv), len(specs))
		}
		for i := range kv {
			seenTypes[kv[i].Value.TypeName()] = true
			if f.KV[i].Key != kv[i].Key || !valueEqual(f.KV[i].Value, kv[i].Value) {
				t.Fatalf("%s: pair %d: wrote %q = %v, read %q = %v", name, i, kv[i].Key, kv[i].Value.Any(), f.KV[i].Key, f.KV[i].Value.Any())
			}
		}
		for i, s := range specs {
			ti := &f.Tensors[i]
			if ti.Name != s.Name || ti.Type != s.Type || !slices.Equal(ti.Dims, s.Dims) || ti.Offset != l.Offsets[i] || ti.Size != l.Sizes[i] {
				t.Fatalf("%s: tensor %d: read %+v, wrote %+v at %d", name, i, ti, s, l.Offsets[i])
			}
			got, _ := f.Bytes(ti)
			for j, b := range got {
				if b != byte(i*31+j*7) {
					t.Fatalf("%s: tensor %s byte %d is %d", name, s.Name, j, b)
				}
			}
		}
		if again := rewriteBytes(t, f); !bytes.Equal(again, data) {
			t.Fatalf("%s: rewriting the parsed file changes its bytes", name)
		}
	}
	if len(seenTypes) != 2*len(scalarTypes) {
		t.Fatalf("only %d of %d value types drawn: %v", len(seenTypes), 2*len(scalarTypes), seenTypes)
	}
}

// The Writer refuses tensors out of order, of the wrong size, bytes past
// the last tensor, and a Flush before every tensor is complete.
func TestWriterRefusesMisuse(t *testing.T) {
	specs := []TensorSpec{
		{Name: "a", Type: quant.F32, Dims: []int64{4}},
		{Name: "b", Type: quant.Q8_0, Dims: []int64{32}},
	}
	newW := func() (*Writer, *bytes.Buffer) {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, nil, specs)
		if err != nil {
			t.Fatal(err)
		}
		return w, &buf
	}
	w, _ := newW()
	if err := w.WriteTensor("b", make([]byte, 34)); err == nil {
		t.Fatal("tensor b accepted before a")
	}
	if err := w.WriteTensor("a", make([]byte, 15)); err == nil {
		t.Fatal("15 bytes accepted for a 16-byte tensor")
	}
	if err := w.CopyTensor("a", bytes.NewReader(make([]byte, 10))); err == nil {
		t.Fatal("a short source accepted")
	}

	w, _ = newW()
	if err := w.WriteTensor("a", make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), `"b" not written`) {
		t.Fatalf("Flush with tensor b missing: %v", err)
	}
	if _, err := w.Write(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush with tensor b half written accepted")
	}
	if _, err := w.Write(make([]byte, 25)); err == nil {
		t.Fatal("bytes past the last tensor accepted")
	}

	w, buf := newW()
	w.WriteTensor("a", make([]byte, 16))
	w.WriteTensor("b", make([]byte, 34))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := FromBytes(buf.Bytes(), "ok.gguf"); err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][]TensorSpec{
		{{Name: "a", Type: quant.F32, Dims: []int64{4}}, {Name: "a", Type: quant.F32, Dims: []int64{4}}},
		{{Name: "", Type: quant.F32, Dims: []int64{4}}},
		{{Name: strings.Repeat("n", MaxNameLen), Type: quant.F32, Dims: []int64{4}}},
		{{Name: "a", Type: quant.Q8_0, Dims: []int64{16}}},
		{{Name: "a", Type: quant.F32, Dims: []int64{4, 0}}},
		{{Name: "a", Type: quant.F32, Dims: []int64{1, 1, 1, 1, 1}}},
		{{Name: "a", Type: quant.Type(4), Dims: []int64{32}}},
		{{Name: "a", Type: quant.F64, Dims: []int64{1 << 61}}},
	} {
		if _, err := Plan(nil, bad); err == nil {
			t.Errorf("Plan accepted %+v", bad)
		}
	}
	for _, bad := range [][]KV{
		{{Key: "", Value: Uint8(1)}},
		{{Key: "a", Value: Uint8(1)}, {Key: "a", Value: Uint8(2)}},
		{{Key: "general.alignment", Value: Uint32(24)}},
		{{Key: "general.alignment", Value: Uint64(32)}},
		{{Key: "a", Value: Value{Type: TypeUint32}}},
	} {
		if _, err := Plan(bad, nil); err == nil {
			t.Errorf("Plan accepted %+v", bad)
		}
	}
}

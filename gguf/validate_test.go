package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/quant"
)

// expectFormatError parses data and checks the *FormatError it must give.
func expectFormatError(t *testing.T, data []byte, offset int64, key, tensor, msg string) {
	t.Helper()
	f, err := FromBytes(data, "bad.gguf")
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v (file %v), want a *FormatError", err, f != nil)
	}
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("%v does not wrap ErrFormat", err)
	}
	if fe.File != "bad.gguf" || fe.Offset != offset || fe.Key != key || fe.Tensor != tensor || !strings.Contains(fe.Msg, msg) {
		t.Fatalf("got %q (byte %d, key %q, tensor %q); want byte %d, key %q, tensor %q, message containing %q",
			err, fe.Offset, fe.Key, fe.Tensor, offset, key, tensor, msg)
	}
}

const hdr = 24 // magic, version, tensor count, metadata count

func TestHeaderErrors(t *testing.T) {
	be := func(v uint32) []byte {
		b := []byte(Magic)
		b = binary.BigEndian.AppendUint32(b, v)
		return append(b, make([]byte, 16)...)
	}
	head := func(version uint32, nt, nkv uint64) []byte {
		var r raw
		r.header(version, nt, nkv)
		r.Write(make([]byte, 64))
		return r.Bytes()
	}
	cases := []struct {
		name   string
		data   []byte
		offset int64
		msg    string
	}{
		{"empty", nil, 0, "too short"},
		{"three bytes", []byte("GGU"), 0, "too short"},
		{"magic", []byte("GGML\x03\x00\x00\x00"), 0, "not a GGUF file"},
		{"no version", []byte("GGUF\x03\x00"), 4, "file ends"},
		{"version 1", head(1, 0, 0), 4, "version 1 is not supported"},
		{"version 0", head(0, 0, 0), 4, "unsupported GGUF version 0"},
		{"version 4", head(4, 0, 0), 4, "unsupported GGUF version 4"},
		{"big-endian v3", be(3), 4, "big-endian"},
		{"big-endian v2", be(2), 4, "big-endian"},
		{"huge tensor count", head(3, 1<<62, 0), 8, "tensor count"},
		{"huge metadata count", head(3, 0, 1<<62), 16, "metadata count"},
		{"tensor count just too big", head(3, 3, 0), 8, "tensor count"},
		{"missing metadata", head(3, 0, 5)[:hdr], 16, "metadata count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectFormatError(t, c.data, c.offset, "", "", c.msg) })
	}
}

func TestMetadataErrors(t *testing.T) {
	kv := func(key string, vt ValueType, body ...func(*raw)) []byte {
		var r raw
		r.header(3, 0, 1)
		r.str(key)
		r.u32(uint32(vt))
		for _, b := range body {
			b(&r)
		}
		return r.Bytes()
	}
	u64 := func(x uint64) func(*raw) { return func(r *raw) { r.u64(x) } }
	u32 := func(x uint32) func(*raw) { return func(r *raw) { r.u32(x) } }
	bytesOf := func(b ...byte) func(*raw) { return func(r *raw) { r.Write(b) } }
	// The value of key "k" starts at hdr+8+1+4.
	const val = hdr + 13
	nested := func(depth int) []byte {
		var r raw
		r.header(3, 0, 1)
		r.str("k")
		r.u32(uint32(TypeArray))
		for i := 0; i < depth-1; i++ {
			r.u32(uint32(TypeArray))
			r.u64(1)
		}
		r.u32(uint32(TypeUint8))
		r.u64(0)
		return r.Bytes()
	}
	dupKey := func() []byte {
		var r raw
		r.header(3, 0, 2)
		r.kvU32("a", 1)
		r.kvU32("a", 2)
		return r.Bytes()
	}()
	cases := []struct {
		name   string
		data   []byte
		offset int64
		key    string
		msg    string
	}{
		{"empty key", kv("", TypeUint8, bytesOf(1)), hdr, "", "metadata pair 0: empty key"},
		{"huge key length", func() []byte {
			var r raw
			r.header(3, 0, 1)
			r.u64(1 << 63)
			r.Write(make([]byte, 20))
			return r.Bytes()
		}(), hdr, "", "metadata pair 0: string length"},
		{"duplicate key", dupKey, hdr + 17, "a", "duplicate metadata key"},
		{"unknown value type", kv("k", 13, bytesOf(0)), hdr + 9, "k", "unknown value type 13"},
		{"truncated u32", kv("k", TypeUint32, bytesOf(1, 2)), val, "k", "file ends"},
		{"bool 2", kv("k", TypeBool, bytesOf(2)), val, "k", "bool byte is 2"},
		{"huge string", kv("k", TypeString, u64(1<<60), bytesOf(1, 2, 3)), val, "k", "string length 1152921504606846976"},
		{"huge u32 array", kv("k", TypeArray, u32(uint32(TypeUint32)), u64(1<<61), bytesOf(1, 2, 3, 4)), val, "k", "array of 2305843009213693952 u32"},
		{"huge string array", kv("k", TypeArray, u32(uint32(TypeString)), u64(1<<40), u64(0)), val, "k", "cannot fit"},
		{"huge array array", kv("k", TypeArray, u32(uint32(TypeArray)), u64(1<<40), u64(0), u64(0)), val, "k", "cannot fit"},
		{"string array element", kv("k", TypeArray, u32(uint32(TypeString)), u64(2), u64(0), u64(100)), val + 20, "k", "string length 100"},
		{"array of type 13", kv("k", TypeArray, u32(13), u64(0)), val, "k", "unknown value type 13"},
		{"bool array", kv("k", TypeArray, u32(uint32(TypeBool)), u64(3), bytesOf(0, 1, 7)), val, "k", "bool element 2 is 7"},
		{"nested too deep", nested(maxNesting + 1), val + 12*maxNesting, "k", "nested deeper"},
		{"alignment u64", func() []byte {
			var r raw
			r.header(3, 0, 1)
			r.str("general.alignment")
			r.u32(uint32(TypeUint64))
			r.u64(32)
			return r.Bytes()
		}(), hdr, "general.alignment", "want u32"},
		{"alignment 48", func() []byte { var r raw; r.header(3, 0, 1); r.kvU32("general.alignment", 48); return r.Bytes() }(), hdr, "general.alignment", "48 is not a power of two"},
		{"alignment 0", func() []byte { var r raw; r.header(3, 0, 1); r.kvU32("general.alignment", 0); return r.Bytes() }(), hdr, "general.alignment", "0 is not a power of two"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectFormatError(t, c.data, c.offset, c.key, "", c.msg) })
	}

	// Nesting up to the limit is read.
	f, err := FromBytes(nested(maxNesting), "nested.gguf")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := f.Get("k")
	for d := 1; d < maxNesting; d++ {
		inner, ok := v.Any().([]Value)
		if v.TypeName() != "array[array]" || !ok || len(inner) != 1 {
			t.Fatalf("depth %d: %s %v", d, v.TypeName(), v.Any())
		}
		v = inner[0]
	}
	if v.TypeName() != "array[u8]" || v.Len() != 0 {
		t.Fatalf("innermost: %s of %d", v.TypeName(), v.Len())
	}
}

func TestTensorInfoErrors(t *testing.T) {
	// One tensor named "t": its n_dims field is at hdr+9, ne[0] at hdr+13.
	one := func(typ quant.Type, off uint64, dims ...uint64) []byte {
		var r raw
		r.header(3, 1, 0)
		r.tensor("t", typ, off, dims...)
		r.pad(32)
		r.Write(make([]byte, 256))
		return r.Bytes()
	}
	two := func(off2 uint64, name2 string) []byte {
		var r raw
		r.header(3, 2, 0)
		r.tensor("a", quant.F32, 0, 16)
		r.tensor(name2, quant.F32, off2, 16)
		r.pad(32)
		r.Write(make([]byte, 128))
		return r.Bytes()
	}
	const second = hdr + 8 + 1 + 4 + 8 + 4 + 8 // info offset of the second tensor of two
	long := strings.Repeat("n", MaxNameLen)
	cases := []struct {
		name   string
		data   []byte
		offset int64
		tensor string
		msg    string
	}{
		{"n_dims 0", one(quant.F32, 0), hdr + 9, "t", "0 dimensions"},
		{"n_dims 5", one(quant.F32, 0, 1, 1, 1, 1, 1), hdr + 9, "t", "5 dimensions"},
		{"ne 0", one(quant.F32, 0, 4, 0), hdr + 21, "t", "dimension 1 is 0"},
		{"ne negative", one(quant.F32, 0, 1<<63), hdr + 13, "t", "dimension 0 is"},
		{"element count overflow", one(quant.F32, 0, 1<<32, 1<<32), hdr + 21, "t", "element count overflows"},
		{"byte size overflow", one(quant.F64, 0, 1<<61), hdr, "t", "overflow a 64-bit byte size"},
		{"ne0 not a block multiple", one(quant.Q8_0, 0, 16, 2), hdr, "t", "not a multiple of Q8_0's block of 32"},
		{"unknown type", one(quant.Type(99), 0, 4), hdr + 21, "t", "unknown or retired ggml type id 99"},
		{"retired type 4", one(quant.Type(4), 0, 32), hdr + 21, "t", "type id 4"},
		{"misaligned", one(quant.F32, 16, 4), hdr, "t", "not a multiple of the alignment 32"},
		{"past the end", one(quant.F32, 256, 4), hdr, "t", "runs past the end"},
		{"offset huge", one(quant.F32, 1<<63, 4), hdr + 25, "t", "out of range"},
		{"too big for the file", one(quant.F32, 0, 1024), hdr, "t", "runs past the end"},
		{"name too long", func() []byte {
			var r raw
			r.header(3, 1, 0)
			r.tensor(long, quant.F32, 0, 4)
			r.Write(make([]byte, 64))
			return r.Bytes()
		}(), hdr, long, "longer than ggml's limit of 63"},
		{"empty name", func() []byte {
			var r raw
			r.header(3, 1, 0)
			r.tensor("", quant.F32, 0, 4)
			r.Write(make([]byte, 64))
			return r.Bytes()
		}(), hdr, "", "tensor info 0: empty tensor name"},
		{"huge name", func() []byte {
			var r raw
			r.header(3, 1, 0)
			r.u64(1 << 62)
			r.Write(make([]byte, 64))
			return r.Bytes()
		}(), hdr, "", "tensor info 0: string length"},
		{"truncated info", func() []byte {
			var r raw
			r.header(3, 1, 0)
			r.tensor(long[:50], quant.F32, 0, 4)
			return r.Bytes()[:hdr+62+5]
		}(), hdr + 62, long[:50], "file ends"},
		{"duplicate name", two(64, "a"), second, "a", "duplicate tensor name"},
		{"overlap", two(32, "b"), second, "b", `overlaps tensor "a"`},
		{"same offset", two(0, "b"), second, "b", `overlaps tensor "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectFormatError(t, c.data, c.offset, "", c.tensor, c.msg) })
	}
	if _, err := FromBytes(two(64, "b"), "ok.gguf"); err != nil {
		t.Fatalf("the valid two-tensor file is refused: %v", err)
	}
}

// A bad file opened from disk names its path, and Open and OpenMapped agree.
func TestOpenNamesPath(t *testing.T) {
	var r raw
	r.header(1, 0, 0)
	path := filepath.Join(t.TempDir(), "old.gguf")
	if err := os.WriteFile(path, r.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) (*File, error){Open, OpenMapped} {
		_, err := open(path)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != path || fe.Offset != 4 || !strings.HasPrefix(err.Error(), path+": byte 4: ") {
			t.Fatalf("got %v", err)
		}
	}
}

// Every prefix of a real file shorter than its last tensor's end is refused
// with an offset inside the prefix; every byte of the header is checked, and
// the data section with a stride.
func TestTruncatedPrefixes(t *testing.T) {
	for _, path := range []string{
		testutil.Path(t, "fixtures", "ggml", "Q8_0.gguf"),
		testutil.Path(t, "fixtures", "ggml", "experts_iq3s.gguf"),
		testutil.TinyModel(t, "model-mixed.gguf"),
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		full, err := FromBytes(data, "full")
		if err != nil {
			t.Fatal(err)
		}
		var end int64
		for i := range full.Tensors {
			end = max(end, full.DataStart(&full.Tensors[i])+full.Tensors[i].Size)
		}
		step := func(n int64) int64 {
			switch {
			case n < 4096 || (n > full.DataOffset-64 && n < full.DataOffset+64):
				return 1
			case n < full.DataOffset:
				return 61
			}
			return max(1, (end-full.DataOffset)/64)
		}
		for n := int64(0); n < end; n += step(n) {
			_, err := FromBytes(data[:n], "cut")
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Offset > n || fe.File != "cut" {
				t.Fatalf("%s cut to %d bytes: %v", filepath.Base(path), n, err)
			}
		}
		if _, err := FromBytes(data[:end], "cut"); err != nil {
			t.Fatalf("%s cut after its last tensor (%d bytes): %v", filepath.Base(path), end, err)
		}
	}
}

// Flipping any single bit of a real header never panics; the result is a
// *FormatError or a file that still reads (FuzzRead checks rewriting).
func TestBitFlips(t *testing.T) {
	data, err := os.ReadFile(testutil.Path(t, "fixtures", "ggml", "Q4_K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := FromBytes(data, "orig")
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	buf := bytes.Clone(data)
	for i := int64(0); i < full.HeaderEnd; i++ {
		for bit := 0; bit < 8; bit++ {
			buf[i] ^= 1 << bit
			g, err := FromBytes(buf, "flip")
			var fe *FormatError
			switch {
			case err == nil:
				g.MoE()
			case !errors.As(err, &fe) || fe.File != "flip":
				t.Fatalf("byte %d bit %d: %v", i, bit, err)
			default:
				failures++
			}
			buf[i] ^= 1 << bit
		}
	}
	if failures == 0 {
		t.Fatal("no bit flip was detected")
	}
}

// allocDuring is the bytes allocated while fn runs (fn runs a few times and
// the least is kept, so that a stray background allocation does not count).
func allocDuring(fn func()) uint64 {
	best := ^uint64(0)
	var a, b runtime.MemStats
	for range 3 {
		runtime.GC()
		runtime.ReadMemStats(&a)
		fn()
		runtime.ReadMemStats(&b)
		best = min(best, b.TotalAlloc-a.TotalAlloc)
	}
	return best
}

// Hostile headers (counts and lengths at the largest the file size allows,
// nested arrays claiming huge counts) must not make the reader allocate much
// more than the file itself.
func TestHostileAllocation(t *testing.T) {
	const size = 1 << 20
	zeros := func(r *raw) []byte {
		r.Write(make([]byte, size-r.Len()))
		return r.Bytes()
	}
	var inputs [][]byte
	{ // metadata count at its bound; every key is empty
		var r raw
		r.header(3, 0, (size-hdr)/13)
		inputs = append(inputs, zeros(&r))
	}
	{ // as many distinct 4-byte keys with u8 values as the file holds: all valid
		var r raw
		n := (size - hdr) / 17
		r.header(3, 0, uint64(n))
		for i := 0; i < n; i++ {
			r.str(string(binary.LittleEndian.AppendUint32(nil, uint32(i))))
			r.u32(uint32(TypeUint8))
			r.u8(0)
		}
		inputs = append(inputs, zeros(&r))
	}
	{ // nested arrays, each claiming as many elements as the rest could hold
		var r raw
		r.header(3, 0, 1)
		r.str("k")
		r.u32(uint32(TypeArray))
		for i := 0; i < maxNesting; i++ {
			r.u32(uint32(TypeArray))
			r.u64((size - 200) / 12)
		}
		inputs = append(inputs, zeros(&r))
	}
	{ // an array of empty arrays filling the file
		var r raw
		r.header(3, 0, 1)
		r.str("k")
		r.u32(uint32(TypeArray))
		r.u32(uint32(TypeArray))
		n := (size - 60) / 12
		r.u64(uint64(n))
		for i := 0; i < n; i++ {
			r.u32(uint32(TypeUint8))
			r.u64(0)
		}
		inputs = append(inputs, zeros(&r))
	}
	{ // an array of empty strings filling the file
		var r raw
		r.header(3, 0, 1)
		r.str("k")
		r.u32(uint32(TypeArray))
		r.u32(uint32(TypeString))
		r.u64((size - 60) / 8)
		inputs = append(inputs, zeros(&r))
	}
	{ // tensor count at its bound, infos valid until their data is sought
		var r raw
		n := (size - hdr) / 36
		r.header(3, uint64(n), 0)
		for i := 0; i < n; i++ {
			r.tensor(string(rune('A'+i%26))+string(rune('A'+i/26%26))+string(rune('A'+i/676%26))+string(rune('A'+i/17576%26)), quant.F32, uint64(i)*32, 1)
		}
		inputs = append(inputs, zeros(&r))
	}
	for i, in := range inputs {
		var err error
		got := allocDuring(func() { _, err = FromBytes(in, "hostile") })
		var fe *FormatError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("input %d: %v", i, err)
		}
		limit := uint64(16*len(in) + 1<<20)
		t.Logf("input %d: %d bytes allocated for %d bytes of file (%.1fx): %v", i, got, len(in), float64(got)/float64(len(in)), err)
		if got > limit {
			t.Errorf("input %d: %d bytes allocated for a %d-byte file (limit %d)", i, got, len(in), limit)
		}
	}
}

// A file without tensors may declare any power-of-two alignment: there is
// no data section to align, so neither reading nor rewriting it may cost
// memory in proportion to the alignment.
func TestHugeAlignmentWithoutTensors(t *testing.T) {
	var r raw
	r.header(3, 0, 1)
	r.kvU32("general.alignment", 1<<31)
	f, err := FromBytes(r.Bytes(), "aligned.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	got := allocDuring(func() { out = rewriteBytes(t, f) })
	if !bytes.Equal(out, r.Bytes()) || got > 1<<20 {
		t.Fatalf("rewrite: %d bytes (want the %d of the input), %d allocated", len(out), r.Len(), got)
	}
}

// A key of the wrong type is reported with the byte where its pair starts:
// that byte holds the key's length and then the key.
func TestKeyErrorNamesOffset(t *testing.T) {
	kv := []KV{{Key: "general.architecture", Value: String("x")}, {Key: "x.count", Value: String("seven")}}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := FromBytes(buf.Bytes(), "k.gguf")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Uint32("x.count")
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Offset <= 0 {
		t.Fatalf("error %v: want a *KeyError with the key's offset", err)
	}
	b := buf.Bytes()[ke.Offset:]
	if n := binary.LittleEndian.Uint64(b); n != uint64(len("x.count")) || string(b[8:8+n]) != "x.count" {
		t.Fatalf("byte %d does not start the pair of x.count: % x", ke.Offset, b[:16])
	}
	if want := fmt.Sprintf("k.gguf: byte %d: metadata key \"x.count\" holds", ke.Offset); !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q does not start with %q", err, want)
	}
	if _, err := f.Uint32("x.absent"); err == nil || strings.Contains(err.Error(), "byte") {
		t.Fatalf("missing key: %v", err)
	}
}

// Package gguf reads and writes GGUF files (versions 2 and 3), trusting
// nothing in the file: every count, length and offset is checked against the
// bytes that remain before anything is allocated.
package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
const MaxDims = 4

// MaxNameLen is one past the longest tensor name ggml accepts (GGML_MAX_NAME).
const MaxNameLen = 64

// nestedPrealloc caps how many elements an array of arrays reserves before
// they are read: unlike the other counts, which are bounded by the bytes left
// and so cost at most a few times the file, nested counts would multiply.
const nestedPrealloc = 64

// maxNesting bounds arrays of arrays, so a hostile file cannot recurse deeply.
const maxNesting = 8

// TensorInfo describes one tensor.
type TensorInfo struct {
	Name       string
	Type       quant.Type
	Dims       []int64 // ne: Dims[0] is the row length
	Offset     int64   // relative to the start of the data section
	Size       int64   // bytes of data
	InfoOffset int64   // where this tensor's info record starts in its file
	Shard      int     // index into File.Shards for a split model, else 0
}

// Ne is dimension i, 1 beyond the tensor's rank.
func (t *TensorInfo) Ne(i int) int64 {
	if i < len(t.Dims) {
		return t.Dims[i]
	}
	return 1
}

// Elements is the product of the dimensions.
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Rows is the number of rows (elements / ne[0]).
func (t *TensorInfo) Rows() int64 { return t.Elements() / t.Dims[0] }

// RowBytes is the size of one row.
func (t *TensorInfo) RowBytes() int64 { return t.Size / t.Rows() }

// File is a parsed GGUF file. The header is read eagerly; tensor data is
// reached through ReadTensor, SectionReader or, for a mapped file, Bytes.
type File struct {
	Path string
	Metadata
	Version    uint32
	Tensors    []TensorInfo
	Alignment  int64
	HeaderEnd  int64 // end of the tensor infos, before padding
	DataOffset int64 // start of the data section
	Size       int64 // file size (all shards together for a split model)
	// Shards lists the files of a split model opened with OpenModel; it is
	// empty for a single file. Tensor offsets of a split model are positions
	// in a virtual data space that starts at DataOffset = 0.
	Shards []Shard

	r      io.ReaderAt
	closer io.Closer
	mapped []byte
	ownMap bool // mapped came from OpenMapped and is unmapped by Close
	byName map[string]int
}

// NewReader parses the header of a GGUF file of the given size. name is used
// in error messages.
func NewReader(r io.ReaderAt, size int64, name string) (*File, error) {
	f := &File{Path: name, Size: size, r: r}
	f.Metadata.File = name
	if err := f.parse(); err != nil {
		return nil, err
	}
	return f, nil
}

// Open opens and parses a GGUF file; tensor data is read with pread.
func Open(path string) (*File, error) {
	fh, size, err := osutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	f, err := NewReader(fh, size, path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// Close releases the file (and its mapping).
func (f *File) Close() error {
	var err error
	for _, sh := range f.Shards {
		if e := sh.file.Close(); err == nil {
			err = e
		}
	}
	f.Shards = nil
	if f.mapped != nil && f.ownMap {
		err = unmap(f.mapped)
	}
	f.mapped = nil
	if f.closer != nil {
		if e := f.closer.Close(); err == nil {
			err = e
		}
		f.closer = nil
	}
	return err
}

// ReaderAt is the underlying reader.
func (f *File) ReaderAt() io.ReaderAt { return f.r }

// TensorIndex is the position of the named tensor, or -1.
func (f *File) TensorIndex(name string) int {
	if i, ok := f.byName[name]; ok {
		return i
	}
	return -1
}

// Tensor returns the named tensor's info.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i := f.TensorIndex(name)
	if i < 0 {
		return nil, false
	}
	return &f.Tensors[i], true
}

// DataStart is the absolute file offset of t's data.
func (f *File) DataStart(t *TensorInfo) int64 { return f.DataOffset + t.Offset }

// SectionReader reads t's data.
func (f *File) SectionReader(t *TensorInfo) *io.SectionReader {
	return io.NewSectionReader(f.r, f.DataStart(t), t.Size)
}

// ReadTensor reads all of t's data into memory. Use SectionReader or
// ReadTensorAt for tensors that may be large.
func (f *File) ReadTensor(t *TensorInfo) ([]byte, error) {
	b := make([]byte, t.Size)
	if err := f.ReadTensorAt(t, b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

// ReadTensorAt fills p from t's data starting off bytes into the tensor.
func (f *File) ReadTensorAt(t *TensorInfo, p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > t.Size {
		return fmt.Errorf("%s: tensor %q: read [%d, %d) outside its %d bytes", f.Path, t.Name, off, off+int64(len(p)), t.Size)
	}
	at := f.DataStart(t) + off
	if _, err := f.r.ReadAt(p, at); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s: tensor %q: reading %d bytes at byte %d: %w", f.Path, t.Name, len(p), at, err)
	}
	return nil
}

// cursor reads the header sequentially, tracking the offset and the bytes that
// remain, so that every length can be checked before it is allocated.
type cursor struct {
	br   *bufio.Reader
	off  int64
	size int64
	file string
	key  string
	ten  string
	// where and index name the record being read ("metadata pair 3",
	// "tensor info 7") for errors that come before its key or name is known.
	where   string
	index   uint64
	buf     [8]byte
	scratch []byte
}

func (c *cursor) errf(at int64, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if c.key == "" && c.ten == "" && c.where != "" {
		msg = fmt.Sprintf("%s %d: %s", c.where, c.index, msg)
	}
	return &FormatError{File: c.file, Offset: at, Key: c.key, Tensor: c.ten, Msg: msg}
}

// readErr reports a failed read: running out of bytes is a format error (the
// file is shorter than the header says), anything else an I/O error.
func (c *cursor) readErr(n uint64, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return c.errf(c.off, "file ends while reading %d bytes", n)
	}
	return fmt.Errorf("%s: reading %d bytes at byte %d: %w", c.file, n, c.off, err)
}

func (c *cursor) remaining() int64 { return c.size - c.off }

func (c *cursor) read(n int) ([]byte, error) {
	if int64(n) > c.remaining() {
		return nil, c.errf(c.off, "file ends after %d bytes: %d more needed", c.size, int64(n)-c.remaining())
	}
	b := c.buf[:n]
	if _, err := io.ReadFull(c.br, b); err != nil {
		return nil, c.readErr(uint64(n), err)
	}
	c.off += int64(n)
	return b, nil
}

func (c *cursor) u8() (uint8, error) {
	b, err := c.read(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (c *cursor) u16() (uint16, error) {
	b, err := c.read(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (c *cursor) u32() (uint32, error) {
	b, err := c.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (c *cursor) u64() (uint64, error) {
	b, err := c.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// bytes reads n bytes into new memory after checking that they exist.
func (c *cursor) bytes(n uint64) ([]byte, error) {
	if n > uint64(c.remaining()) {
		return nil, c.errf(c.off, "length %d exceeds the %d bytes left in the file", n, c.remaining())
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.br, b); err != nil {
		return nil, c.readErr(n, err)
	}
	c.off += int64(n)
	return b, nil
}

func (c *cursor) str() (string, error) {
	at := c.off
	n, err := c.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(c.remaining()) {
		return "", c.errf(at, "string length %d exceeds the %d bytes left in the file", n, c.remaining())
	}
	// Read through a reused buffer so that the string is the only copy.
	if uint64(cap(c.scratch)) < n {
		c.scratch = make([]byte, n)
	}
	b := c.scratch[:n]
	if _, err := io.ReadFull(c.br, b); err != nil {
		return "", c.readErr(n, err)
	}
	c.off += int64(n)
	return string(b), nil
}

func (f *File) parse() error {
	c := &cursor{br: bufio.NewReaderSize(io.NewSectionReader(f.r, 0, f.Size), int(min(1<<16, f.Size))), size: f.Size, file: f.Path}
	magic, err := c.read(4)
	if err != nil {
		return c.errf(0, "too short to be a GGUF file (%d bytes)", f.Size)
	}
	if string(magic) != Magic {
		return c.errf(0, "not a GGUF file: magic %q, want %q", magic, Magic)
	}
	version, err := c.u32()
	if err != nil {
		return err
	}
	switch {
	case version == 1:
		return c.errf(4, "GGUF version 1 is not supported (only 2 and 3); convert the file with a current llama.cpp")
	case version == 2 || version == 3:
	case version&0xFFFF == 0 && version != 0 && bits.ReverseBytes32(version) <= 3:
		return c.errf(4, "big-endian GGUF (version field 0x%08x) is not supported", version)
	default:
		return c.errf(4, "unsupported GGUF version %d (want 2 or 3)", version)
	}
	f.Version = version
	nTensors, err := c.u64()
	if err != nil {
		return err
	}
	nKV, err := c.u64()
	if err != nil {
		return err
	}
	// The smallest possible KV is 13 bytes (empty key is refused, so 14), the
	// smallest tensor info 32: bound both counts by what remains.
	if nKV > uint64(c.remaining())/13 {
		return c.errf(16, "metadata count %d cannot fit in the %d bytes left", nKV, c.remaining())
	}
	if nTensors > uint64(c.remaining())/32 {
		return c.errf(8, "tensor count %d cannot fit in the %d bytes left", nTensors, c.remaining())
	}
	// The counts are bounded by the bytes left, so reserving for them costs
	// at most a few times the file even when they lie.
	f.KV = make([]KV, 0, nKV)
	f.offsets = make([]int64, 0, nKV)
	f.idx = make(map[string]int, nKV)
	for i := uint64(0); i < nKV; i++ {
		at := c.off
		c.key, c.ten, c.where, c.index = "", "", "metadata pair", i
		key, err := c.str()
		if err != nil {
			return err
		}
		if key == "" {
			return c.errf(at, "empty key")
		}
		c.key = key
		if _, dup := f.idx[key]; dup {
			return c.errf(at, "duplicate metadata key")
		}
		f.idx[key] = len(f.KV)
		vt, err := c.u32()
		if err != nil {
			return err
		}
		v, err := c.value(ValueType(vt), 0)
		if err != nil {
			return err
		}
		f.KV = append(f.KV, KV{Key: key, Value: v})
		f.offsets = append(f.offsets, at)
	}
	c.key, c.where = "", ""

	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		a, isU32 := v.v.(uint32)
		if !isU32 {
			return &FormatError{File: f.Path, Offset: f.KeyOffset("general.alignment"), Key: "general.alignment", Msg: fmt.Sprintf("holds %s, want u32", v.TypeName())}
		}
		if a == 0 || a&(a-1) != 0 {
			return &FormatError{File: f.Path, Offset: f.KeyOffset("general.alignment"), Key: "general.alignment", Msg: fmt.Sprintf("%d is not a power of two", a)}
		}
		f.Alignment = int64(a)
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.byName = make(map[string]int, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		at := c.off
		c.ten, c.where, c.index = "", "tensor info", i
		name, err := c.str()
		if err != nil {
			return err
		}
		if name == "" {
			return c.errf(at, "empty tensor name")
		}
		c.ten = name
		if len(name) >= MaxNameLen {
			return c.errf(at, "name is %d bytes, longer than ggml's limit of %d", len(name), MaxNameLen-1)
		}
		if _, dup := f.byName[name]; dup {
			return c.errf(at, "duplicate tensor name")
		}
		nd, err := c.u32()
		if err != nil {
			return err
		}
		if nd < 1 || nd > MaxDims {
			return c.errf(c.off-4, "%d dimensions, want 1..%d", nd, MaxDims)
		}
		dims := make([]int64, nd)
		elems := uint64(1)
		for d := range dims {
			dat := c.off
			ne, err := c.u64()
			if err != nil {
				return err
			}
			if ne == 0 || ne > math.MaxInt64 {
				return c.errf(dat, "dimension %d is %d", d, ne)
			}
			hi, lo := bits.Mul64(elems, ne)
			if hi != 0 || lo > math.MaxInt64 {
				return c.errf(dat, "element count overflows")
			}
			elems = lo
			dims[d] = int64(ne)
		}
		tat := c.off
		tid, err := c.u32()
		if err != nil {
			return err
		}
		typ := quant.Type(tid)
		ti, ok := quant.Info(typ)
		if !ok {
			return c.errf(tat, "unknown or retired ggml type id %d", tid)
		}
		if dims[0]%int64(ti.BlockElements) != 0 {
			return c.errf(at, "row length ne[0] = %d is not a multiple of %s's block of %d", dims[0], typ, ti.BlockElements)
		}
		if elems/uint64(ti.BlockElements) > math.MaxInt64/uint64(ti.BlockBytes) {
			return c.errf(at, "%d elements of %s overflow a 64-bit byte size", elems, typ)
		}
		size, err := quant.RowBytes(typ, int64(elems))
		if err != nil {
			return c.errf(at, "%v", err)
		}
		oat := c.off
		off, err := c.u64()
		if err != nil {
			return err
		}
		if off > math.MaxInt64 {
			return c.errf(oat, "offset %d out of range", off)
		}
		f.byName[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, TensorInfo{Name: name, Type: typ, Dims: dims, Offset: int64(off), Size: size, InfoOffset: at})
	}
	c.ten, c.where = "", ""
	f.HeaderEnd = c.off
	f.DataOffset = alignUp(c.off, f.Alignment)
	if f.DataOffset > f.Size && len(f.Tensors) > 0 {
		return c.errf(c.off, "data section would start at byte %d, past the end of the %d-byte file", f.DataOffset, f.Size)
	}
	return f.checkLayout()
}

// checkLayout verifies that every tensor is aligned, inside the file, and
// overlaps no other.
func (f *File) checkLayout() error {
	dataBytes := f.Size - f.DataOffset
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	for _, i := range order {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return &FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("data offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)}
		}
		if t.Offset > dataBytes || t.Size > dataBytes-t.Offset {
			return &FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("data [%d, %d) runs past the end of the file (%d bytes of data after byte %d)", f.DataOffset+t.Offset, f.DataOffset+t.Offset+t.Size, dataBytes, f.DataOffset)}
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, t := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if p.Offset+p.Size > t.Offset {
			return &FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("data at offset %d overlaps tensor %q [%d, %d)", t.Offset, p.Name, p.Offset, p.Offset+p.Size)}
		}
	}
	return nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// value reads one metadata value of type vt.
func (c *cursor) value(vt ValueType, depth int) (Value, error) {
	at := c.off
	switch vt {
	case TypeUint8:
		x, err := c.u8()
		return Uint8(x), err
	case TypeInt8:
		x, err := c.u8()
		return Int8(int8(x)), err
	case TypeUint16:
		x, err := c.u16()
		return Uint16(x), err
	case TypeInt16:
		x, err := c.u16()
		return Int16(int16(x)), err
	case TypeUint32:
		x, err := c.u32()
		return Uint32(x), err
	case TypeInt32:
		x, err := c.u32()
		return Int32(int32(x)), err
	case TypeFloat32:
		x, err := c.u32()
		return Float32(math.Float32frombits(x)), err
	case TypeUint64:
		x, err := c.u64()
		return Uint64(x), err
	case TypeInt64:
		x, err := c.u64()
		return Int64(int64(x)), err
	case TypeFloat64:
		x, err := c.u64()
		return Float64(math.Float64frombits(x)), err
	case TypeBool:
		x, err := c.u8()
		if err != nil {
			return Value{}, err
		}
		if x > 1 {
			return Value{}, c.errf(at, "bool byte is %d, want 0 or 1", x)
		}
		return Bool(x == 1), nil
	case TypeString:
		s, err := c.str()
		return String(s), err
	case TypeArray:
		return c.array(depth)
	}
	return Value{}, c.errf(at-4, "unknown value type %d", uint32(vt))
}

func (c *cursor) array(depth int) (Value, error) {
	at := c.off
	if depth >= maxNesting {
		return Value{}, c.errf(at, "arrays nested deeper than %d", maxNesting)
	}
	et32, err := c.u32()
	if err != nil {
		return Value{}, err
	}
	et := ValueType(et32)
	if !et.valid() {
		return Value{}, c.errf(at, "array of unknown value type %d", et32)
	}
	n, err := c.u64()
	if err != nil {
		return Value{}, err
	}
	minSize := uint64(et.size())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if n > uint64(c.remaining())/minSize {
		return Value{}, c.errf(at, "array of %d %s cannot fit in the %d bytes left", n, et, c.remaining())
	}
	v := Value{Type: TypeArray, Elem: et}
	if sz := et.size(); sz > 0 {
		raw, err := c.bytes(n * uint64(sz))
		if err != nil {
			return Value{}, err
		}
		v.v, err = decodeScalars(et, raw, int(n))
		if err != nil {
			return Value{}, c.errf(at, "%v", err)
		}
		return v, nil
	}
	switch et {
	case TypeString:
		out := make([]string, 0, n)
		for range n {
			s, err := c.str()
			if err != nil {
				return Value{}, err
			}
			out = append(out, s)
		}
		v.v = out
	case TypeArray:
		out := make([]Value, 0, min(n, nestedPrealloc))
		for range n {
			e, err := c.array(depth + 1)
			if err != nil {
				return Value{}, err
			}
			out = append(out, e)
		}
		v.v = out
	}
	return v, nil
}

func decodeScalars(et ValueType, raw []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch et {
	case TypeUint8:
		return raw, nil
	case TypeInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(raw[i])
		}
		return out, nil
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			if raw[i] > 1 {
				return nil, fmt.Errorf("bool element %d is %d, want 0 or 1", i, raw[i])
			}
			out[i] = raw[i] == 1
		}
		return out, nil
	case TypeUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(raw[2*i:])
		}
		return out, nil
	case TypeInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(raw[2*i:]))
		}
		return out, nil
	case TypeUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(raw[4*i:])
		}
		return out, nil
	case TypeInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case TypeFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case TypeUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(raw[8*i:])
		}
		return out, nil
	case TypeInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(raw[8*i:]))
		}
		return out, nil
	case TypeFloat64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("not a scalar type: %s", et)
}

// Architecture is general.architecture, or "" when absent.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// ArchKey is "<architecture>.<suffix>", e.g. ArchKey("expert_count").
func (f *File) ArchKey(suffix string) string {
	return f.Architecture() + "." + strings.TrimPrefix(suffix, ".")
}

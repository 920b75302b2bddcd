package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
)

// maxFileSize keeps layout arithmetic (sums, alignment) far from int64
// overflow; no real file comes near it.
const maxFileSize = 1 << 60

// TensorSpec declares a tensor to write; its size follows from type and dims.
type TensorSpec struct {
	Name string
	Type quant.Type
	Dims []int64
}

// Layout is where every part of a file to be written will go, computed before
// a byte is written.
type Layout struct {
	Alignment  int64
	HeaderEnd  int64   // end of the tensor infos
	DataOffset int64   // start of the data section (FileSize is HeaderEnd when there are no tensors)
	Offsets    []int64 // per tensor, relative to DataOffset
	Sizes      []int64
	FileSize   int64
}

// Plan checks the metadata and tensor specs and computes the layout of the
// file they make. general.alignment, when present, must be a u32 power of two.
func Plan(kv []KV, tensors []TensorSpec) (*Layout, error) {
	l := &Layout{Alignment: DefaultAlignment}
	seen := make(map[string]bool, len(kv))
	hdr := int64(4 + 4 + 8 + 8)
	for _, p := range kv {
		if p.Key == "" {
			return nil, errors.New("gguf: empty metadata key")
		}
		if seen[p.Key] {
			return nil, fmt.Errorf("gguf: duplicate metadata key %q", p.Key)
		}
		seen[p.Key] = true
		n, err := valueSize(p.Value)
		if err != nil {
			return nil, fmt.Errorf("gguf: key %q: %w", p.Key, err)
		}
		hdr += 8 + int64(len(p.Key)) + 4 + n
		if p.Key == "general.alignment" {
			a, ok := p.Value.v.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return nil, fmt.Errorf("gguf: general.alignment must be a u32 power of two, got %s %v", p.Value.TypeName(), p.Value.v)
			}
			l.Alignment = int64(a)
		}
	}
	names := make(map[string]bool, len(tensors))
	var off int64
	for _, t := range tensors {
		if t.Name == "" || len(t.Name) >= MaxNameLen {
			return nil, fmt.Errorf("gguf: tensor name %q must be 1..%d bytes", t.Name, MaxNameLen-1)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("gguf: duplicate tensor %q", t.Name)
		}
		names[t.Name] = true
		if len(t.Dims) < 1 || len(t.Dims) > MaxDims {
			return nil, fmt.Errorf("gguf: tensor %q: %d dimensions, want 1..%d", t.Name, len(t.Dims), MaxDims)
		}
		elems := int64(1)
		for _, d := range t.Dims {
			if d <= 0 || elems > math.MaxInt64/d {
				return nil, fmt.Errorf("gguf: tensor %q: bad dimensions %v", t.Name, t.Dims)
			}
			elems *= d
		}
		ti, ok := quant.Info(t.Type)
		if !ok {
			return nil, fmt.Errorf("gguf: tensor %q: unknown type %d", t.Name, uint32(t.Type))
		}
		if t.Dims[0]%int64(ti.BlockElements) != 0 {
			return nil, fmt.Errorf("gguf: tensor %q: ne[0] = %d is not a multiple of %s's block of %d", t.Name, t.Dims[0], t.Type, ti.BlockElements)
		}
		if elems/int64(ti.BlockElements) > math.MaxInt64/int64(ti.BlockBytes) {
			return nil, fmt.Errorf("gguf: tensor %q: %d elements of %s overflow a 64-bit byte size", t.Name, elems, t.Type)
		}
		size, err := quant.RowBytes(t.Type, elems)
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if size > maxFileSize || off > maxFileSize-size {
			return nil, fmt.Errorf("gguf: tensor %q: data would end past %d bytes", t.Name, int64(maxFileSize))
		}
		hdr += 8 + int64(len(t.Name)) + 4 + 8*int64(len(t.Dims)) + 4 + 8
		l.Offsets = append(l.Offsets, off)
		l.Sizes = append(l.Sizes, size)
		off += alignUp(size, l.Alignment)
	}
	l.HeaderEnd = hdr
	l.DataOffset = alignUp(hdr, l.Alignment)
	l.FileSize = l.DataOffset + off
	if len(tensors) == 0 {
		// No data section, so nothing to align: padding would only cost
		// (up to 2 GiB for a legal general.alignment of 1<<31).
		l.FileSize = l.HeaderEnd
	}
	return l, nil
}

func valueSize(v Value) (int64, error) {
	if v.Type == TypeArray {
		n := int64(4 + 8)
		switch a := v.v.(type) {
		case []string:
			for _, s := range a {
				n += 8 + int64(len(s))
			}
			return n, nil
		case []Value:
			return 0, errors.New("nested arrays are not written (llama.cpp refuses them)")
		}
		sz := v.Elem.size()
		if sz == 0 {
			return 0, fmt.Errorf("bad array element type %s", v.Elem)
		}
		return n + int64(sz)*int64(v.Len()), nil
	}
	if s, ok := v.v.(string); ok && v.Type == TypeString {
		return 8 + int64(len(s)), nil
	}
	if sz := v.Type.size(); sz > 0 && v.v != nil {
		return int64(sz), nil
	}
	return 0, fmt.Errorf("bad value of type %s", v.Type)
}

// Writer streams a GGUF file: the header at once, then each tensor's bytes in
// declaration order, padding computed for the caller.
type Writer struct {
	w       *bufio.Writer
	layout  *Layout
	tensors []TensorSpec
	next    int   // tensor being written
	written int64 // bytes of it written so far
	pos     int64
	err     error
}

// NewWriter writes the header of the described file to w.
func NewWriter(w io.Writer, kv []KV, tensors []TensorSpec) (*Writer, error) {
	l, err := Plan(kv, tensors)
	if err != nil {
		return nil, err
	}
	gw := &Writer{w: bufio.NewWriterSize(w, int(min(max(l.FileSize, 4096), 1<<20))), layout: l, tensors: tensors}
	gw.header(kv)
	if len(tensors) > 0 {
		gw.pad(l.DataOffset)
	}
	if gw.err != nil {
		return nil, gw.err
	}
	return gw, nil
}

// Layout is the plan this writer follows.
func (w *Writer) Layout() *Layout { return w.layout }

func (w *Writer) raw(p []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(p)
	w.pos += int64(n)
	w.err = err
}

func (w *Writer) u32(x uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], x)
	w.raw(b[:])
}

func (w *Writer) u64(x uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], x)
	w.raw(b[:])
}

func (w *Writer) str(s string) {
	w.u64(uint64(len(s)))
	w.raw([]byte(s))
}

var zeros [4096]byte

func (w *Writer) pad(to int64) {
	for w.pos < to && w.err == nil {
		n := min(to-w.pos, int64(len(zeros)))
		w.raw(zeros[:n])
	}
}

func (w *Writer) header(kv []KV) {
	w.raw([]byte(Magic))
	w.u32(3)
	w.u64(uint64(len(w.tensors)))
	w.u64(uint64(len(kv)))
	for _, p := range kv {
		w.str(p.Key)
		w.u32(uint32(p.Value.Type))
		w.value(p.Value)
	}
	for i, t := range w.tensors {
		w.str(t.Name)
		w.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			w.u64(uint64(d))
		}
		w.u32(uint32(t.Type))
		w.u64(uint64(w.layout.Offsets[i]))
	}
}

func (w *Writer) value(v Value) {
	le := binary.LittleEndian
	switch x := v.v.(type) {
	case uint8:
		w.raw([]byte{x})
	case int8:
		w.raw([]byte{byte(x)})
	case bool:
		if x {
			w.raw([]byte{1})
		} else {
			w.raw([]byte{0})
		}
	case uint16:
		w.raw(le.AppendUint16(nil, x))
	case int16:
		w.raw(le.AppendUint16(nil, uint16(x)))
	case uint32:
		w.u32(x)
	case int32:
		w.u32(uint32(x))
	case float32:
		w.u32(math.Float32bits(x))
	case uint64:
		w.u64(x)
	case int64:
		w.u64(uint64(x))
	case float64:
		w.u64(math.Float64bits(x))
	case string:
		w.str(x)
	default:
		w.u32(uint32(v.Elem))
		w.u64(uint64(v.Len()))
		w.array(v)
	}
}

func (w *Writer) array(v Value) {
	le := binary.LittleEndian
	var buf []byte
	switch a := v.v.(type) {
	case []uint8:
		w.raw(a)
		return
	case []string:
		for _, s := range a {
			w.str(s)
		}
		return
	case []int8:
		for _, x := range a {
			buf = append(buf, byte(x))
		}
	case []bool:
		for _, x := range a {
			if x {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		}
	case []uint16:
		for _, x := range a {
			buf = le.AppendUint16(buf, x)
		}
	case []int16:
		for _, x := range a {
			buf = le.AppendUint16(buf, uint16(x))
		}
	case []uint32:
		for _, x := range a {
			buf = le.AppendUint32(buf, x)
		}
	case []int32:
		for _, x := range a {
			buf = le.AppendUint32(buf, uint32(x))
		}
	case []float32:
		for _, x := range a {
			buf = le.AppendUint32(buf, math.Float32bits(x))
		}
	case []uint64:
		for _, x := range a {
			buf = le.AppendUint64(buf, x)
		}
	case []int64:
		for _, x := range a {
			buf = le.AppendUint64(buf, uint64(x))
		}
	case []float64:
		for _, x := range a {
			buf = le.AppendUint64(buf, math.Float64bits(x))
		}
	}
	w.raw(buf)
}

// Write appends bytes of the current tensor, moving to the next one (with
// padding) once a tensor is complete. Bytes beyond the last tensor are refused.
func (w *Writer) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if w.err != nil {
			return total, w.err
		}
		if w.next >= len(w.tensors) {
			return total, errors.New("gguf: write past the last tensor")
		}
		left := w.layout.Sizes[w.next] - w.written
		n := int(min(int64(len(p)), left))
		w.raw(p[:n])
		w.written += int64(n)
		total += n
		p = p[n:]
		if w.written == w.layout.Sizes[w.next] {
			w.next++
			w.written = 0
			if w.next < len(w.tensors) {
				w.pad(w.layout.DataOffset + w.layout.Offsets[w.next])
			} else {
				w.pad(w.layout.FileSize)
			}
		}
	}
	return total, w.err
}

// WriteTensor writes the whole of the current tensor, whose name must match.
func (w *Writer) WriteTensor(name string, data []byte) error {
	if w.next >= len(w.tensors) || w.tensors[w.next].Name != name || w.written != 0 {
		return fmt.Errorf("gguf: WriteTensor(%q) out of order", name)
	}
	if int64(len(data)) != w.layout.Sizes[w.next] {
		return fmt.Errorf("gguf: tensor %q: %d bytes given, %d expected", name, len(data), w.layout.Sizes[w.next])
	}
	_, err := w.Write(data)
	return err
}

// CopyTensor streams the current tensor's bytes from r (exactly its size).
func (w *Writer) CopyTensor(name string, r io.Reader) error {
	if w.next >= len(w.tensors) || w.tensors[w.next].Name != name || w.written != 0 {
		return fmt.Errorf("gguf: CopyTensor(%q) out of order", name)
	}
	size := w.layout.Sizes[w.next]
	n, err := io.Copy(w, io.LimitReader(r, size))
	if err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("gguf: tensor %q: source gave %d of %d bytes", name, n, size)
	}
	return nil
}

// Flush checks that every tensor was written in full and flushes the buffer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.next < len(w.tensors) {
		return fmt.Errorf("gguf: tensor %q not written (%d of %d tensors done)", w.tensors[w.next].Name, w.next, len(w.tensors))
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// AtomicFile is an output that appears under its name only when complete:
// it is written to a temporary file beside its target, fsynced and renamed
// by Commit. The target is the path itself or, for a symlink, the regular
// file the link ends at (osutil.OutputTarget); anything else there (a
// device, FIFO, socket or directory) is refused when the output is created.
type AtomicFile struct {
	*os.File
	path   string // as the user gave it, for messages
	target string // what the rename replaces
	temp   *osutil.Temp
	done   bool
}

// CreateAtomic starts an atomic output at path, first removing stale
// temporary files of the same output that a killed run left
// (osutil.SweepTemps).
func CreateAtomic(path string) (*AtomicFile, error) {
	target, err := osutil.OutputTarget(path)
	if err != nil {
		return nil, err
	}
	t, err := osutil.CreateTemp(target)
	if err != nil {
		// The temporary name means nothing to the user; the path they gave does.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	f := t.File
	// CreateTemp makes the file private (0600); an output should get the
	// mode any other new file gets (0666 less the umask, applied by the
	// kernel to OpenFile's mode, which Chmod does not do, hence the probe).
	if err := f.Chmod(outputMode()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &AtomicFile{File: f, path: path, target: target, temp: t}, nil
}

// Reserve refuses an output of n bytes that its file system has no room
// for (osutil.CheckSpace); a writer that knows its size calls it before
// writing.
func (a *AtomicFile) Reserve(n int64) error {
	return osutil.CheckSpace(a.path, n)
}

// Commit fsyncs, closes and renames the file into place, then syncs the
// directory so that the rename survives a crash.
func (a *AtomicFile) Commit() error {
	if a.done {
		return errors.New("gguf: output already committed or aborted")
	}
	a.done = true
	tmp := a.File.Name()
	if err := a.File.Sync(); err != nil {
		a.File.Close()
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", a.path, err)
	}
	// What appeared at the target since the output was created is checked
	// again: the rename must replace nothing but a regular file.
	if st, err := os.Lstat(a.target); err == nil && !st.Mode().IsRegular() {
		a.File.Close()
		os.Remove(tmp)
		return &osutil.NotRegularError{Path: a.path, Mode: st.Mode(), Output: true}
	}
	if err := os.Rename(tmp, a.target); err != nil {
		a.File.Close()
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", a.path, err)
	}
	// Closing releases the temporary file's lock, after the rename: until
	// then a sweep sees it held.
	if err := a.File.Close(); err != nil {
		return fmt.Errorf("%s: %w", a.path, err)
	}
	if d, err := os.Open(filepath.Dir(a.target)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort removes the temporary file; it is a no-op after Commit.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	name := a.File.Name()
	os.Remove(name)
	a.File.Close()
}

// FileWriter is a Writer into an AtomicFile.
type FileWriter struct {
	*Writer
	out *AtomicFile
}

// Create starts writing a GGUF file at path; nothing appears there until
// Commit succeeds. Its errors name path.
func Create(path string, kv []KV, tensors []TensorSpec) (*FileWriter, error) {
	l, err := Plan(kv, tensors)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return create(path, kv, tensors, l.FileSize)
}

// create is Create with the room to check for: the file's size, or 0 where
// the caller has checked the room for several files at once.
func create(path string, kv []KV, tensors []TensorSpec, room int64) (*FileWriter, error) {
	out, err := CreateAtomic(path)
	if err != nil {
		return nil, err
	}
	if err := out.Reserve(room); err != nil {
		out.Abort()
		return nil, err
	}
	w, err := NewWriter(out, kv, tensors)
	if err != nil {
		out.Abort()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &FileWriter{Writer: w, out: out}, nil
}

// Commit completes the file: flush, fsync, rename.
func (fw *FileWriter) Commit() error {
	if err := fw.Writer.Flush(); err != nil {
		fw.out.Abort()
		return fmt.Errorf("%s: %w", fw.out.path, err)
	}
	return fw.out.Commit()
}

// Abort discards the output.
func (fw *FileWriter) Abort() { fw.out.Abort() }

// Specs returns the tensor specs of a parsed file, to rewrite it.
func (f *File) Specs() []TensorSpec {
	out := make([]TensorSpec, len(f.Tensors))
	for i, t := range f.Tensors {
		out[i] = TensorSpec{Name: t.Name, Type: t.Type, Dims: append([]int64(nil), t.Dims...)}
	}
	return out
}

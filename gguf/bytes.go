package gguf

import "io"

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Bytes returns t's data in place when the file is mapped (OpenMapped or
// FromBytes), and false otherwise.
func (f *File) Bytes(t *TensorInfo) ([]byte, bool) {
	if len(f.Shards) > 0 {
		sh := &f.Shards[t.Shard]
		local := *t
		local.Offset -= sh.base
		return sh.file.Bytes(&local)
	}
	if f.mapped == nil {
		return nil, false
	}
	s := f.DataStart(t)
	if t.Offset < 0 || t.Size < 0 || s+t.Size > int64(len(f.mapped)) {
		return nil, false // a TensorInfo not from this file
	}
	return f.mapped[s : s+t.Size : s+t.Size], true
}

// FromBytes parses a GGUF image held in memory; Bytes works on it.
func FromBytes(data []byte, name string) (*File, error) {
	f, err := NewReader(bytesReaderAt(data), int64(len(data)), name)
	if err != nil {
		return nil, err
	}
	f.mapped = data
	return f, nil
}

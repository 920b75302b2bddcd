package imatrix

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// maxLegacyName bounds a name in the legacy form; llama.cpp tensor names
// are far shorter, and a hostile length must not allocate.
const maxLegacyName = 1 << 12

// openLegacy reads the legacy .dat form: int32 n_entries, then per entry
// int32 name_len, the name, int32 ncall, int32 nval, float32 values[nval]
// (stored as importance times ncall), then an optional trailer (last chunk,
// dataset name) that is read when present.
func openLegacy(path string, f *os.File) (*Matrix, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	r := &legacyReader{br: bufio.NewReader(f), size: st.Size(), path: path}
	m := &Matrix{Path: path, Legacy: true}
	n, err := r.i32("entry count")
	if err != nil {
		return nil, err
	}
	if n <= 0 || int64(n)*12 > r.size {
		return nil, r.errf(0, "entry count %d does not fit a file of %d bytes (not a GGUF either)", n, r.size)
	}
	for i := 0; i < int(n); i++ {
		at := r.off
		nameLen, err := r.i32("name length")
		if err != nil {
			return nil, err
		}
		if nameLen <= 0 || nameLen > maxLegacyName || int64(nameLen) > r.size-r.off {
			return nil, r.errf(at, "entry %d: name length %d", i, nameLen)
		}
		name := make([]byte, nameLen)
		if err := r.read(name, "name"); err != nil {
			return nil, err
		}
		ncall, err := r.i32("call count")
		if err != nil {
			return nil, err
		}
		nvalAt := r.off
		nval, err := r.i32("value count")
		if err != nil {
			return nil, err
		}
		if nval <= 0 || int64(nval)*4 > r.size-r.off {
			return nil, r.errf(nvalAt, "entry %q: %d values do not fit the %d bytes left", name, nval, r.size-r.off)
		}
		if ncall < 0 {
			return nil, r.errf(nvalAt-4, "entry %q: call count %d", name, ncall)
		}
		raw := make([]byte, 4*int(nval))
		valuesAt := r.off
		if err := r.read(raw, "values"); err != nil {
			return nil, err
		}
		vals := make([]float32, nval)
		for j := range vals {
			v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			if !(v >= 0) || math.IsInf(float64(v), 0) {
				return nil, r.errf(valuesAt+int64(4*j), "entry %q: value %g at %d", name, v, j)
			}
			if ncall > 0 {
				v /= float32(ncall)
			}
			vals[j] = v
		}
		if _, dup := m.entries[string(name)]; dup {
			return nil, r.errf(at, "entry %q appears twice", name)
		}
		m.add(&Entry{Name: string(name), Values: vals, Counts: []float32{float32(ncall)}})
	}
	// Optional trailer of newer writers: int32 last_chunk, int32 length,
	// dataset name.
	if r.size-r.off >= 8 {
		last, _ := r.i32("last chunk")
		dl, _ := r.i32("dataset name length")
		if dl >= 0 && int64(dl) == r.size-r.off {
			name := make([]byte, dl)
			if err := r.read(name, "dataset name"); err != nil {
				return nil, err
			}
			m.ChunkCount = uint32(max(last, 0))
			m.Datasets = []string{string(name)}
		} else {
			return nil, r.errf(r.off-8, "%d bytes after the entries are not a trailer", r.size-r.off+8)
		}
	} else if r.size-r.off == 4 {
		last, _ := r.i32("last chunk")
		m.ChunkCount = uint32(max(last, 0))
	} else if r.size != r.off {
		return nil, r.errf(r.off, "%d stray bytes after the entries", r.size-r.off)
	}
	m.finish()
	return m, nil
}

type legacyReader struct {
	br   *bufio.Reader
	off  int64
	size int64
	path string
}

func (r *legacyReader) errf(at int64, format string, args ...any) error {
	return fmt.Errorf("imatrix %s: byte %d: %s", r.path, at, fmt.Sprintf(format, args...))
}

func (r *legacyReader) read(p []byte, what string) error {
	if _, err := io.ReadFull(r.br, p); err != nil {
		return r.errf(r.off, "truncated reading %s: %v", what, err)
	}
	r.off += int64(len(p))
	return nil
}

func (r *legacyReader) i32(what string) (int32, error) {
	var b [4]byte
	if err := r.read(b[:], what); err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b[:])), nil
}

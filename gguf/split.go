package gguf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The split convention of llama.cpp's gguf-split: shards named
// <prefix>-%05d-of-%05d.gguf, each a standalone GGUF carrying these keys, and
// only the first carrying the model's metadata.
const (
	KeySplitNo           = "split.no"            // u16, 0-based
	KeySplitCount        = "split.count"         // u16
	KeySplitTensorsCount = "split.tensors.count" // i32, tensors in all shards
)

var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// SplitPath is the name of shard no (0-based) of count for prefix.
func SplitPath(prefix string, no, count int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, no+1, count)
}

// ParseSplitPath recognises a shard name and returns its prefix, 0-based
// number and count.
func ParseSplitPath(path string) (prefix string, no, count int, ok bool) {
	m := splitName.FindStringSubmatch(path)
	if m == nil {
		return "", 0, 0, false
	}
	n, _ := strconv.Atoi(m[2])
	c, _ := strconv.Atoi(m[3])
	if n < 1 || c < 1 || n > c {
		return "", 0, 0, false
	}
	return m[1], n - 1, c, true
}

// Shard describes one file of a split model.
type Shard struct {
	Path       string
	Size       int64
	Tensors    int   // tensors stored in this shard
	DataOffset int64 // start of its data section
	base       int64 // where its data section starts in the model's virtual data space
	file       *File
}

// OpenModel opens a model given a single GGUF file or any shard of a split
// model, and presents a split model as one File: metadata from the first
// shard (without the split.* keys), tensors of all shards in order. A missing,
// extra, truncated or mismatched shard is refused with an error naming it.
// With mapped, tensors are mapped and Bytes works.
func OpenModel(path string, mapped bool) (*File, error) {
	open := Open
	if mapped {
		open = OpenMapped
	}
	prefix, _, count, isShard := ParseSplitPath(path)
	if !isShard {
		f, err := open(path)
		if err != nil {
			return nil, err
		}
		if c, err := f.Uint64(KeySplitCount); err == nil && c > 1 {
			f.Close()
			return nil, fmt.Errorf("%s: the file is shard %s of a %d-way split but its name does not follow <prefix>-NNNNN-of-NNNNN.gguf", path, splitNoString(f), c)
		}
		return f, nil
	}
	files := make([]*File, 0, count)
	fail := func(err error) (*File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	for i := 0; i < count; i++ {
		p := SplitPath(prefix, i, count)
		f, err := open(p)
		if err != nil {
			if os.IsNotExist(err) {
				return fail(fmt.Errorf("%s: shard %d of %d is missing", p, i+1, count))
			}
			return fail(err)
		}
		files = append(files, f)
		if err := checkShard(f, i, count); err != nil {
			return fail(err)
		}
	}
	// A shard numbered beyond count under the same prefix means two splits
	// were mixed in one folder.
	if extra, _ := filepath.Glob(prefix + "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].gguf"); len(extra) > count {
		sort.Strings(extra)
		for _, e := range extra {
			if _, _, c, ok := ParseSplitPath(e); ok && c != count {
				return fail(fmt.Errorf("%s: a shard of a %d-way split lies beside the %d-way split %s", e, c, count, SplitPath(prefix, 0, count)))
			}
		}
	}
	return mergeShards(files)
}

func splitNoString(f *File) string {
	if n, err := f.Uint64(KeySplitNo); err == nil {
		return strconv.FormatUint(n+1, 10)
	}
	return "?"
}

func checkShard(f *File, no, count int) error {
	v, ok := f.Get(KeySplitNo)
	n, isU16 := v.v.(uint16)
	if !ok || !isU16 {
		return &FormatError{File: f.Path, Key: KeySplitNo, Msg: "missing or not a u16: the file is not a shard of a split model"}
	}
	if int(n) != no {
		return &FormatError{File: f.Path, Key: KeySplitNo, Msg: fmt.Sprintf("is %d, but the file name says shard %d (0-based %d)", n, no+1, no)}
	}
	v, ok = f.Get(KeySplitCount)
	c, isU16 := v.v.(uint16)
	if !ok || !isU16 {
		return &FormatError{File: f.Path, Key: KeySplitCount, Msg: "missing or not a u16"}
	}
	if int(c) != count {
		return &FormatError{File: f.Path, Key: KeySplitCount, Msg: fmt.Sprintf("is %d, but the file name says %d shards: this shard belongs to another split", c, count)}
	}
	v, ok = f.Get(KeySplitTensorsCount)
	if _, isI32 := v.v.(int32); !ok || !isI32 {
		return &FormatError{File: f.Path, Key: KeySplitTensorsCount, Msg: "missing or not an i32"}
	}
	return nil
}

func mergeShards(files []*File) (*File, error) {
	first := files[0]
	total, _ := first.Int64(KeySplitTensorsCount)
	m := &File{
		Path:       first.Path,
		Version:    first.Version,
		Alignment:  first.Alignment,
		HeaderEnd:  first.HeaderEnd,
		DataOffset: 0,
		byName:     make(map[string]int),
	}
	m.Metadata.File = first.Path
	for _, kv := range first.KV {
		switch kv.Key {
		case KeySplitNo, KeySplitCount, KeySplitTensorsCount, KeySplitID:
			continue
		}
		m.KV = append(m.KV, kv)
	}
	m.Metadata.index()
	var base int64
	for i, f := range files {
		t, _ := f.Int64(KeySplitTensorsCount)
		if t != total {
			return nil, closeAll(files, &FormatError{File: f.Path, Key: KeySplitTensorsCount, Msg: fmt.Sprintf("is %d, but shard 1 says %d: the shards come from different splits", t, total)})
		}
		if err := sameSplitID(first, f); err != nil {
			return nil, closeAll(files, err)
		}
		sh := Shard{Path: f.Path, Size: f.Size, Tensors: len(f.Tensors), DataOffset: f.DataOffset, base: base, file: f}
		for _, ti := range f.Tensors {
			if j, dup := m.byName[ti.Name]; dup {
				return nil, closeAll(files, &FormatError{File: f.Path, Offset: ti.InfoOffset, Tensor: ti.Name, Msg: fmt.Sprintf("also stored in shard %d (%s)", m.Tensors[j].Shard+1, m.Shards[m.Tensors[j].Shard].Path)})
			}
			ti.Shard = i
			ti.Offset += base
			m.byName[ti.Name] = len(m.Tensors)
			m.Tensors = append(m.Tensors, ti)
		}
		m.Shards = append(m.Shards, sh)
		m.Size += f.Size
		base += alignUp(max(f.Size-f.DataOffset, 0), m.Alignment)
	}
	if int64(len(m.Tensors)) != total {
		return nil, closeAll(files, &FormatError{File: first.Path, Key: KeySplitTensorsCount, Msg: fmt.Sprintf("says %d tensors, but the %d shards hold %d", total, len(files), len(m.Tensors))})
	}
	m.r = shardReader(m.Shards)
	return m, nil
}

func closeAll(files []*File, err error) error {
	for _, f := range files {
		f.Close()
	}
	return err
}

// shardReader maps the model's virtual data space onto the shards' data
// sections; a tensor never straddles two shards.
type shardReader []Shard

func (s shardReader) ReadAt(p []byte, off int64) (int, error) {
	i := sort.Search(len(s), func(i int) bool { return s[i].base > off }) - 1
	if i < 0 {
		return 0, io.EOF
	}
	sh := &s[i]
	return sh.file.r.ReadAt(p, sh.DataOffset+(off-sh.base))
}

func sameSplitID(first, f *File) error {
	a, aok := first.Get(KeySplitID)
	b, bok := f.Get(KeySplitID)
	if !aok && !bok {
		return nil // written by a tool that does not mark its splits
	}
	if aok != bok || a.v != b.v {
		return &FormatError{File: f.Path, Key: KeySplitID, Msg: fmt.Sprintf("is %v, but shard 1 says %v: this shard comes from another split", b.v, a.v)}
	}
	return nil
}

// Locate names the file holding t's data and the absolute byte offset there:
// the shard's path and offset for a split model, the file's otherwise.
func (f *File) Locate(t *TensorInfo) (path string, offset int64) {
	if len(f.Shards) > 0 {
		sh := &f.Shards[t.Shard]
		return sh.Path, sh.DataOffset + (t.Offset - sh.base)
	}
	return f.Path, f.DataStart(t)
}

// ModelPaths lists the files a model path stands for: every shard of a
// split model given by any of its shards, else path itself.
func ModelPaths(path string) []string {
	prefix, _, count, ok := ParseSplitPath(path)
	if !ok {
		return []string{path}
	}
	paths := make([]string, count)
	for i := range paths {
		paths[i] = SplitPath(prefix, i, count)
	}
	return paths
}

// OutputPaths lists the files an output at path may replace: path itself,
// or for a split output (whose shard count is known only once it is
// planned) every shard of any count already under its prefix, and the
// first shard's name for a count of one.
func OutputPaths(path string, opt SplitOptions) []string {
	if !opt.active() {
		return []string{path}
	}
	prefix := strings.TrimSuffix(path, ".gguf")
	found, _ := filepath.Glob(globEscape(prefix) + "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].gguf")
	return append(found, SplitPath(prefix, 0, 1))
}

// globEscape quotes the glob metacharacters of a literal path.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

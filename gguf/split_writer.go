package gguf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stratactl/stratactl/internal/osutil"
)

// SplitOptions bounds each shard of a split output. A zero field means no
// bound of that kind; with both zero the output is a single file.
type SplitOptions struct {
	MaxBytes   int64 // a shard's file size never exceeds this, unless one tensor alone does
	MaxTensors int   // tensors per shard
	// NoTensorsFirst puts only the metadata in the first shard, as
	// gguf-split --no-tensor-first-split does.
	NoTensorsFirst bool
}

func (o SplitOptions) active() bool { return o.MaxBytes > 0 || o.MaxTensors > 0 || o.NoTensorsFirst }

// PlanSplit assigns tensors to shards in order: shard k holds tensors
// [bounds[k], bounds[k+1]). Every shard's size, header included, is computed
// exactly, so the byte bound holds for all but a shard whose single tensor is
// larger than it.
func PlanSplit(kv []KV, tensors []TensorSpec, opt SplitOptions) ([]int, error) {
	if !opt.active() {
		return []int{0, len(tensors)}, nil
	}
	bounds := []int{0}
	if opt.NoTensorsFirst {
		bounds = append(bounds, 0)
	}
	// Sizes are summed incrementally (header bytes per tensor info, padded
	// data per tensor), so planning stays linear in the tensor count even
	// when the first shard's metadata holds a large vocabulary.
	base := func(first bool) (int64, int64, error) {
		l, err := Plan(shardKV(kv, first, 0, 1, len(tensors), splitID(nil, nil)), nil)
		if err != nil {
			return 0, 0, err
		}
		return l.HeaderEnd, l.Alignment, nil
	}
	start := bounds[len(bounds)-1]
	for start < len(tensors) {
		hdr, align, err := base(start == 0)
		if err != nil {
			return nil, err
		}
		var data int64
		end := start
		for end < len(tensors) {
			if opt.MaxTensors > 0 && end-start >= opt.MaxTensors {
				break
			}
			one, err := Plan(nil, tensors[end:end+1])
			if err != nil {
				return nil, err
			}
			h := hdr + one.HeaderEnd - 24 // one.HeaderEnd counts the fixed 24-byte preamble
			d := data + alignUp(one.Sizes[0], align)
			if opt.MaxBytes > 0 && alignUp(h, align)+d > opt.MaxBytes && end > start {
				break
			}
			hdr, data = h, d
			end++
		}
		bounds = append(bounds, end)
		start = end
	}
	if len(bounds) > 65535 {
		return nil, fmt.Errorf("gguf: a split of %d shards exceeds split.count's u16", len(bounds)-1)
	}
	return bounds, nil
}

// shardKV is the metadata of shard no: the model's keys on the first shard
// only, then the split keys.
func shardKV(kv []KV, first bool, no, count, total int, id string) []KV {
	var out []KV
	if first {
		for _, p := range kv {
			if !strings.HasPrefix(p.Key, "split.") {
				out = append(out, p)
			}
		}
	}
	return append(out,
		KV{KeySplitNo, Uint16(uint16(no))},
		KV{KeySplitCount, Uint16(uint16(count))},
		KV{KeySplitTensorsCount, Int32(int32(total))},
		KV{KeySplitID, String(id)},
	)
}

// KeySplitID is this project's addition to the split convention: every shard
// of one split carries the same identifier, a hash of the whole model's
// metadata and tensor list, so that a shard of another split of the same
// shape is refused instead of silently mixed in.
const KeySplitID = "stratactl.split.id"

func splitID(kv []KV, tensors []TensorSpec) string {
	h := sha256.New()
	for _, p := range kv {
		fmt.Fprintf(h, "%q=%s:%v\n", p.Key, p.Value.TypeName(), p.Value.v)
	}
	for _, t := range tensors {
		fmt.Fprintf(h, "%q %d %v\n", t.Name, t.Type, t.Dims)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// TensorSink is what a converter writes a model into: one file or a split.
// Tensors go in declaration order, whole (WriteTensor, CopyTensor) or as a
// byte stream that runs on from one tensor into the next (Write).
type TensorSink interface {
	io.Writer
	WriteTensor(name string, data []byte) error
	CopyTensor(name string, r io.Reader) error
	Commit() error
	Abort()
}

// SplitWriter writes a model as shards <prefix>-NNNNN-of-NNNNN.gguf. Each
// shard is a standalone GGUF written to a temporary file; nothing is renamed
// into place until every shard is complete, and the first shard, the one a
// reader opens, is renamed last.
type SplitWriter struct {
	prefix  string
	shards  []*FileWriter
	paths   []string
	bounds  []int
	tensors []TensorSpec
	next    int     // next tensor, for WriteTensor and CopyTensor
	left    []int64 // per shard, tensor bytes not yet written
	done    bool
}

// CreateSplit starts a split output for path (which ends in .gguf; the shards
// are named after it). With inactive options it writes a single file at path.
func CreateSplit(path string, kv []KV, tensors []TensorSpec, opt SplitOptions) (TensorSink, []string, error) {
	if !opt.active() {
		fw, err := Create(path, kv, tensors)
		return fw, []string{path}, err
	}
	prefix := strings.TrimSuffix(path, ".gguf")
	bounds, err := PlanSplit(kv, tensors, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	count := len(bounds) - 1
	id := splitID(kv, tensors)
	// Every shard is checked before any is created, and the room for all of
	// them at once.
	var total int64
	for k := 0; k < count; k++ {
		p := SplitPath(prefix, k, count)
		if _, err := osutil.OutputTarget(p); err != nil {
			return nil, nil, err
		}
		l, err := Plan(shardKV(kv, k == 0, k, count, len(tensors), id), tensors[bounds[k]:bounds[k+1]])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		total += l.FileSize
	}
	if err := osutil.CheckSpace(path, total); err != nil {
		return nil, nil, err
	}
	sw := &SplitWriter{prefix: prefix, bounds: bounds, tensors: tensors}
	for k := 0; k < count; k++ {
		p := SplitPath(prefix, k, count)
		fw, err := create(p, shardKV(kv, k == 0, k, count, len(tensors), id), tensors[bounds[k]:bounds[k+1]], 0)
		if err != nil {
			sw.Abort()
			return nil, nil, err
		}
		sw.shards = append(sw.shards, fw)
		sw.paths = append(sw.paths, p)
		var data int64
		for _, size := range fw.Layout().Sizes {
			data += size
		}
		sw.left = append(sw.left, data)
	}
	return sw, sw.paths, nil
}

func (sw *SplitWriter) current(name string) (int, error) {
	if sw.next >= len(sw.tensors) || sw.tensors[sw.next].Name != name {
		return 0, fmt.Errorf("gguf: tensor %q written out of order", name)
	}
	for k := range sw.shards {
		if sw.next < sw.bounds[k+1] {
			return k, nil
		}
	}
	return 0, errors.New("gguf: no shard for tensor " + name)
}

// WriteTensor writes the next tensor into its shard.
func (sw *SplitWriter) WriteTensor(name string, data []byte) error {
	k, err := sw.current(name)
	if err != nil {
		return err
	}
	if err := sw.shards[k].WriteTensor(name, data); err != nil {
		return err
	}
	sw.left[k] -= int64(len(data))
	sw.next++
	return nil
}

// CopyTensor streams the next tensor into its shard.
func (sw *SplitWriter) CopyTensor(name string, r io.Reader) error {
	k, err := sw.current(name)
	if err != nil {
		return err
	}
	size := sw.shards[k].Layout().Sizes[sw.next-sw.bounds[k]]
	if err := sw.shards[k].CopyTensor(name, r); err != nil {
		return err
	}
	sw.left[k] -= size
	sw.next++
	return nil
}

// Write streams tensor bytes in order, crossing from one shard into the next
// where a shard's last tensor ends.
func (sw *SplitWriter) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		k := 0
		for k < len(sw.left) && sw.left[k] == 0 {
			k++
		}
		if k == len(sw.left) {
			return total, errors.New("gguf: write past the last tensor")
		}
		n := int(min(int64(len(p)), sw.left[k]))
		m, err := sw.shards[k].Write(p[:n])
		total += m
		sw.left[k] -= int64(m)
		if err != nil {
			return total, err
		}
		p = p[n:]
	}
	return total, nil
}

// Commit completes every shard, renaming the first one last.
func (sw *SplitWriter) Commit() error {
	if sw.done {
		return errors.New("gguf: split already committed or aborted")
	}
	for k, left := range sw.left {
		if left != 0 {
			sw.Abort()
			return fmt.Errorf("%s: %d bytes of tensor data not written", sw.paths[k], left)
		}
	}
	for _, fw := range sw.shards {
		if err := fw.Writer.Flush(); err != nil {
			sw.Abort()
			return err
		}
	}
	for k := len(sw.shards) - 1; k >= 0; k-- {
		if err := sw.shards[k].out.Commit(); err != nil {
			sw.done = true
			for _, fw := range sw.shards[:k] {
				fw.Abort()
			}
			// Shards already renamed would look like a finished set.
			for _, p := range sw.paths[k+1:] {
				os.Remove(p)
			}
			return fmt.Errorf("%s: %w", sw.paths[k], err)
		}
	}
	sw.done = true
	return nil
}

// Abort discards every shard not yet renamed.
func (sw *SplitWriter) Abort() {
	if sw.done {
		return
	}
	sw.done = true
	for _, fw := range sw.shards {
		fw.Abort()
	}
}

package strata

import (
	"fmt"
	"io"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
)

// KeptTensor is one tensor of a source GGUF in the model that keeps only
// the experts of a keep map: the one way a GGUF is cut down to kept
// experts, shared by prune (an ordinary GGUF) and pack (model.gguf).
type KeptTensor struct {
	Src *gguf.TensorInfo
	// Spec is the output tensor: the source's name and type, and its
	// dimensions with the last one n_keep when the tensor is sliced.
	Spec gguf.TensorSpec
	// Layer is the MoE layer (an index into the keep map's layers) whose
	// kept experts the tensor is cut to, or -1 for a tensor copied whole.
	Layer int
}

// KeptTensors lists every tensor of f, in f's order, as the model keeping
// only k's experts has it: each per-expert tensor (ExpertIndexed) of a MoE
// layer of m cut to the kept experts' slices, every other tensor whole. A
// per-expert tensor whose last dimension is not the expert count, or whose
// bytes do not split into whole experts, is refused naming it. The tensors
// of m's multi-token-prediction blocks (m.MTP, in no MoE layer) are left
// out, unless carryMTP keeps them whole (every expert).
func KeptTensors(f *gguf.File, m *gguf.MoE, k *Keep, carryMTP bool) ([]KeptTensor, error) {
	layerOf := make(map[int]int, len(m.Layers))
	for l, ml := range m.Layers {
		layerOf[ml.Block] = l
	}
	n := int64(m.Experts)
	specs := f.Specs()
	out := make([]KeptTensor, 0, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if !carryMTP && m.InMTP(t.Name) {
			continue
		}
		out = append(out, KeptTensor{Src: t, Spec: specs[i], Layer: -1})
		kt := &out[len(out)-1]
		b, rest, ok := gguf.SplitBlockName(t.Name)
		l, moe := layerOf[b]
		if !ok || !moe || !ExpertIndexed(rest) {
			continue
		}
		last := len(t.Dims) - 1
		if t.Dims[last] != n {
			return nil, &gguf.FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("ne %v: the last dimension should be n_expert = %d", t.Dims, n)}
		}
		if per, err := quant.RowBytes(t.Type, t.Elements()/n); err != nil || per*n != t.Size {
			return nil, &gguf.FormatError{File: f.Path, Offset: t.InfoOffset, Tensor: t.Name, Msg: fmt.Sprintf("%d bytes of %s do not split into %d whole experts", t.Size, t.Type, n)}
		}
		kt.Spec.Dims[last] = int64(k.NKeep())
		kt.Layer = l
	}
	return out, nil
}

// Reader streams the output bytes of kt: the source tensor, or its kept
// experts' slices in keep-map order (row i of the output is source expert
// k.Keep[layer][i]).
func (kt *KeptTensor) Reader(f *gguf.File, k *Keep) io.Reader {
	if kt.Layer < 0 {
		return f.SectionReader(kt.Src)
	}
	t := kt.Src
	per := t.Size / t.Dims[len(t.Dims)-1]
	ids := k.Keep[kt.Layer]
	parts := make([]io.Reader, len(ids))
	for i, e := range ids {
		parts[i] = io.NewSectionReader(f.SectionReader(t), int64(e)*per, per)
	}
	return io.MultiReader(parts...)
}

// ReadAt fills b with the output bytes of kt from byte off, as Reader
// streams them (the random-access form, for comparing a pruned file with
// its source).
func (kt *KeptTensor) ReadAt(f *gguf.File, k *Keep, b []byte, off int64) error {
	if kt.Layer < 0 {
		return f.ReadTensorAt(kt.Src, b, off)
	}
	t := kt.Src
	per := t.Size / t.Dims[len(t.Dims)-1]
	ids := k.Keep[kt.Layer]
	for len(b) > 0 {
		i, within := off/per, off%per
		if i >= int64(len(ids)) {
			return fmt.Errorf("%s: tensor %q: read past its %d kept experts", f.Path, t.Name, len(ids))
		}
		n := min(int64(len(b)), per-within)
		if err := f.ReadTensorAt(t, b[:n], int64(ids[i])*per+within); err != nil {
			return err
		}
		b, off = b[n:], off+n
	}
	return nil
}

// Bytes reads the whole output of kt (for the small per-expert tensors:
// routers, biases).
func (kt *KeptTensor) Bytes(f *gguf.File, k *Keep) ([]byte, error) {
	size := kt.Src.Size
	if kt.Layer >= 0 {
		size = size / kt.Src.Dims[len(kt.Src.Dims)-1] * int64(len(k.Keep[kt.Layer]))
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(kt.Reader(f, k), b); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", f.Path, kt.Src.Name, err)
	}
	return b, nil
}

// KeptKV is src's metadata for the model keeping nKeep experts per layer,
// in src's key order: {arch}.expert_count becomes nKeep (in the source's
// integer type, which readers such as llama.cpp insist on), and each key of
// set replaces the source's value in place or is appended, in set's order.
// Unless carryMTP, m's multi-token-prediction blocks go too (as
// KeptTensors leaves them out): {arch}.nextn_predict_layers becomes 0 and
// {arch}.block_count the first of them.
func KeptKV(src *gguf.File, m *gguf.MoE, nKeep int, carryMTP bool, set []gguf.KV) ([]gguf.KV, error) {
	countKey := src.ArchKey("expert_count")
	ints := map[string]uint64{countKey: uint64(nKeep)}
	if len(m.MTP) > 0 && !carryMTP {
		ints[src.ArchKey(gguf.NextNKey)] = 0
		ints[src.ArchKey("block_count")] = uint64(m.MTP[0])
	}
	kv := make([]gguf.KV, 0, len(src.KV)+len(set)+1)
	idx := make(map[string]int, len(src.KV))
	for _, p := range src.KV {
		if x, ok := ints[p.Key]; ok {
			v, err := sameIntType(p.Value, x)
			if err != nil {
				return nil, &gguf.FormatError{File: src.Path, Offset: src.KeyOffset(p.Key), Key: p.Key, Msg: err.Error()}
			}
			p = gguf.KV{Key: p.Key, Value: v}
		}
		idx[p.Key] = len(kv)
		kv = append(kv, p)
	}
	if _, ok := idx[countKey]; !ok {
		idx[countKey] = len(kv)
		kv = append(kv, gguf.KV{Key: countKey, Value: gguf.Uint32(uint32(nKeep))})
	}
	for _, p := range set {
		if i, ok := idx[p.Key]; ok {
			kv[i].Value = p.Value
			continue
		}
		idx[p.Key] = len(kv)
		kv = append(kv, p)
	}
	return kv, nil
}

func sameIntType(old gguf.Value, x uint64) (gguf.Value, error) {
	switch old.Type {
	case gguf.TypeUint32:
		return gguf.Uint32(uint32(x)), nil
	case gguf.TypeInt32:
		return gguf.Int32(int32(x)), nil
	case gguf.TypeUint64:
		return gguf.Uint64(x), nil
	case gguf.TypeInt64:
		return gguf.Int64(int64(x)), nil
	case gguf.TypeUint16:
		return gguf.Uint16(uint16(x)), nil
	}
	return gguf.Value{}, fmt.Errorf("holds %s, want an integer", old.TypeName())
}

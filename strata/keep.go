package strata

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
)

// STRP constants (docs/FORMATS.md, "keep.strp (STRP), version 1").
const (
	KeepMagic   = "STRP"
	KeepVersion = 1
	StatMagic   = "STAT"

	keepFixed = 24
	// maxFieldName bounds a statistics field name, so a hostile length cannot
	// make a reader allocate.
	maxFieldName = 256
)

// Keep is the content of a keep.strp file.
type Keep struct {
	NExpert uint32     // experts per layer in the source model
	Layers  []uint32   // block index of each MoE layer, ascending
	Keep    [][]uint32 // per layer: the kept source expert ids, ascending (same count in every layer)
	Rank    [][]uint32 // per layer: kept ids (0..n_keep-1), hottest first (same count in every layer, maybe 0)
	Stats   *Stats     // optional
}

// Stats is the optional statistics block: Values[(l*NExpert+e)*len(Fields)+f]
// is field f of source expert e in layer l.
type Stats struct {
	Fields []string
	Values []float64
}

// NKeep is the number of experts kept per layer.
func (k *Keep) NKeep() int {
	if len(k.Keep) == 0 {
		return 0
	}
	return len(k.Keep[0])
}

// NRank is the length of each layer's ranking.
func (k *Keep) NRank() int {
	if len(k.Rank) == 0 {
		return 0
	}
	return len(k.Rank[0])
}

// LayerIndex is the position of block index block among Layers, or -1.
func (k *Keep) LayerIndex(block uint32) int {
	for i, b := range k.Layers {
		if b == block {
			return i
		}
	}
	return -1
}

// IsIdentity reports whether every source expert is kept.
func (k *Keep) IsIdentity() bool { return k.NKeep() == int(k.NExpert) }

// Stat is field f of source expert e in layer index l.
func (s *Stats) Stat(nExpert, l, e, f int) float64 {
	return s.Values[(l*nExpert+e)*len(s.Fields)+f]
}

// FieldIndex is the position of the named field, or -1.
func (s *Stats) FieldIndex(name string) int {
	for i, f := range s.Fields {
		if f == name {
			return i
		}
	}
	return -1
}

// IdentityKeep keeps every expert of every layer, with no ranking.
func IdentityKeep(layers []uint32, nExpert int) *Keep {
	k := &Keep{NExpert: uint32(nExpert), Layers: append([]uint32(nil), layers...)}
	ids := make([]uint32, nExpert)
	for i := range ids {
		ids[i] = uint32(i)
	}
	for range layers {
		k.Keep = append(k.Keep, ids)
		k.Rank = append(k.Rank, nil)
	}
	return k
}

// Blocks is the block index of each MoE layer, as ints.
func (k *Keep) Blocks() []int {
	out := make([]int, len(k.Layers))
	for i, b := range k.Layers {
		out[i] = int(b)
	}
	return out
}

// Fits checks that k is a keep map of model m (named model in errors): the
// same MoE layers and experts per layer, and at least as many experts kept
// as the router selects per token.
func (k *Keep) Fits(m *gguf.MoE, model string) error {
	blocks := make([]int, len(m.Layers))
	for i, l := range m.Layers {
		blocks[i] = l.Block
	}
	if int(k.NExpert) != m.Experts {
		return fmt.Errorf("the keep map is for %d experts per layer, %s has %d", k.NExpert, model, m.Experts)
	}
	if !slices.Equal(k.Blocks(), blocks) {
		return fmt.Errorf("the keep map is for MoE layers %v, %s has MoE layers %v", k.Layers, model, blocks)
	}
	if m.ExpertsUsed > k.NKeep() {
		return fmt.Errorf("keeping %d experts per layer is fewer than the %d that %s routes each token to (%s.expert_used_count)", k.NKeep(), m.ExpertsUsed, model, m.Arch)
	}
	return nil
}

// Validate checks everything a reader checks.
func (k *Keep) Validate() error {
	b, err := k.encode()
	if err != nil {
		return err
	}
	_, err = ParseKeep(b, "keep map")
	return err
}

// MarshalBinary encodes k as a STRP file, refusing content a reader would
// refuse.
func (k *Keep) MarshalBinary() ([]byte, error) {
	b, err := k.encode()
	if err != nil {
		return nil, err
	}
	if _, err := ParseKeep(b, "keep map"); err != nil {
		return nil, err
	}
	return b, nil
}

func (k *Keep) encode() ([]byte, error) {
	nl := len(k.Layers)
	if len(k.Keep) != nl || (len(k.Rank) != nl && len(k.Rank) != 0) {
		return nil, fmt.Errorf("strata: keep map has %d layers, %d keep lists and %d rankings", nl, len(k.Keep), len(k.Rank))
	}
	nk, nr := k.NKeep(), k.NRank()
	le := binary.LittleEndian
	b := make([]byte, 0, keepFixed+4*nl*(1+nk+nr)+4)
	b = append(b, KeepMagic...)
	b = le.AppendUint32(b, KeepVersion)
	b = le.AppendUint32(b, uint32(nl))
	b = le.AppendUint32(b, k.NExpert)
	b = le.AppendUint32(b, uint32(nk))
	b = le.AppendUint32(b, uint32(nr))
	for _, l := range k.Layers {
		b = le.AppendUint32(b, l)
	}
	for i, ids := range k.Keep {
		if len(ids) != nk {
			return nil, fmt.Errorf("strata: keep map: layer %d keeps %d experts, layer %d keeps %d", k.Layers[i], len(ids), k.Layers[0], nk)
		}
		for _, id := range ids {
			b = le.AppendUint32(b, id)
		}
	}
	for i, ids := range k.Rank {
		if len(ids) != nr {
			return nil, fmt.Errorf("strata: keep map: layer %d ranks %d experts, layer %d ranks %d", k.Layers[i], len(ids), k.Layers[0], nr)
		}
		for _, id := range ids {
			b = le.AppendUint32(b, id)
		}
	}
	if s := k.Stats; s != nil {
		if want := nl * int(k.NExpert) * len(s.Fields); len(s.Values) != want {
			return nil, fmt.Errorf("strata: statistics: %d values, want %d (%d layers × %d experts × %d fields)", len(s.Values), want, nl, k.NExpert, len(s.Fields))
		}
		b = append(b, StatMagic...)
		b = le.AppendUint32(b, uint32(len(s.Fields)))
		for _, f := range s.Fields {
			b = le.AppendUint32(b, uint32(len(f)))
			b = append(b, f...)
		}
		for _, v := range s.Values {
			b = le.AppendUint64(b, math.Float64bits(v))
		}
	}
	return le.AppendUint32(b, CRC32C(b)), nil
}

// ParseKeep decodes and checks a STRP file held in b; name is used in errors.
func ParseKeep(b []byte, name string) (*Keep, error) {
	le := binary.LittleEndian
	size := int64(len(b))
	if size < keepFixed+4 {
		return nil, formatErr(name, 0, "%d bytes is too short for a STRP file", size)
	}
	if string(b[:4]) != KeepMagic {
		return nil, formatErr(name, 0, "not a strata keep file: magic %q, want %q", b[:4], KeepMagic)
	}
	if v := le.Uint32(b[4:]); v != KeepVersion {
		return nil, formatErr(name, 4, "version %d, this reader knows %d", v, KeepVersion)
	}
	nl := int64(le.Uint32(b[8:]))
	k := &Keep{NExpert: le.Uint32(b[12:])}
	nk := int64(le.Uint32(b[16:]))
	nr := int64(le.Uint32(b[20:]))
	body := size - 4 // bytes before the CRC
	switch {
	case nl == 0:
		return nil, formatErr(name, 8, "n_layer is 0")
	case k.NExpert == 0:
		return nil, formatErr(name, 12, "n_expert is 0")
	case nk == 0 || nk > int64(k.NExpert):
		return nil, formatErr(name, 16, "n_keep %d, want 1..n_expert (%d)", nk, k.NExpert)
	case nr > nk:
		return nil, formatErr(name, 20, "n_rank %d exceeds n_keep %d", nr, nk)
	}
	// Each count is below 2^32, so these products fit in int64.
	fixedEnd := keepFixed + 4*nl*(1+nk+nr)
	if fixedEnd > body {
		return nil, formatErr(name, 8, "%d layers × (1 + %d kept + %d ranked) ids need %d bytes, the file has %d", nl, nk, nr, fixedEnd+4, size)
	}
	if got, stored := CRC32C(b[:body]), le.Uint32(b[body:]); got != stored {
		e := formatErr(name, body, "CRC-32C is %#08x, bytes [0, %d) give %#08x", stored, body, got)
		e.err = ErrChecksum
		return nil, e
	}
	off := int64(keepFixed)
	k.Layers = make([]uint32, nl)
	for i := range k.Layers {
		k.Layers[i] = le.Uint32(b[off:])
		if i > 0 && k.Layers[i] <= k.Layers[i-1] {
			return nil, formatErr(name, off, "layer block index %d after %d: the list must ascend", k.Layers[i], k.Layers[i-1])
		}
		off += 4
	}
	k.Keep = make([][]uint32, nl)
	ids := make([]uint32, nl*nk)
	for l := range k.Keep {
		k.Keep[l] = ids[int64(l)*nk : int64(l+1)*nk : int64(l+1)*nk]
		for i := range k.Keep[l] {
			id := le.Uint32(b[off:])
			if id >= k.NExpert {
				return nil, formatErr(name, off, "layer %d: kept expert id %d is not below n_expert %d", k.Layers[l], id, k.NExpert)
			}
			if i > 0 && id <= k.Keep[l][i-1] {
				return nil, formatErr(name, off, "layer %d: kept expert id %d after %d: ids must strictly ascend", k.Layers[l], id, k.Keep[l][i-1])
			}
			k.Keep[l][i] = id
			off += 4
		}
	}
	k.Rank = make([][]uint32, nl)
	ranks := make([]uint32, nl*nr)
	seen := make([]bool, nk)
	for l := range k.Rank {
		k.Rank[l] = ranks[int64(l)*nr : int64(l+1)*nr : int64(l+1)*nr]
		clear(seen)
		for i := range k.Rank[l] {
			id := le.Uint32(b[off:])
			if int64(id) >= nk {
				return nil, formatErr(name, off, "layer %d: ranked id %d is not below n_keep %d", k.Layers[l], id, nk)
			}
			if seen[id] {
				return nil, formatErr(name, off, "layer %d: kept id %d ranked twice", k.Layers[l], id)
			}
			seen[id] = true
			k.Rank[l][i] = id
			off += 4
		}
	}
	if off == body {
		return k, nil
	}
	if body-off < 8 || string(b[off:off+4]) != StatMagic {
		return nil, formatErr(name, off, "%d bytes after the ranking are not a %q statistics block", body-off, StatMagic)
	}
	off += 4
	nf := int64(le.Uint32(b[off:]))
	if nf == 0 || nf > (body-off-4)/4 {
		return nil, formatErr(name, off, "n_field %d does not fit in the %d bytes left", nf, body-off-4)
	}
	off += 4
	s := &Stats{Fields: make([]string, nf)}
	names := make(map[string]bool, nf)
	for f := range s.Fields {
		if body-off < 4 {
			return nil, formatErr(name, off, "statistics field %d: name length runs past the end", f)
		}
		n := int64(le.Uint32(b[off:]))
		if n == 0 || n > maxFieldName || n > body-off-4 {
			return nil, formatErr(name, off, "statistics field %d: name length %d, want 1..%d within the file", f, n, maxFieldName)
		}
		s.Fields[f] = string(b[off+4 : off+4+n])
		if names[s.Fields[f]] {
			return nil, formatErr(name, off+4, "statistics field %q appears twice", s.Fields[f])
		}
		names[s.Fields[f]] = true
		off += 4 + n
	}
	cells := nl * int64(k.NExpert)
	if left := body - off; left%8 != 0 || cells > left/8/nf || cells*nf*8 != left {
		return nil, formatErr(name, off, "statistics: %d bytes of values, want %d × %d × %d f64 = %d", body-off, nl, k.NExpert, nf, cells*nf*8)
	}
	s.Values = make([]float64, cells*nf)
	for i := range s.Values {
		v := math.Float64frombits(le.Uint64(b[off:]))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c := int64(i) / nf
			return nil, formatErr(name, off, "statistics: layer %d expert %d field %q is %v", k.Layers[c/int64(k.NExpert)], c%int64(k.NExpert), s.Fields[int64(i)%nf], v)
		}
		s.Values[i] = v
		off += 8
	}
	k.Stats = s
	return k, nil
}

// ReadKeep reads and checks a keep.strp file.
func ReadKeep(path string) (*Keep, error) {
	b, err := osutil.ReadFile(context.Background(), path, osutil.MaxMetaBytes)
	if err != nil {
		return nil, err
	}
	return ParseKeep(b, path)
}

// WriteKeep writes k to path atomically (temp file, fsync, rename).
func WriteKeep(path string, k *Keep) error {
	b, err := k.MarshalBinary()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := gguf.CreateAtomic(path)
	if err != nil {
		return err
	}
	if _, err := out.Write(b); err != nil {
		out.Abort()
		return fmt.Errorf("%s: %w", path, err)
	}
	return out.Commit()
}

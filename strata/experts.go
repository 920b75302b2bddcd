package strata

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// STRX constants (docs/FORMATS.md, "model.experts (STRX), version 2").
const (
	ExpertsMagic = "STRX"
	// ExpertsVersion is the version written. Version 1 (the same header
	// without the pack id) is still read, as before.
	ExpertsVersion = 2
	SlotAlign      = 16384
	HeaderSize     = 4096
	NumParts       = 3
	TableEntrySize = 16
	PackIDSize     = 16

	partsOffset    = 56
	partRecordSize = 32
	// PackIDOffset is where version 2 keeps the pack id.
	PackIDOffset    = partsOffset + NumParts*partRecordSize
	layersOffset    = PackIDOffset + PackIDSize
	layersOffsetV1  = PackIDOffset
	headerCRCOffset = HeaderSize - 4
	// MaxLayers is the most layers whose block indices fit in the header.
	MaxLayers = (headerCRCOffset - layersOffset) / 4
)

// layersAt is where a header of version v lists its layers.
func layersAt(v uint32) int {
	if v == 1 {
		return layersOffsetV1
	}
	return layersOffset
}

// PackID binds the files of one pack to each other: model.experts carries
// it in its header (STRX version 2) and model.gguf under strata.pack_id. It
// is a hash of the experts file's header and slot table (which holds every
// slot's CRC), so it is known when the experts are written, two packs of
// other experts differ, and the same inputs give the same bytes.
type PackID [PackIDSize]byte

// String is the id in hex, as model.gguf and manifest.json hold it.
func (id PackID) String() string { return hex.EncodeToString(id[:]) }

// ParsePackID reads an id written by String.
func ParsePackID(s string) (PackID, error) {
	var id PackID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != PackIDSize {
		return id, fmt.Errorf("pack id %q is not %d hex digits", s, 2*PackIDSize)
	}
	copy(id[:], b)
	return id, nil
}

// PartNames are the parts of a slot, in slot order.
var PartNames = [NumParts]string{"gate", "up", "down"}

// castagnoli is the CRC-32C table every strata checksum uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the checksum strata files store: CRC-32C (Castagnoli). A long
// input is checked 4 KiB at a time, each chunk read once by a plain
// streaming read (kernels.XORRead) before its CRC: the CRC instructions'
// loads alone read memory that is not in cache (a slot just read from
// disk) at 6.0 GB/s on the 2-core VM, the two passes at 9.4 (the second
// from L1); in cache the first pass costs 8% (docs/BENCHMARKS.md).
func CRC32C(p []byte) uint32 {
	if len(p) < crcTouchMin {
		return crc32.Checksum(p, castagnoli)
	}
	var c uint32
	for len(p) > 0 {
		n := min(len(p), crcChunk)
		kernels.XORRead(p[:n])
		c = crc32.Update(c, castagnoli, p[:n])
		p = p[n:]
	}
	return c
}

// crcChunk is the chunk CRC32C reads before its CRC (the best of 2, 4, 8,
// 16 and 64 KiB), crcTouchMin the length from which it does.
const (
	crcChunk    = 4 << 10
	crcTouchMin = 64 << 10
)

// CRC32CCombine is CRC32C(a || b) from crcA = CRC32C(a), crcB = CRC32C(b)
// and n = len(b): crcA times x^(8n) modulo the polynomial, plus crcB (the
// initial and final inversions cancel), in O(log n) products.
func CRC32CCombine(crcA, crcB uint32, n int64) uint32 {
	if n <= 0 {
		return crcA
	}
	p := uint32(1) << 31 // x^0, bit-reflected
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = crcMulMod(crcX2n[k], p)
		}
	}
	return crcMulMod(p, crcA) ^ crcB
}

// crcPoly is the Castagnoli polynomial, bit-reflected.
const crcPoly = 0x82f63b78

// crcMulMod is a times b modulo crcPoly, both bit-reflected (a not 0).
func crcMulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; ; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
}

// crcX2n[k] is x^(2^k) modulo crcPoly, for every k a length of up to
// 2^63-1 bytes needs.
var crcX2n = func() (t [3 + 63]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = crcMulMod(p, p)
	}
	return t
}()

// Part is one expert matrix inside a slot.
type Part struct {
	Type   quant.Type
	Ne0    uint32 // row length
	Ne1    uint32 // rows
	Bytes  uint64 // per expert
	Offset uint64 // inside the slot
}

// PartShape is what a writer needs to know of a part.
type PartShape struct {
	Type     quant.Type
	Ne0, Ne1 int64
}

// Header is the STRX header. Slot i (layer-major: i = layerIdx*NExpert +
// expert) is described by the slot table.
type Header struct {
	Version     uint32
	PackID      PackID // zero in version 1
	NExpert     uint32
	SlotAlign   uint32
	SlotBytes   uint64
	TableOffset uint64
	DataOffset  uint64
	FileBytes   uint64
	Parts       [NumParts]Part
	Layers      []uint32 // block index N of each stored MoE layer, ascending
}

// NLayer is the number of MoE layers stored.
func (h *Header) NLayer() int { return len(h.Layers) }

// NSlot is the number of slots (layers × experts).
func (h *Header) NSlot() int { return len(h.Layers) * int(h.NExpert) }

// PayloadBytes is the sum of the part sizes: the bytes of a slot that hold
// weights; the rest of the slot is zero padding.
func (h *Header) PayloadBytes() uint64 {
	var n uint64
	for _, p := range h.Parts {
		n += p.Bytes
	}
	return n
}

// LayerIndex is the position of block index block among the stored layers, or -1.
func (h *Header) LayerIndex(block uint32) int {
	for i, b := range h.Layers {
		if b == block {
			return i
		}
	}
	return -1
}

// TableEntryOffset is the file offset of slot i's table entry.
func (h *Header) TableEntryOffset(i int) int64 {
	return int64(h.TableOffset) + int64(i)*TableEntrySize
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// NewHeader lays out an experts file: parts back to back in gate, up, down
// order, slots of the payload rounded up to SlotAlign, the table right after
// the header, slots from the next aligned offset on, in table order.
func NewHeader(layers []uint32, nExpert int, parts [NumParts]PartShape) (*Header, error) {
	if len(layers) == 0 || len(layers) > MaxLayers {
		return nil, fmt.Errorf("strata: %d MoE layers, want 1..%d", len(layers), MaxLayers)
	}
	for i := 1; i < len(layers); i++ {
		if layers[i] <= layers[i-1] {
			return nil, fmt.Errorf("strata: layer block indices must ascend: %d after %d", layers[i], layers[i-1])
		}
	}
	if nExpert <= 0 || nExpert > math.MaxUint32 {
		return nil, fmt.Errorf("strata: %d experts per layer", nExpert)
	}
	h := &Header{Version: ExpertsVersion, NExpert: uint32(nExpert), SlotAlign: SlotAlign, Layers: append([]uint32(nil), layers...)}
	var off uint64
	for i, ps := range parts {
		if ps.Ne0 <= 0 || ps.Ne1 <= 0 || ps.Ne0 > math.MaxUint32 || ps.Ne1 > math.MaxUint32 {
			return nil, fmt.Errorf("strata: part %s: bad shape %d × %d", PartNames[i], ps.Ne0, ps.Ne1)
		}
		n, err := quant.RowBytes(ps.Type, ps.Ne0)
		if err != nil {
			return nil, fmt.Errorf("strata: part %s: %w", PartNames[i], err)
		}
		if n > (1<<50)/ps.Ne1 {
			return nil, fmt.Errorf("strata: part %s: %d × %d is too large", PartNames[i], ps.Ne0, ps.Ne1)
		}
		b := uint64(n * ps.Ne1)
		h.Parts[i] = Part{Type: ps.Type, Ne0: uint32(ps.Ne0), Ne1: uint32(ps.Ne1), Bytes: b, Offset: off}
		off += b
	}
	h.SlotBytes = alignUp(off, SlotAlign)
	h.TableOffset = HeaderSize
	h.DataOffset = alignUp(HeaderSize+uint64(h.NSlot())*TableEntrySize, SlotAlign)
	slots := uint64(h.NSlot())
	if slots > (1<<62)/h.SlotBytes {
		return nil, fmt.Errorf("strata: %d slots of %d bytes is too large", slots, h.SlotBytes)
	}
	h.FileBytes = h.DataOffset + slots*h.SlotBytes
	return h, nil
}

// StandardSlotOffset is where a writer following NewHeader puts slot i.
func (h *Header) StandardSlotOffset(i int) uint64 {
	return h.DataOffset + uint64(i)*h.SlotBytes
}

// MarshalBinary encodes the 4096-byte header with its CRC, in the layout
// of h.Version (2, or 1 for a file of an old pack).
func (h *Header) MarshalBinary() ([]byte, error) {
	if h.Version != 1 && h.Version != ExpertsVersion {
		return nil, fmt.Errorf("strata: cannot write STRX version %d", h.Version)
	}
	lo := layersAt(h.Version)
	if len(h.Layers) == 0 || len(h.Layers) > (headerCRCOffset-lo)/4 {
		return nil, fmt.Errorf("strata: %d MoE layers, want 1..%d", len(h.Layers), (headerCRCOffset-lo)/4)
	}
	b := make([]byte, HeaderSize)
	le := binary.LittleEndian
	copy(b, ExpertsMagic)
	le.PutUint32(b[4:], h.Version)
	le.PutUint32(b[8:], uint32(len(h.Layers)))
	le.PutUint32(b[12:], h.NExpert)
	le.PutUint32(b[16:], h.SlotAlign)
	le.PutUint32(b[20:], NumParts)
	le.PutUint64(b[24:], h.SlotBytes)
	le.PutUint64(b[32:], h.TableOffset)
	le.PutUint64(b[40:], h.DataOffset)
	le.PutUint64(b[48:], h.FileBytes)
	for i, p := range h.Parts {
		o := partsOffset + i*partRecordSize
		le.PutUint32(b[o:], uint32(p.Type))
		le.PutUint32(b[o+4:], p.Ne0)
		le.PutUint32(b[o+8:], p.Ne1)
		le.PutUint64(b[o+16:], p.Bytes)
		le.PutUint64(b[o+24:], p.Offset)
	}
	if h.Version >= 2 {
		copy(b[PackIDOffset:], h.PackID[:])
	}
	for i, l := range h.Layers {
		le.PutUint32(b[lo+4*i:], l)
	}
	le.PutUint32(b[headerCRCOffset:], CRC32C(b[:headerCRCOffset]))
	return b, nil
}

// ParseHeader decodes and checks a STRX header. b must hold at least the
// first HeaderSize bytes of a file of fileSize bytes; name is used in errors.
func ParseHeader(b []byte, fileSize int64, name string) (*Header, error) {
	le := binary.LittleEndian
	if len(b) < HeaderSize || fileSize < HeaderSize {
		return nil, formatErr(name, 0, "%d bytes is too short for a STRX header (%d)", min(int64(len(b)), fileSize), HeaderSize)
	}
	if string(b[:4]) != ExpertsMagic {
		return nil, formatErr(name, 0, "not a strata experts file: magic %q, want %q", b[:4], ExpertsMagic)
	}
	h := &Header{Version: le.Uint32(b[4:])}
	if h.Version != 1 && h.Version != ExpertsVersion {
		return nil, formatErr(name, 4, "STRX version %d, this reader knows versions 1 and %d", h.Version, ExpertsVersion)
	}
	lo := layersAt(h.Version)
	nLayer := le.Uint32(b[8:])
	if max := uint32(headerCRCOffset-lo) / 4; nLayer == 0 || nLayer > max {
		return nil, formatErr(name, 8, "n_layer %d, want 1..%d", nLayer, max)
	}
	h.NExpert = le.Uint32(b[12:])
	if h.NExpert == 0 {
		return nil, formatErr(name, 12, "n_expert is 0")
	}
	h.SlotAlign = le.Uint32(b[16:])
	if h.SlotAlign != SlotAlign {
		return nil, formatErr(name, 16, "slot_align %d, want %d", h.SlotAlign, SlotAlign)
	}
	if np := le.Uint32(b[20:]); np != NumParts {
		return nil, formatErr(name, 20, "n_part %d, want %d", np, NumParts)
	}
	h.SlotBytes = le.Uint64(b[24:])
	h.TableOffset = le.Uint64(b[32:])
	h.DataOffset = le.Uint64(b[40:])
	h.FileBytes = le.Uint64(b[48:])
	var want uint64
	for i := range h.Parts {
		o := partsOffset + i*partRecordSize
		p := Part{Type: quant.Type(le.Uint32(b[o:])), Ne0: le.Uint32(b[o+4:]), Ne1: le.Uint32(b[o+8:]), Bytes: le.Uint64(b[o+16:]), Offset: le.Uint64(b[o+24:])}
		ti, ok := quant.Info(p.Type)
		if !ok {
			return nil, formatErr(name, int64(o), "part %s: unknown ggml type %d", PartNames[i], uint32(p.Type))
		}
		if p.Ne0 == 0 || p.Ne0%uint32(ti.BlockElements) != 0 {
			return nil, formatErr(name, int64(o+4), "part %s: ne0 %d is not a positive multiple of %s's block of %d", PartNames[i], p.Ne0, p.Type, ti.BlockElements)
		}
		if p.Ne1 == 0 {
			return nil, formatErr(name, int64(o+8), "part %s: ne1 is 0", PartNames[i])
		}
		if z := le.Uint32(b[o+12:]); z != 0 {
			return nil, formatErr(name, int64(o+12), "part %s: reserved field is %d, want 0", PartNames[i], z)
		}
		rb, _ := quant.RowBytes(p.Type, int64(p.Ne0))
		if size := uint64(rb) * uint64(p.Ne1); p.Bytes != size {
			return nil, formatErr(name, int64(o+16), "part %s: %d bytes per expert, %d × %d %s takes %d", PartNames[i], p.Bytes, p.Ne0, p.Ne1, p.Type, size)
		}
		if p.Offset != want {
			return nil, formatErr(name, int64(o+24), "part %s: offset %d inside the slot, want %d (parts are back to back)", PartNames[i], p.Offset, want)
		}
		want += p.Bytes
		h.Parts[i] = p
	}
	if h.SlotBytes == 0 || h.SlotBytes%SlotAlign != 0 || h.SlotBytes < want {
		return nil, formatErr(name, 24, "slot_bytes %d is not a positive multiple of %d holding the %d-byte payload", h.SlotBytes, SlotAlign, want)
	}
	if h.FileBytes != uint64(fileSize) {
		return nil, formatErr(name, 48, "file_bytes %d, but the file has %d bytes", h.FileBytes, fileSize)
	}
	slots := uint64(nLayer) * uint64(h.NExpert)
	if h.TableOffset < HeaderSize || h.TableOffset > h.FileBytes || slots > (h.FileBytes-h.TableOffset)/TableEntrySize {
		return nil, formatErr(name, 32, "table_offset %d: a table of %d entries does not fit between the header and the end of the file (%d bytes)", h.TableOffset, slots, h.FileBytes)
	}
	tableEnd := h.TableOffset + slots*TableEntrySize
	if h.DataOffset%SlotAlign != 0 || h.DataOffset < tableEnd {
		return nil, formatErr(name, 40, "data_offset %d is not a multiple of %d after the table's end %d", h.DataOffset, SlotAlign, tableEnd)
	}
	if h.DataOffset > h.FileBytes || slots > (h.FileBytes-h.DataOffset)/h.SlotBytes {
		return nil, formatErr(name, 40, "%d slots of %d bytes from byte %d do not fit in the file's %d bytes", slots, h.SlotBytes, h.DataOffset, h.FileBytes)
	}
	if h.Version >= 2 {
		copy(h.PackID[:], b[PackIDOffset:])
	}
	h.Layers = make([]uint32, nLayer)
	for i := range h.Layers {
		o := lo + 4*i
		h.Layers[i] = le.Uint32(b[o:])
		if i > 0 && h.Layers[i] <= h.Layers[i-1] {
			return nil, formatErr(name, int64(o), "layer block index %d after %d: the list must ascend", h.Layers[i], h.Layers[i-1])
		}
	}
	for o := lo + 4*int(nLayer); o < headerCRCOffset; o++ {
		if b[o] != 0 {
			return nil, formatErr(name, int64(o), "header padding byte is %#02x, want 0", b[o])
		}
	}
	if got, stored := CRC32C(b[:headerCRCOffset]), le.Uint32(b[headerCRCOffset:]); got != stored {
		e := formatErr(name, headerCRCOffset, "header CRC-32C is %#08x, bytes [0, %d) give %#08x", stored, headerCRCOffset, got)
		e.err = ErrChecksum
		return nil, e
	}
	return h, nil
}

// SlotEntry is one row of the slot table.
type SlotEntry struct {
	Offset uint64
	CRC    uint32 // CRC-32C of the payload (not the padding)
	Flags  uint32
}

// Experts is an open experts file: header and slot table parsed and checked;
// slots are read on demand.
type Experts struct {
	Path string
	Header
	Table  []SlotEntry
	Size   int64
	r      io.ReaderAt
	closer io.Closer
}

// NewExpertsReader parses the header and slot table of an experts file of
// size bytes read through r.
func NewExpertsReader(r io.ReaderAt, size int64, name string) (*Experts, error) {
	hb := make([]byte, HeaderSize)
	if size >= HeaderSize {
		if _, err := r.ReadAt(hb, 0); err != nil {
			return nil, fmt.Errorf("%s: reading the header: %w", name, err)
		}
	}
	h, err := ParseHeader(hb, size, name)
	if err != nil {
		return nil, err
	}
	x := &Experts{Path: name, Header: *h, Size: size, r: r}
	n := h.NSlot()
	tb := make([]byte, h.DataOffset-h.TableOffset)
	if _, err := r.ReadAt(tb, int64(h.TableOffset)); err != nil {
		return nil, fmt.Errorf("%s: reading the slot table at byte %d: %w", name, h.TableOffset, err)
	}
	x.Table = make([]SlotEntry, n)
	le := binary.LittleEndian
	prevEnd := h.DataOffset
	for i := range x.Table {
		o := i * TableEntrySize
		e := SlotEntry{Offset: le.Uint64(tb[o:]), CRC: le.Uint32(tb[o+8:]), Flags: le.Uint32(tb[o+12:])}
		at := int64(h.TableOffset) + int64(o)
		layer, expert := int(h.Layers[i/int(h.NExpert)]), i%int(h.NExpert)
		switch {
		case e.Offset%SlotAlign != 0:
			return nil, x.slotErr(at, layer, expert, "slot offset %d is not a multiple of %d", e.Offset, SlotAlign)
		case e.Offset != prevEnd:
			// Slots tile the data region in table order, so that every byte
			// of the file belongs to exactly one checked region.
			return nil, x.slotErr(at, layer, expert, "slot offset %d, want %d (slots follow each other from data_offset in table order)", e.Offset, prevEnd)
		case e.Flags != 0:
			return nil, x.slotErr(at+12, layer, expert, "flags %#x, want 0", e.Flags)
		}
		prevEnd = e.Offset + h.SlotBytes
		x.Table[i] = e
	}
	if prevEnd != h.FileBytes {
		return nil, formatErr(name, 48, "the slots end at byte %d, file_bytes is %d", prevEnd, h.FileBytes)
	}
	for o := n * TableEntrySize; o < len(tb); o++ {
		if tb[o] != 0 {
			return nil, formatErr(name, int64(h.TableOffset)+int64(o), "padding byte after the slot table is %#02x, want 0", tb[o])
		}
	}
	return x, nil
}

func (x *Experts) slotErr(at int64, layer, expert int, format string, args ...any) *FormatError {
	e := formatErr(x.Path, at, format, args...)
	e.Layer, e.Expert = layer, expert
	return e
}

// OpenExperts opens and checks an experts file; slots are read with pread.
func OpenExperts(path string) (*Experts, error) {
	fh, size, err := osutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	x, err := NewExpertsReader(fh, size, path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	x.closer = fh
	return x, nil
}

// Close releases the file.
func (x *Experts) Close() error {
	if x.closer == nil {
		return nil
	}
	err := x.closer.Close()
	x.closer = nil
	return err
}

// ReaderAt gives raw access to the file.
func (x *Experts) ReaderAt() io.ReaderAt { return x.r }

// ReadSlot reads slot (layerIdx, expert) — layerIdx is the position in
// Layers, not the block index — into buf (grown to SlotBytes when short),
// checks it with CheckSlot and returns the payload.
func (x *Experts) ReadSlot(layerIdx, expert int, buf []byte) ([]byte, error) {
	if layerIdx < 0 || layerIdx >= len(x.Layers) || expert < 0 || expert >= int(x.NExpert) {
		return nil, fmt.Errorf("%s: no slot for layer index %d expert %d", x.Path, layerIdx, expert)
	}
	i := layerIdx*int(x.NExpert) + expert
	off := x.Table[i].Offset
	if uint64(cap(buf)) < x.SlotBytes {
		buf = make([]byte, x.SlotBytes)
	}
	buf = buf[:x.SlotBytes]
	if _, err := x.r.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("%s: reading slot of layer %d expert %d at byte %d: %w", x.Path, x.Layers[layerIdx], expert, off, err)
	}
	sc, err := x.CheckSlot(i, buf)
	return sc.Payload, err
}

// SlotCheck is what CheckSlot found in the bytes of one slot.
type SlotCheck struct {
	Payload []byte // the part bytes, back to back
	CRC     uint32 // CRC-32C of the payload as read
	CRCOK   bool   // CRC is the one the slot table records
	Padding int64  // file offset of the first nonzero padding byte, or -1
}

// CheckSlot is the one check of a slot's bytes, used by every reader: raw
// holds the SlotBytes bytes of slot i (layer-major: layer index ×
// NExpert + expert) read from its table offset. It checks the payload's
// CRC-32C against the slot table and that the padding is zero. The error is
// the first problem as a *FormatError naming the slot (a CRC mismatch wraps
// ErrChecksum), nil when the slot is sound; the SlotCheck says what was
// found either way.
func (x *Experts) CheckSlot(i int, raw []byte) (SlotCheck, error) {
	if i < 0 || i >= len(x.Table) || uint64(len(raw)) != x.SlotBytes {
		return SlotCheck{Padding: -1}, fmt.Errorf("%s: slot %d of %d bytes: no such slot of %d bytes", x.Path, i, len(raw), x.SlotBytes)
	}
	return x.CheckPieces(i, raw, []PieceCheck{x.CheckPiece(i, raw, 0)})
}

// PieceCheck is what CheckPiece found in one piece of a slot's bytes.
type PieceCheck struct {
	Off, Len int64  // the piece: bytes [Off, Off+Len) of the slot
	CRC      uint32 // CRC-32C of the piece's payload bytes (those before PayloadBytes)
	Padding  int64  // slot offset of the piece's first nonzero padding byte, or -1
}

// CheckPiece checks piece, the bytes of slot i from slot offset off, as
// soon as they are read: the CRC-32C of its payload bytes and its padding
// bytes. CheckPieces completes the slot's check from its pieces' checks,
// so a slot read in pieces (by several readers at once) is checked while
// the rest of it is still being read.
func (x *Experts) CheckPiece(i int, piece []byte, off int64) PieceCheck {
	pay := int64(x.PayloadBytes())
	n := int64(len(piece))
	pc := PieceCheck{Off: off, Len: n, Padding: -1}
	p := min(max(pay-off, 0), n) // the piece's payload bytes
	pc.CRC = CRC32C(piece[:p])
	for j := p; j < n; j++ {
		if piece[j] != 0 {
			pc.Padding = off + j
			break
		}
	}
	return pc
}

// CheckPieces is CheckSlot of slot i, whose bytes raw are in, from the
// checks of its pieces (CheckPiece), which cover the slot in order. A set
// of pieces that does not cover the slot is an error.
func (x *Experts) CheckPieces(i int, raw []byte, pieces []PieceCheck) (SlotCheck, error) {
	if i < 0 || i >= len(x.Table) || uint64(len(raw)) != x.SlotBytes {
		return SlotCheck{Padding: -1}, fmt.Errorf("%s: slot %d of %d bytes: no such slot of %d bytes", x.Path, i, len(raw), x.SlotBytes)
	}
	e := x.Table[i]
	layer, expert := int(x.Layers[i/int(x.NExpert)]), i%int(x.NExpert)
	pay := x.PayloadBytes()
	sc := SlotCheck{Payload: raw[:pay], Padding: -1}
	var at int64
	for _, pc := range pieces {
		if pc.Off != at {
			return sc, fmt.Errorf("%s: slot %d: a piece check at slot offset %d, want %d", x.Path, i, pc.Off, at)
		}
		sc.CRC = CRC32CCombine(sc.CRC, pc.CRC, min(max(int64(pay)-pc.Off, 0), pc.Len))
		if sc.Padding < 0 && pc.Padding >= 0 {
			sc.Padding = int64(e.Offset) + pc.Padding
		}
		at += pc.Len
	}
	if uint64(at) != x.SlotBytes {
		return sc, fmt.Errorf("%s: slot %d: piece checks cover %d of its %d bytes", x.Path, i, at, x.SlotBytes)
	}
	sc.CRCOK = sc.CRC == e.CRC
	if !sc.CRCOK {
		fe := x.slotErr(int64(e.Offset), layer, expert, "slot payload [%d, %d) has CRC-32C %#08x, its table entry (byte %d) says %#08x", e.Offset, e.Offset+pay, sc.CRC, x.TableEntryOffset(i)+8, e.CRC)
		fe.err = ErrChecksum
		return sc, fe
	}
	if sc.Padding >= 0 {
		return sc, x.slotErr(sc.Padding, layer, expert, "slot padding byte is %#02x, want 0", raw[sc.Padding-int64(e.Offset)])
	}
	return sc, nil
}

// PartBytes is part p of a slot's payload.
func (h *Header) PartBytes(payload []byte, p int) []byte {
	pt := h.Parts[p]
	return payload[pt.Offset : pt.Offset+pt.Bytes]
}

// ExpertsWriter writes an experts file through an io.WriterAt. Slots may be
// written from several goroutines in any order; the bytes depend only on
// their contents. Finish writes the table once every slot is in.
type ExpertsWriter struct {
	h     *Header
	w     io.WriterAt
	name  string
	mu    sync.Mutex
	table []SlotEntry
	done  []bool
	left  int
	pool  sync.Pool
}

// NewExpertsWriter starts an experts file with header h on w. h must come
// from NewHeader (the standard layout); Finish writes it, with the pack id.
func NewExpertsWriter(w io.WriterAt, h *Header, name string) (*ExpertsWriter, error) {
	if _, err := h.MarshalBinary(); err != nil {
		return nil, err
	}
	n := h.NSlot()
	xw := &ExpertsWriter{h: h, w: w, name: name, table: make([]SlotEntry, n), done: make([]bool, n), left: n}
	xw.pool.New = func() any { b := make([]byte, h.SlotBytes); return &b }
	return xw, nil
}

// Header is the header being written.
func (xw *ExpertsWriter) Header() *Header { return xw.h }

// WriteSlot writes the slot of (layerIdx, expert) from its three parts,
// which must have the header's part sizes.
func (xw *ExpertsWriter) WriteSlot(layerIdx, expert int, parts [NumParts][]byte) error {
	h := xw.h
	if layerIdx < 0 || layerIdx >= len(h.Layers) || expert < 0 || expert >= int(h.NExpert) {
		return fmt.Errorf("%s: no slot for layer index %d expert %d", xw.name, layerIdx, expert)
	}
	bp := xw.pool.Get().(*[]byte)
	defer xw.pool.Put(bp)
	buf := *bp
	for p, b := range parts {
		pt := h.Parts[p]
		if uint64(len(b)) != pt.Bytes {
			return fmt.Errorf("%s: layer %d expert %d part %s: %d bytes, want %d", xw.name, h.Layers[layerIdx], expert, PartNames[p], len(b), pt.Bytes)
		}
		copy(buf[pt.Offset:], b)
	}
	pay := h.PayloadBytes()
	clear(buf[pay:])
	i := layerIdx*int(h.NExpert) + expert
	off := h.StandardSlotOffset(i)
	crc := CRC32C(buf[:pay])
	xw.mu.Lock()
	if xw.done[i] {
		xw.mu.Unlock()
		return fmt.Errorf("%s: slot of layer %d expert %d written twice", xw.name, h.Layers[layerIdx], expert)
	}
	xw.done[i] = true
	xw.left--
	xw.table[i] = SlotEntry{Offset: off, CRC: crc}
	xw.mu.Unlock()
	if _, err := xw.w.WriteAt(buf, int64(off)); err != nil {
		return fmt.Errorf("%s: writing slot of layer %d expert %d at byte %d: %w", xw.name, h.Layers[layerIdx], expert, off, err)
	}
	return nil
}

// Finish writes the slot table, the zero bytes up to the first slot and the
// header, whose pack id (version 2) is derived from the header and the
// table. Every slot must have been written.
func (xw *ExpertsWriter) Finish() error {
	xw.mu.Lock()
	defer xw.mu.Unlock()
	if xw.left != 0 {
		for i, d := range xw.done {
			if !d {
				return fmt.Errorf("%s: slot of layer %d expert %d not written (%d missing)", xw.name, xw.h.Layers[i/int(xw.h.NExpert)], i%int(xw.h.NExpert), xw.left)
			}
		}
	}
	tb := make([]byte, xw.h.DataOffset-xw.h.TableOffset)
	le := binary.LittleEndian
	for i, e := range xw.table {
		le.PutUint64(tb[i*TableEntrySize:], e.Offset)
		le.PutUint32(tb[i*TableEntrySize+8:], e.CRC)
		le.PutUint32(tb[i*TableEntrySize+12:], e.Flags)
	}
	if _, err := xw.w.WriteAt(tb, int64(xw.h.TableOffset)); err != nil {
		return fmt.Errorf("%s: writing the slot table: %w", xw.name, err)
	}
	if xw.h.Version >= 2 {
		xw.h.PackID = PackID{}
		hb, err := xw.h.MarshalBinary()
		if err != nil {
			return err
		}
		sum := sha256.New()
		sum.Write(hb)
		sum.Write(tb)
		copy(xw.h.PackID[:], sum.Sum(nil))
	}
	hb, err := xw.h.MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := xw.w.WriteAt(hb, 0); err != nil {
		return fmt.Errorf("%s: writing the header: %w", xw.name, err)
	}
	return nil
}

// Table is the slot table written so far.
func (xw *ExpertsWriter) Table() []SlotEntry {
	xw.mu.Lock()
	defer xw.mu.Unlock()
	return append([]SlotEntry(nil), xw.table...)
}

// ExpertsOut is an experts file being written to a temporary file that
// appears under its name only on Commit.
type ExpertsOut struct {
	*ExpertsWriter
	out *gguf.AtomicFile
}

// CreateExperts starts an experts file at path with header h.
func CreateExperts(path string, h *Header) (*ExpertsOut, error) {
	out, err := gguf.CreateAtomic(path)
	if err != nil {
		return nil, err
	}
	if err := out.Reserve(int64(h.FileBytes)); err != nil {
		out.Abort()
		return nil, err
	}
	xw, err := NewExpertsWriter(out.File, h, path)
	if err != nil {
		out.Abort()
		return nil, err
	}
	return &ExpertsOut{ExpertsWriter: xw, out: out}, nil
}

// Commit writes the table, checks the size, fsyncs and renames into place.
func (f *ExpertsOut) Commit() error {
	if err := f.Finish(); err != nil {
		f.out.Abort()
		return err
	}
	st, err := f.out.Stat()
	if err != nil {
		f.out.Abort()
		return err
	}
	if uint64(st.Size()) != f.h.FileBytes {
		f.out.Abort()
		return fmt.Errorf("%s: wrote %d bytes, the header says %d", f.name, st.Size(), f.h.FileBytes)
	}
	return f.out.Commit()
}

// Abort discards the output.
func (f *ExpertsOut) Abort() { f.out.Abort() }

package strata

import (
	"fmt"
	"strings"

	"github.com/stratactl/stratactl/gguf"
)

// The files of a pack folder (docs/FORMATS.md). Every program that reads or
// writes a pack names them through these constants.
const (
	ModelFile    = "model.gguf"
	ExpertsFile  = "model.experts"
	KeepFile     = "keep.strp"
	ManifestFile = "manifest.json"
)

// PackFiles are the files of a complete pack, in the order verify checks them.
var PackFiles = []string{ModelFile, ExpertsFile, KeepFile, ManifestFile}

// Keys a pack adds to model.gguf (docs/FORMATS.md, "model.gguf additions").
const (
	KeyFormatVersion = "strata.format_version"
	KeyExpertsFile   = "strata.experts.file"
	KeyExpertsBytes  = "strata.experts.bytes"
	KeySlotBytes     = "strata.experts.slot_bytes"
	// KeySourceNExpert is the experts per layer before pruning; a pruned
	// GGUF (stratactl prune) carries it too.
	KeySourceNExpert = "strata.source.n_expert"
	// KeySourceKeep is a pruned GGUF's record of the source experts it
	// holds: a u32 array, layer-major (n_layer x n_keep), each layer's
	// kept source expert ids ascending (SourceKeep reads it).
	KeySourceKeep = "strata.source.keep"
	// KeyPackID is the pack id (PackID.String) that model.experts carries
	// in its header: the two files belong to one pack.
	KeyPackID = "strata.pack_id"
)

// FormatVersion is the pack format written: strata.format_version in
// model.gguf and format_version in manifest.json. Version 2 binds the files
// with a pack id; a version 1 pack (no pack id, STRX version 1) is read as
// before.
const FormatVersion = 2

// routerCopyTensor is the router copy's name inside its block.
const routerCopyTensor = "ffn_gate_inp_q8.weight"

// RouterCopyName is the name of block b's Q8_0 router copy in model.gguf.
func RouterCopyName(block int) string { return fmt.Sprintf("blk.%d.%s", block, routerCopyTensor) }

// IsRouterCopy reports whether rest (a tensor name after "blk.N.") is a
// router copy.
func IsRouterCopy(rest string) bool { return rest == routerCopyTensor }

// ExpertIndexed is the per-expert rule of a pack: whether rest (a tensor's
// name after "blk.N.") holds one slice per expert along its last dimension.
// It is gguf.ExpertIndexed (expert tensors, routers, expert score biases)
// plus the pack's own router copy. Pruning keeps the kept experts' slices of
// every such tensor of a MoE layer, in keep-map order.
func ExpertIndexed(rest string) bool {
	if gguf.ExpertIndexed(rest) {
		return true
	}
	base, _, _ := strings.Cut(routerCopyTensor, ".")
	b, _, _ := strings.Cut(rest, ".")
	return b == base
}

package strata

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
)

// ManifestFormat is manifest.json's "format".
const ManifestFormat = "strata-pack"

// Roles of the files a manifest lists.
const (
	RoleModel   = "model"
	RoleExperts = "experts"
	RoleKeep    = "keep"
	RoleImatrix = "imatrix"
)

// FileRecord is one input or output file in the manifest.
type FileRecord struct {
	Role   string `json:"role"`
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// PartError is the conversion error of one expert tensor of one layer,
// over the kept experts.
type PartError struct {
	Tensor string  `json:"tensor"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Action string  `json:"action"` // "quantized" or "copied"
	RelMSE float64 `json:"rel_mse"`
	// CalibOutputErr is ‖(W−Ŵ)X‖/‖WX‖ on held-back calibration tokens, for
	// a part quantized against calibration inputs.
	CalibOutputErr *float64 `json:"calib_output_err,omitempty"`
}

// Calibration records the calibration input of a calibrated quantization
// (quantize --json, a pack's manifest parameters).
type Calibration struct {
	Source      string  `json:"source"`           // the token file, or "self" for generated windows only
	SHA256      string  `json:"sha256,omitempty"` // of the token file's bytes
	Ctx         int     `json:"ctx"`
	Windows     int     `json:"windows"`
	Tokens      int64   `json:"tokens"`
	HeldTokens  int64   `json:"held_tokens"` // held back from the Hessians to measure the output error
	SelfWindows int     `json:"self_windows,omitempty"`
	SelfSeed    uint64  `json:"self_seed,omitempty"`
	SelfSHA256  string  `json:"self_sha256,omitempty"` // of the generated ids (int32 LE)
	Damp        float64 `json:"damp"`
	RefineDamp  float64 `json:"refine_damp"`
	Refine      int     `json:"refine"`
	Candidates  int     `json:"candidates"`
	SwiGLU      int     `json:"swiglu_refine"` // passes of gate/up against their SwiGLU product's error
	SwiGLUDamp  float64 `json:"swiglu_damp"`
	Expert      int     `json:"expert_refine"` // rounds of gate/up against the expert's whole output error
	// ExpertPasses is those rounds' coordinate passes per row, ExpertGate
	// whether gate's rows are refined too (up's always are), WarmDown whether
	// down's second quantization starts from its first one's codes.
	ExpertPasses int  `json:"expert_passes"`
	ExpertGate   bool `json:"expert_gate"`
	WarmDown     bool `json:"warm_down"`
	// ExpertTokens is the quantizer tokens per n_embd column an expert
	// needed for those rounds (0: every expert ran them; manifests before
	// it ran them on every expert), ExpertSkipped how many experts had
	// fewer and skipped them.
	ExpertTokens  float64 `json:"expert_tokens"`
	ExpertSkipped int     `json:"expert_refine_skipped,omitempty"`
	// GridTokens is the quantizer tokens per column a matrix needed for
	// the Candidates grid scales (fewer: the plain search's pick alone; 0:
	// the grid always, as before it).
	GridTokens float64 `json:"grid_tokens"`
	// PlainTokens is the quantizer tokens per n_embd column an expert
	// needed for the calibrated quantizer (fewer: the plain search, listed
	// in Fallbacks; 0: every expert with tokens, as before it).
	PlainTokens float64  `json:"plain_tokens"`
	Fallbacks   []string `json:"fallbacks,omitempty"`
	Seconds     float64  `json:"collect_seconds"`
}

// LayerError is one MoE layer's conversion error.
type LayerError struct {
	Block  int         `json:"block"`
	Parts  []PartError `json:"tensors"`
	RelMSE float64     `json:"rel_mse"`
}

// Manifest is manifest.json (docs/FORMATS.md, "manifest.json").
type Manifest struct {
	Format        string       `json:"format"`
	FormatVersion int          `json:"format_version"`
	PackID        string       `json:"pack_id,omitempty"` // version 2 on
	Tool          string       `json:"tool"`
	ToolVersion   string       `json:"tool_version"`
	CommandLine   []string     `json:"command_line"`
	Parameters    PackParams   `json:"parameters"`
	Model         PackShape    `json:"model"`
	Inputs        []FileRecord `json:"inputs"`
	Outputs       []FileRecord `json:"outputs"`
	Layers        []LayerError `json:"errors"`
	RelMSE        float64      `json:"rel_mse"`
	MTP           *MTPRecord   `json:"mtp,omitempty"` // the source's multi-token-prediction blocks, if any
}

// MTPRecord says what prune or pack did with the source's
// multi-token-prediction blocks (gguf.File.MTPBlocks), which inference never
// runs: dropped (the default; {arch}.nextn_predict_layers becomes 0 and
// {arch}.block_count loses them) or carried unchanged, every expert kept, in
// the output's GGUF. Either way they are in no keep map or profile.
type MTPRecord struct {
	Blocks  []int `json:"blocks"`
	Carried bool  `json:"carried"`
}

// String says it in words, for the commands' reports.
func (r *MTPRecord) String() string {
	if r.Carried {
		return fmt.Sprintf("multi-token-prediction block(s) %v carried unchanged, every expert kept", r.Blocks)
	}
	return fmt.Sprintf("multi-token-prediction block(s) %v dropped (nextn_predict_layers set to 0; --carry-mtp keeps them)", r.Blocks)
}

// PackParams are every setting that decides the output bytes.
type PackParams struct {
	Type         string `json:"type"`
	Q2Mode       string `json:"q2_mode,omitempty"`
	Q2Candidates int    `json:"q2_candidates,omitempty"`
	Imatrix      string `json:"imatrix,omitempty"`
	Keep         string `json:"keep,omitempty"`
	// SourceKeep is set when the source was a pruned GGUF that records the
	// original experts it holds (KeySourceKeep): keep.strp is then that
	// record composed with Keep, over the original model's experts.
	SourceKeep bool `json:"source_keep,omitempty"`
	Jobs       int  `json:"jobs"`
	// Calibration is set when the experts were quantized against
	// calibration inputs (then their bytes depend on that input too).
	Calibration *Calibration `json:"calibration,omitempty"`
}

// PackShape describes the model packed.
type PackShape struct {
	Arch         string `json:"arch"`
	MoELayers    int    `json:"moe_layers"`
	SourceExpert int    `json:"source_n_expert"`
	Expert       int    `json:"n_expert"`
	ExpertsUsed  int    `json:"n_expert_used"`
	Embd         int64  `json:"n_embd"`
	ExpertFF     int64  `json:"n_ff_exp"`
	SlotBytes    uint64 `json:"slot_bytes"`
	PayloadBytes uint64 `json:"payload_bytes"`
}

// ParseManifest decodes manifest.json held in b, refusing unknown fields and
// another format; name is used in errors, which carry the byte offset.
func ParseManifest(b []byte, name string) (*Manifest, error) {
	var man Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&man); err != nil {
		return nil, formatErr(name, dec.InputOffset(), "not a pack manifest: %v", err)
	}
	if man.Format != ManifestFormat || man.FormatVersion < 1 || man.FormatVersion > FormatVersion {
		return &man, formatErr(name, -1, "format %q version %d, want %q version 1..%d", man.Format, man.FormatVersion, ManifestFormat, FormatVersion)
	}
	return &man, nil
}

// WriteManifest writes man to path atomically.
func WriteManifest(path string, man *Manifest) error {
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	out, err := gguf.CreateAtomic(path)
	if err != nil {
		return err
	}
	if _, err := out.Write(append(b, '\n')); err != nil {
		out.Abort()
		return fmt.Errorf("%s: %w", path, err)
	}
	return out.Commit()
}

// HashFile reads a file sequentially and returns its size and sha256 (hex),
// as a manifest records them; it stops when ctx is done.
func HashFile(ctx context.Context, path string) (int64, string, error) {
	fh, _, err := osutil.OpenRegular(path)
	if err != nil {
		return 0, "", err
	}
	defer fh.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, "", context.Cause(ctx)
		}
		k, err := fh.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, "", fmt.Errorf("%s: %w", path, err)
		}
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

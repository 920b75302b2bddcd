package convert

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// maxFindings bounds the failures kept in a report: a file damaged
// everywhere should not make verify use memory in proportion to it.
const maxFindings = 1000

// VerifyConfig is what `stratactl verify` does.
type VerifyConfig struct {
	Path     string // a pack folder or a GGUF file
	Source   string // the source GGUF, or ""
	Imatrix  string // the importance matrix the checked file was made with, when not recorded or moved
	KeepMap  string // for a pruned GGUF: the keep map it was pruned with, to compare it with Source
	Jobs     int
	Progress ProgressFunc
}

// Finding is one failed check, located as precisely as the data allows.
type Finding struct {
	Check  string `json:"check"`
	File   string `json:"file,omitempty"`
	Offset int64  `json:"offset"` // -1 when not about one byte
	Layer  int    `json:"layer"`  // block index, -1 when not about one layer
	Expert int    `json:"expert"` // kept expert id, -1 when not about one expert
	Part   string `json:"part,omitempty"`
	Msg    string `json:"message"`
}

func (f Finding) String() string {
	return f.Check + ": " + strata.Location(f.File, f.Offset, f.Layer, f.Expert, f.Part) + f.Msg
}

// Check is one passed or failed group of checks.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// TensorCompare is a tensor of a checked GGUF against its source.
type TensorCompare struct {
	Name      string  `json:"name"`
	Type      string  `json:"type"`
	Source    string  `json:"source_type"`
	RelMSE    float64 `json:"rel_mse"`
	Requant   float64 `json:"requant_rel_mse"` // what the quantizer achieves on the source
	Identical bool    `json:"identical"`       // bytes equal the re-quantized (or copied) source
}

// VerifyReport is verify's result.
type VerifyReport struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"` // "pack" or "gguf"
	Source string `json:"source,omitempty"`
	// SourceMadeFrom is set when Source is the original model of the
	// pruned GGUF a pack was made from (not the file the manifest
	// records): that file, whose experts were compared through the
	// original ids of keep.strp.
	SourceMadeFrom string              `json:"source_made_from,omitempty"`
	OK             bool                `json:"ok"`
	Checks         []Check             `json:"checks"`
	Failures       []Finding           `json:"failures"`
	Omitted        int                 `json:"failures_omitted"`
	Layers         []strata.LayerError `json:"layers,omitempty"`
	Tensors        []TensorCompare     `json:"tensors,omitempty"`
	RelMSE         float64             `json:"rel_mse,omitempty"`
	Slots          int                 `json:"slots_checked,omitempty"`
	SlotBytes      uint64              `json:"slot_bytes,omitempty"`
}

func (r *VerifyReport) fail(f Finding) {
	if len(r.Failures) >= maxFindings {
		r.Omitted++
		return
	}
	r.Failures = append(r.Failures, f)
}

func (r *VerifyReport) failf(check, file string, off int64, format string, args ...any) {
	r.fail(Finding{Check: check, File: file, Offset: off, Layer: -1, Expert: -1, Msg: fmt.Sprintf(format, args...)})
}

// check records a group's outcome: failed when it added findings.
func (r *VerifyReport) check(name string, before int, detail string) {
	r.Checks = append(r.Checks, Check{Name: name, OK: len(r.Failures)+r.Omitted == before, Detail: detail})
}

func (r *VerifyReport) nfail() int { return len(r.Failures) + r.Omitted }

// findingOf turns an error into a finding, keeping the location a strata
// or gguf error carries.
func findingOf(check string, err error) Finding {
	f := Finding{Check: check, Offset: -1, Layer: -1, Expert: -1, Msg: err.Error()}
	var se *strata.FormatError
	var ge *gguf.FormatError
	switch {
	case errors.As(err, &se):
		f.File, f.Offset, f.Layer, f.Expert, f.Part, f.Msg = se.File, se.Offset, se.Layer, se.Expert, se.Part, se.Msg
	case errors.As(err, &ge):
		f.File, f.Offset, f.Msg = ge.File, ge.Offset, ge.Msg
		switch {
		case ge.Tensor != "":
			f.Msg = fmt.Sprintf("tensor %q: %s", ge.Tensor, ge.Msg)
		case ge.Key != "":
			f.Msg = fmt.Sprintf("key %q: %s", ge.Key, ge.Msg)
		}
	}
	return f
}

// Verify checks a pack folder or a GGUF file, and with cfg.Source compares
// it with the model it was made from. Problems in the data are findings in
// the report (OK false); the error is for failures to run at all.
func Verify(ctx context.Context, cfg VerifyConfig) (*VerifyReport, error) {
	st, err := os.Stat(cfg.Path)
	if err != nil {
		return nil, err
	}
	r := &VerifyReport{Path: cfg.Path, Source: cfg.Source}
	if st.IsDir() {
		r.Kind = "pack"
		err = verifyPack(ctx, cfg, r)
	} else {
		r.Kind = "gguf"
		err = verifyGGUF(ctx, cfg, r)
	}
	if err != nil {
		return nil, interrupted(err, "verify")
	}
	r.OK = r.nfail() == 0
	return r, nil
}

// worseBlock is the acceptance rule for converted data that is not exactly
// the re-quantized source: block by block, its squared error against the
// source x may exceed that of the re-quantized data (decoded as ye) by 1% at
// most. It returns the first block that is worse, or -1. A damaged byte
// almost always makes its block worse than the quantizer's choice, while a
// quantizer that changed since the file was written passes.
func worseBlock(t quant.Type, x, yg, ye []float32) int {
	ti, _ := quant.Info(t)
	be := ti.BlockElements
	for b := 0; b+be <= len(x); b += be {
		var eg, ee, en float64
		for i := b; i < b+be; i++ {
			dg := float64(x[i]) - float64(yg[i])
			de := float64(x[i]) - float64(ye[i])
			eg += dg * dg
			ee += de * de
			en += float64(x[i]) * float64(x[i])
		}
		if !(eg <= ee*1.01+1e-9*en+1e-30) {
			return b / be
		}
	}
	return -1
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

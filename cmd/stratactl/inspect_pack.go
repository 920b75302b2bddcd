package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/strata"
)

// inspectPath is the file inspect opens for path: a pack folder stands for
// its model.gguf.
func inspectPath(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, strata.ModelFile)); err == nil {
			return filepath.Join(path, strata.ModelFile)
		}
	}
	return path
}

// packSummary describes the pack a model.gguf belongs to (inspect --json's
// "pack"): its experts live in model.experts, not in the GGUF.
type packSummary struct {
	Dir           string   `json:"dir"`
	FormatVersion uint64   `json:"format_version"`
	PackID        string   `json:"pack_id,omitempty"`
	ExpertsFile   string   `json:"experts_file"`
	ExpertsBytes  uint64   `json:"experts_bytes,omitempty"`
	Layers        int      `json:"layers,omitempty"`
	Experts       int      `json:"experts,omitempty"`
	SourceExperts int      `json:"source_experts,omitempty"`
	PartTypes     []string `json:"part_types,omitempty"`
	SlotBytes     uint64   `json:"slot_bytes,omitempty"`
	// Problem is why the pack cannot be used, when it cannot (its files
	// missing or not belonging together); verify says more.
	Problem string `json:"problem,omitempty"`
}

// inspectPack describes the pack f is the model.gguf of, nil when f is not
// one (no strata.experts.file key).
func inspectPack(f *gguf.File) *packSummary {
	if _, err := f.String(strata.KeyExpertsFile); err != nil {
		return nil
	}
	dir := filepath.Dir(f.Path)
	ps := &packSummary{Dir: dir}
	ps.FormatVersion, _ = f.Uint64(strata.KeyFormatVersion)
	if n, err := f.Uint64(strata.KeySourceNExpert); err == nil {
		ps.SourceExperts = int(n)
	}
	xpath, err := strata.ExpertsPath(f, dir)
	if err != nil {
		ps.Problem = err.Error()
		return ps
	}
	ps.ExpertsFile = xpath
	p, err := strata.OpenPack(dir, strata.OpenOptions{})
	if err != nil {
		ps.Problem = err.Error()
		return ps
	}
	defer p.Close()
	x := p.Experts
	if x.Version >= 2 {
		ps.PackID = x.PackID.String()
	}
	ps.ExpertsBytes, ps.Layers, ps.Experts, ps.SlotBytes = x.FileBytes, x.NLayer(), int(x.NExpert), x.SlotBytes
	for _, pt := range x.Parts {
		ps.PartTypes = append(ps.PartTypes, pt.Type.String())
	}
	return ps
}

func printPack(out io.Writer, ps *packSummary) {
	fmt.Fprintf(out, "Pack (strata format %d): the experts are in %s, not in this GGUF\n", ps.FormatVersion, ps.ExpertsFile)
	if ps.Problem != "" {
		fmt.Fprintf(out, "  not usable: %s\n", ps.Problem)
		return
	}
	src := ""
	if ps.SourceExperts > 0 && ps.SourceExperts != ps.Experts {
		src = fmt.Sprintf(" (kept of %d)", ps.SourceExperts)
	}
	fmt.Fprintf(out, "  layers           %d\n  experts          %d per layer%s\n  expert types     %s\n  slot bytes       %s\n  experts bytes    %s\n",
		ps.Layers, ps.Experts, src, strings.Join(ps.PartTypes, ", "), thousands(int64(ps.SlotBytes)), thousands(int64(ps.ExpertsBytes)))
	if ps.PackID != "" {
		fmt.Fprintf(out, "  pack id          %s\n", ps.PackID)
	}
}

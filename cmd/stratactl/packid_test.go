package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// TestSwappedExpertsRefused packs one model twice, keeping other experts
// (same shape, same types, so nothing but the pack id tells the files
// apart), puts the second pack's model.experts into the first with
// manifest.json removed, and checks that run and eval refuse the folder,
// naming both pack ids.
func TestSwappedExpertsRefused(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "moe.gguf")
	mustRun(t, "synth", "-o", model, "--layers", "2", "--experts", "8", "--experts-used", "2",
		"--embd", "64", "--ff", "64", "--type", "q8_0", "--seed", "7")
	packs := map[string][]uint32{"a": {0, 1, 2, 3}, "b": {4, 5, 6, 7}}
	ids := map[string]string{}
	for name, kept := range packs {
		kp := filepath.Join(dir, name+".keep.strp")
		if err := strata.WriteKeep(kp, &strata.Keep{NExpert: 8, Layers: []uint32{0, 1}, Keep: [][]uint32{kept, kept}}); err != nil {
			t.Fatal(err)
		}
		man, err := convert.Pack(context.Background(), convert.PackConfig{In: model, OutDir: filepath.Join(dir, name), Type: quant.Q8_0, Keep: kp})
		if err != nil {
			t.Fatal(err)
		}
		mf, err := gguf.Open(filepath.Join(dir, name, strata.ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		ids[name], _ = mf.String(strata.KeyPackID)
		mf.Close()
		if ids[name] == "" || ids[name] != man.PackID {
			t.Fatalf("pack %s: id %q in model.gguf, %q in the manifest", name, ids[name], man.PackID)
		}
	}
	if ids["a"] == ids["b"] {
		t.Fatalf("both packs have id %s", ids["a"])
	}
	swapped := filepath.Join(dir, "a")
	b, err := os.ReadFile(filepath.Join(dir, "b", strata.ExpertsFile))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(swapped, strata.ExpertsFile), b)
	if err := os.Remove(filepath.Join(swapped, strata.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	tokens := make([]byte, 4*32)
	for i := range 32 {
		binary.LittleEndian.PutUint32(tokens[4*i:], uint32(i*37%200))
	}
	idsFile := writeFile(t, filepath.Join(dir, "ids.bin"), tokens)
	for _, args := range [][]string{
		{"run", swapped, "--ids", idsFile, "-n", "2"},
		{"eval", swapped, "--ref", model, "--ids", idsFile, "--ctx", "16"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), cli.Test(&stdout, &stderr), args)
		msg := stderr.String()
		if code == 0 || !strings.Contains(msg, ids["a"]) || !strings.Contains(msg, ids["b"]) || !strings.Contains(msg, strata.ExpertsFile) {
			t.Errorf("%s on a pack with another pack's %s: exit %d, stderr %q; want a refusal naming pack %s and pack %s",
				args[0], strata.ExpertsFile, code, msg, ids["a"], ids["b"])
		}
	}
}

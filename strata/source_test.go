package strata

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/gguf"
)

// TestComposeLocal: Compose maps a pruned model's keep map onto the
// original ids (kept i = rec[local[i]]), and Local undoes it.
func TestComposeLocal(t *testing.T) {
	rec := &Keep{NExpert: 8, Layers: []uint32{1, 3}, Keep: [][]uint32{{0, 2, 5, 7}, {1, 3, 4, 6}}}
	local := &Keep{NExpert: 4, Layers: []uint32{1, 3}, Keep: [][]uint32{{1, 3}, {0, 2}}, Rank: [][]uint32{{1, 0}, {0, 1}}}
	got := rec.Compose(local)
	want := [][]uint32{{2, 7}, {1, 4}}
	if got.NExpert != 8 || !slices.EqualFunc(got.Keep, want, slices.Equal) || !slices.EqualFunc(got.Rank, local.Rank, slices.Equal) {
		t.Fatalf("Compose = %+v, want keep %v of 8 and the ranking %v", got, want, local.Rank)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	back, err := rec.Local(got)
	if err != nil || back.NExpert != 4 || !slices.EqualFunc(back.Keep, local.Keep, slices.Equal) {
		t.Fatalf("Local = %+v (%v), want %v of 4", back, err, local.Keep)
	}
	// An original expert the pruned model dropped has no local id.
	if _, err := rec.Local(&Keep{NExpert: 8, Layers: []uint32{1, 3}, Keep: [][]uint32{{2, 3}, {1, 4}}}); err == nil {
		t.Error("Local accepted original expert 3, which the pruned model does not hold")
	}
	if _, err := rec.Local(&Keep{NExpert: 16, Layers: []uint32{1, 3}, Keep: [][]uint32{{2, 7}, {1, 4}}}); err == nil {
		t.Error("Local accepted a keep map of 16 experts for a record of 8")
	}
	kv := got.SourceKV()
	if kv[0].Key != KeySourceNExpert || kv[1].Key != KeySourceKeep || kv[1].Value.Len() != 4 {
		t.Errorf("SourceKV = %+v", kv)
	}
}

// TestSourceKeepRefuses: a record that does not fit the file is an error
// naming the key; no record is nil.
func TestSourceKeepRefuses(t *testing.T) {
	m := &gguf.MoE{Experts: 2, Layers: []gguf.MoELayer{{Block: 0}, {Block: 2}}}
	for _, c := range []struct {
		name string
		kv   []gguf.KV
		ok   bool
	}{
		{"none", nil, true},
		{"good", []gguf.KV{{Key: KeySourceNExpert, Value: gguf.Uint32(4)}, {Key: KeySourceKeep, Value: gguf.MustArray([]uint32{0, 3, 1, 2})}}, true},
		{"short", []gguf.KV{{Key: KeySourceNExpert, Value: gguf.Uint32(4)}, {Key: KeySourceKeep, Value: gguf.MustArray([]uint32{0, 3, 1})}}, false},
		{"range", []gguf.KV{{Key: KeySourceNExpert, Value: gguf.Uint32(4)}, {Key: KeySourceKeep, Value: gguf.MustArray([]uint32{0, 4, 1, 2})}}, false},
		{"order", []gguf.KV{{Key: KeySourceNExpert, Value: gguf.Uint32(4)}, {Key: KeySourceKeep, Value: gguf.MustArray([]uint32{3, 0, 1, 2})}}, false},
		{"type", []gguf.KV{{Key: KeySourceNExpert, Value: gguf.Uint32(4)}, {Key: KeySourceKeep, Value: gguf.MustArray([]int32{0, 3, 1, 2})}}, false},
		{"count", []gguf.KV{{Key: KeySourceKeep, Value: gguf.MustArray([]uint32{0, 3, 1, 2})}}, false},
	} {
		p := filepath.Join(t.TempDir(), c.name+".gguf")
		w, err := gguf.Create(p, append([]gguf.KV{{Key: "general.architecture", Value: gguf.String("x")}}, c.kv...), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		k, err := SourceKeep(f, m)
		f.Close()
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), KeySourceKeep)):
			t.Errorf("%s: err %v, want one naming %s", c.name, err, KeySourceKeep)
		case c.name == "none" && k != nil, c.name == "good" && (k == nil || !slices.EqualFunc(k.Keep, [][]uint32{{0, 3}, {1, 2}}, slices.Equal) || !slices.Equal(k.Layers, []uint32{0, 2})):
			t.Errorf("%s: SourceKeep = %+v", c.name, k)
		}
	}
}

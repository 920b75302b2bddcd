package profile

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/evalq"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/testutil"
	"github.com/stratactl/stratactl/strata"
)

// reapRef is refs/reap.json: per layer and expert, statistics computed by
// the fixture's generator (float32 forward on a GPU, sums in float64).
type reapRef struct {
	NSequences int `json:"n_sequences"`
	SeqLen     int `json:"seq_len"`
	TopK       int `json:"top_k"`
	NExperts   int `json:"n_experts"`
	Layers     []struct {
		Layer   int `json:"layer"`
		Experts []struct {
			Expert  int     `json:"expert"`
			Freq    int64   `json:"freq"`
			GateSum float64 `json:"gate_sum"`
			REAP    float64 `json:"reap"`
			EANSum  float64 `json:"ean_sum"`
		} `json:"experts"`
	} `json:"layers"`
}

func loadReapRef(t *testing.T) *reapRef {
	t.Helper()
	b, err := os.ReadFile(testutil.TinyModel(t, "refs", "reap.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reapRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// ProfileTiny profiles the tiny model over the whole calibration set.
func profileTiny(t *testing.T) *Stats {
	t.Helper()
	path := testutil.TinyModel(t, "model-bf16.gguf")
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	moe, err := f.MoE()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var blocks []int
	for _, l := range moe.Layers {
		blocks = append(blocks, l.Block)
	}
	m, err := engine.Open(path, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids, err := evalq.ReadIDs(testutil.TinyModel(t, "calib_tokens.i32.bin"))
	if err != nil {
		t.Fatal(err)
	}
	windows, err := evalq.Windows(ids, 256, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Run(context.Background(), m, blocks, windows, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestProfileMatchesReference reproduces refs/reap.json on the calibration
// set: counts exactly, gate sums, REAP and EAN within 1e-3 relative, and the
// same REAP order in every layer (swaps between scores within 1e-6 relative
// of each other excepted).
func TestProfileMatchesReference(t *testing.T) {
	ref := loadReapRef(t)
	s := profileTiny(t)
	if s.Tokens != int64(ref.NSequences*ref.SeqLen) || len(s.Blocks) != len(ref.Layers) || s.NExpert != ref.NExperts {
		t.Fatalf("profiled %d tokens, %d layers × %d experts; reference %d tokens, %d × %d", s.Tokens, len(s.Blocks), s.NExpert, ref.NSequences*ref.SeqLen, len(ref.Layers), ref.NExperts)
	}
	rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1e-12) }
	for l, rl := range ref.Layers {
		var total int64
		for _, re := range rl.Experts {
			e := re.Expert
			total += s.Count[l][e]
			if s.Count[l][e] != re.Freq {
				t.Errorf("layer %d expert %d: count %d, reference %d", l, e, s.Count[l][e], re.Freq)
			}
			if d := rel(s.GateSum[l][e], re.GateSum); d > 1e-3 {
				t.Errorf("layer %d expert %d: gate_sum %v, reference %v", l, e, s.GateSum[l][e], re.GateSum)
			}
			if d := rel(s.REAP(l, e), re.REAP); d > 1e-3 {
				t.Errorf("layer %d expert %d: reap %v, reference %v", l, e, s.REAP(l, e), re.REAP)
			}
			if d := rel(s.EAN[l][e], re.EANSum); d > 1e-3 {
				t.Errorf("layer %d expert %d: ean %v, reference %v", l, e, s.EAN[l][e], re.EANSum)
			}
		}
		if want := s.Tokens * int64(ref.TopK); total != want {
			t.Errorf("layer %d: %d routed slots, want tokens × top_k = %d", l, total, want)
		}
		got, _ := s.Order(FieldREAP, l)
		refScore := map[int]float64{}
		for _, re := range rl.Experts {
			refScore[re.Expert] = re.REAP
		}
		for i := 1; i < len(got); i++ {
			a, b := refScore[got[i-1]], refScore[got[i]]
			if a < b && rel(a, b) > 1e-6 {
				t.Errorf("layer %d: REAP order puts expert %d (ref %v) before %d (ref %v)", l, got[i-1], a, got[i], b)
			}
		}
	}
	// Round trip through a keep.strp with the STAT block.
	b, err := s.Keep().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	k, err := strata.ParseKeep(b, "profile.strp")
	if err != nil {
		t.Fatal(err)
	}
	if k.NKeep() != s.NExpert || k.NRank() != s.NExpert {
		t.Errorf("profile keeps %d and ranks %d of %d experts", k.NKeep(), k.NRank(), s.NExpert)
	}
	for l := range s.Blocks {
		byCount := s.ByCount(l)
		for i, e := range k.Rank[l] {
			if int(e) != byCount[i] {
				t.Fatalf("layer %d: ranking %v, by count %v", l, k.Rank[l], byCount)
			}
			if i > 0 && s.Count[l][k.Rank[l][i-1]] < s.Count[l][e] {
				t.Fatalf("layer %d: ranking not by descending count", l)
			}
		}
	}
	back, err := FromKeep(k, "profile.strp")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Count, s.Count) || !reflect.DeepEqual(back.GateSum, s.GateSum) || !reflect.DeepEqual(back.EAN, s.EAN) {
		t.Error("statistics changed through keep.strp")
	}
}

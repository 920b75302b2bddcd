package optq

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratactl/stratactl/kernels"
	"github.com/stratactl/stratactl/quant"
)

// plainLaneCase fills w (a row per lane) and imp for one trial: gaussian
// rows at scales from 1e-9 to 1e5 (candidates that round to fp16 0 at the
// bottom, the 65504 cap at the top), rows of zeros, with ±Inf or NaN,
// values on rounding boundaries; importance positive, with zeros,
// negatives, NaN and Inf, or all 0.
func plainLaneCase(rng *rand.Rand, trial int, w *laneWeights, imp *[group]float32) {
	for c := 0; c < scoreLanes; c++ {
		scale := float32(math.Pow(10, float64(rng.IntN(15)-9)))
		if trial%2 == 0 {
			scale = float32(0.01 + rng.Float64())
		}
		for k := range w {
			v := float32(rng.NormFloat64()) * scale
			if trial%5 == 1 {
				v = float32(rng.IntN(13)-6) / 4 * scale
			}
			w[k][c] = v
		}
		switch rng.IntN(24) {
		case 0:
			for k := range w {
				w[k][c] = 0
			}
		case 1:
			w[rng.IntN(group)][c] = float32(math.Inf(1 - 2*rng.IntN(2)))
		case 2:
			w[rng.IntN(group)][c] = float32(math.NaN())
		case 3:
			w[rng.IntN(group)][c] = math.MaxFloat32
		}
	}
	for j := range imp {
		imp[j] = float32(rng.ExpFloat64())
		switch rng.IntN(40) {
		case 0:
			imp[j] = 0
		case 1:
			imp[j] = -1
		case 2:
			imp[j] = float32(math.NaN())
		case 3:
			imp[j] = float32(math.Inf(1))
		}
	}
	if trial%7 == 3 {
		clear(imp[:])
	}
}

// TestPlainLanes: the vector plainLanes gives, in every lane it does not
// leave to Block, the scale quant.Q2Blocks.Block stores for that lane's
// row under the importance (its fp16 field, bit for bit), and leaves to
// Block exactly the lanes with a non-finite max|w| or a candidate scale
// that rounds to 0; for 1, 3, 8 and 12 candidates per sign. The output's
// lanes are all written (a guard value in each before).
func TestPlainLanes(t *testing.T) {
	if plainLanes == nil {
		t.Skip("no vector plainLanes on this CPU/build")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	var w laneWeights
	var imp [group]float32
	compared := 0
	for trial := 0; trial < 3000; trial++ {
		plainLaneCase(rng, trial, &w, &imp)
		q := []int{0, 1, 3, 8, 12}[trial%5]
		ratios := quant.Q2SearchRatios(q)
		blocks, err := kernels.NewQ2Blocks(&quant.QuantizeOptions{Q2Candidates: q, Importance: imp[:]})
		if err != nil {
			t.Fatal(err)
		}
		pw := plainWeights(&imp)
		var out [scoreLanes]float32
		for c := range out {
			out[c] = -12345
		}
		special := plainLanes(&w, &pw, ratios, &out)
		for c := 0; c < scoreLanes; c++ {
			var row [group]float32
			var amaxBits uint32
			for k := range row {
				row[k] = w[k][c]
				amaxBits = max(amaxBits, math.Float32bits(row[k])&^(1<<31))
			}
			wantSpecial := amaxBits >= 0x7f800000
			for _, r := range ratios {
				if roundFP16(min(math.Float32frombits(amaxBits)*r, 65504)) == 0 {
					wantSpecial = true
				}
			}
			if got := special>>c&1 == 1; got != wantSpecial {
				t.Fatalf("trial %d lane %d: left to Block %v, want %v (max|w| bits %#x)", trial, c, got, wantSpecial, amaxBits)
			}
			if wantSpecial {
				continue
			}
			compared++
			var blk [quant.Q2BlockBytes]byte
			blocks.Block(&row, &blk)
			want := quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk[:]))
			if math.Float32bits(out[c]) != math.Float32bits(want) {
				t.Fatalf("trial %d lane %d, %d candidates: scale %g (%#x), Block's %g (%#x)", trial, c, q, out[c], math.Float32bits(out[c]), want, math.Float32bits(want))
			}
		}
	}
	if compared < 3000*scoreLanes/2 {
		t.Fatalf("only %d of %d lanes compared", compared, 3000*scoreLanes)
	}
}

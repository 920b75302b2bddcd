package convert

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// BenchPackConfig is `stratactl bench pack`.
type BenchPackConfig struct {
	Dir       string // work folder (created files are removed unless KeepFiles)
	Input     string // an existing model to pack instead of a synthetic one
	Arch      string // synthetic model's architecture (SynthConfig.Arch; empty: qwen3moe)
	Layers    int
	Experts   int
	Embd, FF  int
	Type      quant.Type // synthetic experts' type
	Keep      int        // experts kept per layer
	Jobs      int
	KeepFiles bool
	Progress  ProgressFunc
	// Calibrate, when set, makes a calibrated quantizer for the model at
	// path (internal/bench's synthetic calibration): the same pack is then
	// measured a second time with it, beside the plain one.
	Calibrate BenchCalibrate
	// SlotTimes puts each slot's start and end in the packs' phases.
	SlotTimes bool
}

// BenchCalibrate prepares the calibrated quantizer of the model at path
// (calibration forward pass included); done releases it. times is the
// calibration run's time.
type BenchCalibrate func(ctx context.Context, path string) (eq ExpertQuantizer, info *CalibInfo, times BenchCollectTimes, done func(), err error)

// BenchCollectTimes is a calibration run's time and CPU time, and where
// they went (put in the report as it is: calib.CollectTimes).
type BenchCollectTimes struct {
	Seconds, CPUSeconds float64
	Detail              any
}

// BenchCalibrated is the calibrated pack's measurement.
type BenchCalibrated struct {
	Calibration *CalibInfo `json:"calibration"`
	// PackSeconds is the whole calibrated pack, from opening the model for
	// the calibration run to the pack's commit.
	PackSeconds float64 `json:"pack_s"`
	// CollectSeconds is its calibration run (forward pass and spill).
	CollectSeconds float64 `json:"collect_s"`
	// CPUSeconds and CollectCPUSeconds are the same in CPU time.
	CPUSeconds        float64 `json:"pack_cpu_s"`
	CollectCPUSeconds float64 `json:"collect_cpu_s"`
	// Ratio is PackSeconds over the plain pack's, CPURatio the same in
	// CPU time.
	Ratio         float64 `json:"ratio_to_plain"`
	CPURatio      float64 `json:"cpu_ratio_to_plain"`
	WeightsPerSec float64 `json:"weights_per_s"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	RSSScope      string  `json:"peak_rss_scope"`
	// PeakAnonBytes is the largest anonymous resident memory sampled
	// (every 50 ms): the peak RSS less the mapped model's pages, which
	// are the engine's working set.
	PeakAnonBytes int64   `json:"peak_anon_rss_bytes"`
	RelMSE        float64 `json:"rel_mse"`
	// CalibOutputErr is ‖(W−Ŵ)X‖/‖WX‖ on held-back tokens over every part.
	CalibOutputErr []float64 `json:"calib_output_err,omitempty"`
	// CollectPhases is where the calibration run's time went, Phases the
	// pack's after it.
	CollectPhases any        `json:"collect_phases,omitempty"`
	Phases        *PackTimes `json:"phases"`
}

// BenchPackResult holds every figure the benchmark measured.
type BenchPackResult struct {
	Machine      string  `json:"machine"`
	Input        string  `json:"input"`
	Arch         string  `json:"arch"`
	InputBytes   int64   `json:"input_bytes"`
	OutputBytes  int64   `json:"output_bytes"`
	Layers       int     `json:"moe_layers"`
	Experts      int     `json:"n_expert"`
	Kept         int     `json:"n_keep"`
	Weights      int64   `json:"weights_converted"`
	SynthSeconds float64 `json:"synth_s,omitempty"`
	PackSeconds  float64 `json:"pack_s"`
	// PackCPUSeconds is the pack's CPU time (user + system, all threads):
	// unlike the wall time, it does not grow with other jobs' load.
	PackCPUSeconds float64 `json:"pack_cpu_s"`
	WeightsPerSec  float64 `json:"weights_per_s"`
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`
	RSSScope       string  `json:"peak_rss_scope"`
	ReadSeconds    float64 `json:"floor_read_s"`
	WriteSeconds   float64 `json:"floor_write_s"`
	FloorSeconds   float64 `json:"floor_s"`
	RatioToFloor   float64 `json:"ratio_to_floor"`
	Jobs           int     `json:"jobs"`
	CacheDropped   bool    `json:"page_cache_dropped"`
	PackRelMSE     float64 `json:"rel_mse"`
	PackFolder     string  `json:"pack,omitempty"`
	// Phases is where the plain pack's time went.
	Phases *PackTimes `json:"phases"`
	// Calibrated is the same pack with the calibrated quantizer, when
	// asked for (BenchPackConfig.Calibrate).
	Calibrated *BenchCalibrated `json:"calibrated,omitempty"`
}

// BenchPack synthesizes (or takes) a model, packs it with a keep map, and
// measures the pack against the disk floor: reading the input bytes and
// writing the output bytes, in the same run on the same disk.
func BenchPack(ctx context.Context, cfg BenchPackConfig) (*BenchPackResult, error) {
	res := &BenchPackResult{Jobs: jobsOr(cfg.Jobs), Machine: machine()}
	// Without --input the expert count is known before minutes of synthesis.
	if cfg.Input == "" && (cfg.Keep <= 0 || cfg.Keep > cfg.Experts) {
		return nil, fmt.Errorf("--keep %d: want 1..%d", cfg.Keep, cfg.Experts)
	}
	dir, err := os.MkdirTemp(cfg.Dir, "stratactl-bench-pack-")
	if err != nil {
		return nil, err
	}
	if !cfg.KeepFiles {
		defer os.RemoveAll(dir)
	}
	in := cfg.Input
	if in == "" {
		in = filepath.Join(dir, "source.gguf")
		t0 := time.Now()
		if _, err := Synth(ctx, SynthConfig{Out: in, Arch: cmp.Or(cfg.Arch, "qwen3moe"), Layers: cfg.Layers, Experts: cfg.Experts, Embd: cfg.Embd, FF: cfg.FF,
			Type: cfg.Type, DenseType: quant.Q8_0, Seed: 1, Jobs: cfg.Jobs, Progress: cfg.Progress}); err != nil {
			return nil, err
		}
		res.SynthSeconds = time.Since(t0).Seconds()
	}
	res.Input = in
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	res.InputBytes = st.Size()

	// The keep map: a fixed pseudo-random choice per layer.
	f, err := openMoE(in)
	if err != nil {
		return nil, err
	}
	blocks := f.moe.LayerBlocks()
	nExpert := f.moe.Experts
	embd, ff := f.moe.Embd, f.moe.ExpertFF
	res.Arch, _ = f.file.String("general.architecture")
	f.file.Close()
	if cfg.Keep <= 0 || cfg.Keep > nExpert {
		return nil, fmt.Errorf("--keep %d: want 1..%d", cfg.Keep, nExpert)
	}
	r := rand.New(rand.NewPCG(5, 5))
	keep := &strata.Keep{NExpert: uint32(nExpert), Layers: blocks}
	for range blocks {
		ids := r.Perm(nExpert)[:cfg.Keep]
		slices.Sort(ids)
		var k []uint32
		for _, id := range ids {
			k = append(k, uint32(id))
		}
		keep.Keep = append(keep.Keep, k)
		keep.Rank = append(keep.Rank, nil)
	}
	keepPath := filepath.Join(dir, "bench.keep.strp")
	if err := strata.WriteKeep(keepPath, keep); err != nil {
		return nil, err
	}
	res.Layers, res.Experts, res.Kept = len(blocks), nExpert, cfg.Keep
	res.Weights = int64(len(blocks)) * int64(cfg.Keep) * 3 * embd * ff

	// The pack, cold: the input leaves the page cache first.
	res.CacheDropped = dropCache(in) == nil
	out := filepath.Join(dir, "pack")
	// The pack runs in this process; its peak RSS is measured from its
	// start where the kernel lets the high-water mark be reset.
	scoped := resetPeakRSS()
	t0, c0 := time.Now(), osutil.CPUSeconds()
	res.Phases = &PackTimes{SlotTimes: cfg.SlotTimes}
	man, err := Pack(ctx, PackConfig{In: in, OutDir: out, Type: quant.Q2_0, Keep: keepPath, Jobs: cfg.Jobs, Progress: cfg.Progress, Times: res.Phases})
	if err != nil {
		return nil, err
	}
	res.PackSeconds, res.PackCPUSeconds = time.Since(t0).Seconds(), osutil.CPUSeconds()-c0
	if scoped {
		res.PeakRSSBytes, res.RSSScope = peakRSS(), "this process from the start of the pack"
	} else {
		res.PeakRSSBytes, res.RSSScope = selfPeakRSS(), "this process (synth and pack together)"
	}
	res.PackRelMSE = man.RelMSE
	for _, o := range man.Outputs {
		res.OutputBytes += o.Bytes
	}
	res.WeightsPerSec = float64(res.Weights) / res.PackSeconds
	if cfg.KeepFiles {
		res.PackFolder = out
	}

	// The floor: read the input once, cold, and write as many bytes as the
	// pack wrote, synced. The pack, measured, makes room first: a field-scale
	// source, its pack and the floor's copy would not all fit on many disks.
	if !cfg.KeepFiles {
		if err := os.RemoveAll(out); err != nil {
			return nil, err
		}
	}
	if cfg.Calibrate != nil {
		cout := filepath.Join(dir, "pack-calibrated")
		if res.Calibrated, err = benchCalibrated(ctx, cfg, in, keepPath, cout, res); err != nil {
			return nil, err
		}
		if !cfg.KeepFiles {
			if err := os.RemoveAll(cout); err != nil {
				return nil, err
			}
		}
	}
	dropCache(in)
	if res.ReadSeconds, err = timeRead(ctx, in); err != nil {
		return nil, err
	}
	if res.WriteSeconds, err = timeWrite(ctx, filepath.Join(dir, "floor.bin"), res.OutputBytes); err != nil {
		return nil, err
	}
	res.FloorSeconds = res.ReadSeconds + res.WriteSeconds
	res.RatioToFloor = res.PackSeconds / res.FloorSeconds
	return res, nil
}

// benchCalibrated packs in again with cfg.Calibrate's quantizer, cold, and
// measures it as the plain pack was.
func benchCalibrated(ctx context.Context, cfg BenchPackConfig, in, keepPath, out string, plain *BenchPackResult) (*BenchCalibrated, error) {
	dropCache(in)
	scoped := resetPeakRSS()
	stop := make(chan struct{})
	peakAnon := make(chan int64)
	go func() {
		var m int64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			m = max(m, anonRSS())
			select {
			case <-stop:
				peakAnon <- max(m, anonRSS())
				return
			case <-t.C:
			}
		}
	}()
	defer func() {
		if stop != nil {
			close(stop)
			<-peakAnon
		}
	}()
	t0, c0 := time.Now(), osutil.CPUSeconds()
	eq, info, times, done, err := cfg.Calibrate(ctx, in)
	if err != nil {
		return nil, err
	}
	defer done()
	phases := &PackTimes{SlotTimes: cfg.SlotTimes}
	man, err := Pack(ctx, PackConfig{In: in, OutDir: out, Type: quant.Q2_0, Keep: keepPath, Jobs: cfg.Jobs, Progress: cfg.Progress, Experts: eq, Calib: info, Times: phases})
	if err != nil {
		return nil, err
	}
	r := &BenchCalibrated{Calibration: info, PackSeconds: time.Since(t0).Seconds(), RelMSE: man.RelMSE, CPUSeconds: osutil.CPUSeconds() - c0, Phases: phases}
	r.CollectSeconds, r.CollectCPUSeconds, r.CollectPhases = times.Seconds, times.CPUSeconds, times.Detail
	close(stop)
	r.PeakAnonBytes, stop = <-peakAnon, nil
	if scoped {
		r.PeakRSSBytes, r.RSSScope = peakRSS(), "this process from the start of the calibration run"
	} else {
		r.PeakRSSBytes, r.RSSScope = selfPeakRSS(), "this process (the whole bench)"
	}
	r.Ratio = r.PackSeconds / plain.PackSeconds
	if plain.PackCPUSeconds > 0 {
		r.CPURatio = r.CPUSeconds / plain.PackCPUSeconds
	}
	r.WeightsPerSec = float64(plain.Weights) / r.PackSeconds
	for _, l := range man.Layers {
		for _, p := range l.Parts {
			if p.CalibOutputErr != nil {
				r.CalibOutputErr = append(r.CalibOutputErr, *p.CalibOutputErr)
			}
		}
	}
	return r, nil
}

func timeRead(ctx context.Context, path string) (float64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	buf := make([]byte, 4<<20)
	t0 := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n, err := fh.Read(buf)
		if err == io.EOF || (n == 0 && err == nil) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	return time.Since(t0).Seconds(), nil
}

func timeWrite(ctx context.Context, path string, n int64) (float64, error) {
	fh, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer fh.Close()
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(i * 131) // not zeros, in case the disk compresses or dedups
	}
	t0 := time.Now()
	for left := n; left > 0; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k := min(int64(len(buf)), left)
		if _, err := fh.Write(buf[:k]); err != nil {
			return 0, err
		}
		left -= k
	}
	if err := fh.Sync(); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds(), nil
}

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs", host, jobsOr(0))
}

type moeFile struct {
	file *gguf.File
	moe  *gguf.MoE
}

func openMoE(path string) (*moeFile, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := f.MoE()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &moeFile{file: f, moe: m}, nil
}

package calib_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratactl/stratactl/calib"
	"github.com/stratactl/stratactl/convert"
	"github.com/stratactl/stratactl/engine"
	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/quant"
)

// BenchmarkCollectField times calib.Collect alone on one synthetic layer of
// bench pack's field shape (n_embd 2560, 512 experts of 640, 8 used, IQ3_S
// experts, Q8_0 dense; the model bench pack synthesizes) over 8 windows of
// 256 random token ids, in the fast mode on every core, and reports the
// process CPU seconds per run beside the wall time, and the largest
// anonymous resident memory sampled every 10 ms (Linux; the mapped model's
// pages are not in it). STRATACTL_CALIB_EXPERTS
// and STRATACTL_CALIB_WINDOWS shrink it at the same tokens per expert
// (e.g. 128 experts and 2 windows); STRATACTL_CALIB_MODEL keeps the
// synthesized model at that path for the next run.
//
//	go test ./calib -run - -bench CollectField -benchtime 1x
func BenchmarkCollectField(b *testing.B) {
	experts, windows := envInt(b, "STRATACTL_CALIB_EXPERTS", 512), envInt(b, "STRATACTL_CALIB_WINDOWS", 8)
	path := os.Getenv("STRATACTL_CALIB_MODEL")
	if path == "" {
		path = filepath.Join(b.TempDir(), "field.gguf")
	}
	if _, err := os.Stat(path); err != nil {
		if _, err := convert.Synth(context.Background(), convert.SynthConfig{Out: path, Arch: "qwen3moe", Layers: 1, Experts: experts, Embd: 2560, FF: 640,
			Type: quant.IQ3_S, DenseType: quant.Q8_0, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	m, err := engine.Open(path, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if m.Config.Experts != experts {
		b.Fatalf("%s has %d experts, want %d", path, m.Config.Experts, experts)
	}
	ws := make([][]int32, windows)
	for i := range ws {
		r := rand.New(rand.NewPCG(1+uint64(i), 0x63616c6962))
		ws[i] = make([]int32, 256)
		for j := range ws[i] {
			ws[i][j] = int32(r.IntN(m.Config.Vocab))
		}
	}
	dir := b.TempDir()
	stop, peak := make(chan struct{}), make(chan int64)
	go func() {
		var mx int64
		for {
			mx = max(mx, rssAnon())
			select {
			case <-stop:
				peak <- mx
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0, _ := bench.ProcessCPU()
		set, err := calib.Collect(context.Background(), m, []int{0}, ws, calib.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		c1, _ := bench.ProcessCPU()
		cpu += c1 - c0
		set.Close()
	}
	close(stop)
	b.ReportMetric(float64(<-peak)/1e6, "peak-anon-MB")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(windows*256)/b.Elapsed().Seconds()*float64(b.N), "tokens/s")
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatal(fmt.Errorf("%s=%q: want a positive count", name, v))
	}
	return n
}

// rssAnon is the process's anonymous resident memory from /proc/self/status
// (0 where there is none to read).
func rssAnon() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

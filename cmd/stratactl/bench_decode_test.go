package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/bench"
	"github.com/stratactl/stratactl/internal/cli"
)

// benchDecodeReport runs bench decode with args and reads its JSON report.
func benchDecodeReport(t *testing.T, args []string) bench.DecodeReport {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), args); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep bench.DecodeReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return rep
}

func TestBenchDecodeSmall(t *testing.T) {
	args := []string{"--json", "bench", "decode", "--dir", t.TempDir(), "--layers", "2", "--embd", "256", "--ff", "128",
		"--experts", "16", "--used", "2", "--vocab", "512", "--heads", "4", "--heads-kv", "2", "--head-dim", "64",
		"-n", "4", "--prompt", "3", "--mem-mb", "8", "--disk-slots", "8"}
	rep := benchDecodeReport(t, args)
	if rep.MemReadGBs <= 0 || rep.DiskReadMBs <= 0 || rep.ExpertsBytes <= 0 {
		t.Fatalf("bandwidths %+v", rep)
	}
	res, str := rep.Resident, rep.Streaming
	if res.DecodeSteps != 3 || res.DecodeTokensPerS <= 0 || res.Limit <= 0 || res.Stream.HitRate != 1 {
		t.Fatalf("resident run %+v", res)
	}
	if str.Stream.ArenaSlots != 8 || str.Stream.TotalSlots != 32 || str.Stream.Counters.Misses == 0 {
		t.Fatalf("streaming run %+v", str.Stream)
	}
	// The expert bytes per token follow from the shapes: 2 layers x 2 used
	// x (gate + up + down) of 128 x 256 Q2_0 weights (18 bytes per 64).
	if want := 2 * 2 * 3 * 128 * 256 / 64 * 18; rep.ExpertMBPerTok*1e6 != float64(want) {
		t.Fatalf("expert bytes per token %.0f, want %d", rep.ExpertMBPerTok*1e6, want)
	}
	// The compute bound's kinds of product: the experts' gate and up (128
	// rows of 256) and down (256 rows of 128), 2 layers x 2 used each.
	kinds := map[string]int64{}
	for _, k := range rep.KernelRates {
		if k.GWeightsPerS <= 0 || k.SampleKB <= 0 {
			t.Fatalf("kernel rate %+v", k)
		}
		kinds[fmt.Sprintf("%s/%d", k.Type, k.Cols)] = k.WeightsPerToken
	}
	if got, want := kinds["Q2_0/128"], int64(2*2*256*128); got != want {
		t.Fatalf("q2_0 x 128 weights per token %d, want %d (%v)", got, want, kinds)
	}
	if got, want := kinds["Q2_0/256"], int64(2*2*2*128*256); got != want {
		t.Fatalf("q2_0 x 256 weights per token %d, want %d (%v)", got, want, kinds)
	}
	// The step breakdown: its product phases read the step's weights but
	// the embedding row (one row of 256 weights, at most 1 KiB).
	for _, r := range []bench.DecodeRun{res, str} {
		var prodMB, ms float64
		for _, p := range r.Phases {
			if p.Products {
				prodMB += p.MB
			}
			ms += p.Ms
		}
		if d := r.BytesPerToken - prodMB; d < 0 || d > 1024e-6 || ms <= 0 {
			t.Fatalf("step phases read %g MB in %g ms, the step's weights are %g MB", prodMB, ms, r.BytesPerToken)
		}
	}
	if rep.ComputeLimit <= 0 || res.ComputeLimit != rep.ComputeLimit || res.MedianTokensPerS <= 0 || res.BestTokensPerS < res.MedianTokensPerS {
		t.Fatalf("compute bound %g, run %+v", rep.ComputeLimit, res)
	}
	// The bound in CPU time: a thread's CPU time in a pass is at most the
	// pass's wall time, so per CPU-second the read is at least the wall
	// rate over the threads; the run's own best is one of the report's
	// passes; the fraction is the decode's bytes per CPU-second over it.
	if runtime.GOOS == "linux" {
		if rep.MemReadGBsPerCPU < rep.MemReadGBs/float64(rep.Threads)*0.999 || res.MemReadGBsPerCPU > rep.MemReadGBsPerCPU || res.MemReadGBsPerCPU <= 0 {
			t.Fatalf("per CPU-second %g GB (run %g) against %g GB/s on %d threads", rep.MemReadGBsPerCPU, res.MemReadGBsPerCPU, rep.MemReadGBs, rep.Threads)
		}
		if want := res.CPUTokensPerS * res.BytesPerToken * 1e6 / (rep.MemReadGBsPerCPU * 1e9); math.Abs(res.CPUMemFraction-want) > 1e-9*want {
			t.Fatalf("CPU-time fraction %g, want %g", res.CPUMemFraction, want)
		}
	}
	// Both runs' memory bounds divide the report's best bandwidth; the
	// streaming run's bytes add the slots its reads check, and its limit
	// is the tighter of memory and disk.
	for _, r := range []bench.DecodeRun{res, str} {
		mb := r.BytesPerToken + (r.Stream.ReadMBPerToken-r.Stream.DroppedMBPerToken)*(1<<20)/1e6
		if math.Abs(r.MemBytesPerToken-mb) > 1e-9*mb {
			t.Fatalf("memory bytes per token %g MB, want %g", r.MemBytesPerToken, mb)
		}
		if want := rep.MemReadGBs * 1e3 / mb; math.Abs(r.MemLimit-want) > 1e-9*want || r.MemFraction != r.MedianTokensPerS/r.MemLimit {
			t.Fatalf("memory bound %g tokens/s (fraction %g), want %g", r.MemLimit, r.MemFraction, want)
		}
	}
	if str.MemBytesPerToken <= str.BytesPerToken || str.DiskLimit <= 0 || str.Limit != min(str.MemLimit, str.DiskLimit) || res.Limit != res.MemLimit {
		t.Fatalf("streaming bounds %+v, resident %+v", str, res)
	}
	if want := str.MedianTokensPerS / res.MedianTokensPerS; rep.StreamingOfResident != want {
		t.Fatalf("streaming of resident %g, want %g", rep.StreamingOfResident, want)
	}
	if rep.ResidentUnderReads != nil || rep.BackgroundReadMBs != 0 {
		t.Fatalf("a resident run under reads without --read-cost: %+v, %g MB/s", rep.ResidentUnderReads, rep.BackgroundReadMBs)
	}
	if rep.Mode != "fast" || rep.MemPasses != 5 {
		t.Fatalf("mode %q, memory passes %d", rep.Mode, rep.MemPasses)
	}
	// Every expert fits under the default cap, half of MemTotal.
	if rep.ResidentCapped {
		t.Fatalf("the resident run of %d slots was capped at %.1f MiB", res.Stream.TotalSlots, rep.ResidentCapMB)
	}
	if runtime.GOOS == "linux" && math.Abs(rep.ResidentCapMB-memTotalMiB(t)/2) > 1 {
		t.Fatalf("resident cap %.1f MiB, want half of /proc/meminfo's MemTotal, %.1f MiB", rep.ResidentCapMB, memTotalMiB(t)/2)
	}
}

// TestBenchDecodeReadCost: --read-cost decodes the resident run's tokens
// once more with every expert resident while slots are read in the
// background, and reports that run, bound as the resident one, beside the
// background read's rate.
func TestBenchDecodeReadCost(t *testing.T) {
	args := []string{"--json", "bench", "decode", "--dir", t.TempDir(), "--layers", "2", "--embd", "256", "--ff", "128",
		"--experts", "16", "--used", "2", "--vocab", "512", "--heads", "4", "--heads-kv", "2", "--head-dim", "64",
		"-n", "4", "--prompt", "3", "--mem-mb", "8", "--disk-slots", "8", "--read-cost"}
	rep := benchDecodeReport(t, args)
	u := rep.ResidentUnderReads
	if u == nil || rep.BackgroundReadMBs <= 0 {
		t.Fatalf("resident run under reads %+v at %g MB/s", u, rep.BackgroundReadMBs)
	}
	if u.DecodeSteps != rep.Resident.DecodeSteps || u.Stream.HitRate != 1 || u.Stream.Counters.Reads != 0 || u.MemLimit != rep.Resident.MemLimit || u.MemFraction != u.MedianTokensPerS/u.MemLimit {
		t.Fatalf("resident run under reads %+v; resident run %+v", u, rep.Resident)
	}
}

// memTotalMiB is /proc/meminfo's MemTotal in MiB.
func memTotalMiB(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// TestBenchDecodeResidentCap: a resident run whose experts exceed the cap
// holds as many as fit and says so, in the JSON and in the text. The
// small shape's slots are 32 KiB (3 parts of 128 x 256 Q2_0, 27648 bytes,
// in 16 KiB units), so a cap of 0.3125 MiB holds 10 of the 32.
func TestBenchDecodeResidentCap(t *testing.T) {
	args := []string{"bench", "decode", "--layers", "2", "--embd", "256", "--ff", "128",
		"--experts", "16", "--used", "2", "--vocab", "512", "--heads", "4", "--heads-kv", "2", "--head-dim", "64",
		"-n", "4", "--prompt", "3", "--mem-mb", "8", "--mem-passes", "1", "--disk-slots", "8", "--resident-cap-mb", "0.3125"}
	rep := benchDecodeReport(t, append([]string{"--json"}, append(args, "--dir", t.TempDir())...))
	st := rep.Resident.Stream
	if !rep.ResidentCapped || rep.ResidentCapMB != 0.3125 || st.ArenaSlots != 10 || st.TotalSlots != 32 || st.Counters.Misses == 0 {
		t.Fatalf("capped resident run: capped %v at %g MiB, %d of %d slots, %d misses; want true, 0.3125, 10 of 32, some misses",
			rep.ResidentCapped, rep.ResidentCapMB, st.ArenaSlots, st.TotalSlots, st.Counters.Misses)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &errb), append(args, "--dir", t.TempDir())); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "arena capped at 0.3 MiB (--resident-cap-mb): 10 of 32 experts resident, the rest streamed"; !strings.Contains(out.String(), want) {
		t.Fatalf("the text report does not say %q:\n%s", want, out.String())
	}
}

// --dir names where the benchmark's own folder goes: files already there are
// never removed.
func TestBenchDecodeKeepsUserFiles(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(mine, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	args := []string{"--json", "bench", "decode", "--dir", dir, "--layers", "1", "--embd", "256", "--ff", "128",
		"--experts", "16", "--used", "2", "--vocab", "512", "--heads", "4", "--heads-kv", "2", "--head-dim", "64", "-n", "2", "--mem-mb", "8", "--disk-slots", "8"}
	if code := run(context.Background(), cli.Test(&o, &e), args); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "keep me" {
		t.Fatalf("bench decode removed or changed a file in --dir: %v", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Fatalf("bench decode left %d entries in --dir, want only the user's file", len(left))
	}
}

// --arch qwen35moe benches the hybrid: its geometry comes from --embd as
// synth makes it, every --attn-interval-th layer attention, and the dense
// bytes per token count the shared experts the engine reads.
func TestBenchDecodeQwen35(t *testing.T) {
	args := []string{"--json", "bench", "decode", "--arch", "qwen35moe", "--dir", t.TempDir(), "--layers", "4", "--attn-interval", "2",
		"--embd", "256", "--ff", "128", "--experts", "16", "--used", "2", "--vocab", "512",
		"-n", "4", "--prompt", "3", "--mem-mb", "8", "--disk-slots", "8"}
	rep := benchDecodeReport(t, args)
	h := rep.Spec.Hybrid
	if rep.Spec.Arch != "qwen35moe" || h == nil || h.AttnInterval != 2 || h.Heads != 2 || h.KHeads != 2 || h.SharedFF != 128 {
		t.Fatalf("spec %+v hybrid %+v", rep.Spec, h)
	}
	if rep.Resident.DecodeSteps != 3 || rep.Resident.Stream.HitRate != 1 || rep.Streaming.Stream.Counters.Misses == 0 {
		t.Fatalf("runs %+v %+v", rep.Resident, rep.Streaming.Stream)
	}
	// Same expert bytes per token as qwen3moe of these shapes: 4 layers x 2
	// used x 3 matrices of 128 x 256 Q2_0 (18 bytes per 64 weights).
	if want := 4 * 2 * 3 * 128 * 256 / 64 * 18; rep.ExpertMBPerTok*1e6 != float64(want) {
		t.Fatalf("expert bytes per token %.0f, want %d", rep.ExpertMBPerTok*1e6, want)
	}
	var out, e2 bytes.Buffer
	if code := run(context.Background(), cli.Test(&out, &e2), []string{"bench", "decode", "--arch", "llama", "--dir", t.TempDir()}); code == 0 {
		t.Fatal("--arch llama was accepted")
	}
}

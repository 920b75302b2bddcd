package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
)

// splitFlags are the output-splitting flags of the commands that write a
// GGUF (quantize, prune), named as llama.cpp's gguf-split names them.
type splitFlags struct {
	maxSize    string
	maxTensors int
}

func (s *splitFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&s.maxSize, "split-max-size", "", "write shards of at most this size (e.g. 500M, 4G; bytes without a unit); only a single larger tensor exceeds it")
	cli.IntVar(fl, &s.maxTensors, "split-max-tensors", 0, 0, 1<<20, "write shards of at most this many tensors (0: no limit)")
}

func (s *splitFlags) options() (gguf.SplitOptions, error) {
	var o gguf.SplitOptions
	o.MaxTensors = s.maxTensors
	if s.maxSize != "" {
		n, err := parseSize(s.maxSize)
		if err != nil {
			return o, fmt.Errorf("--split-max-size: %w", err)
		}
		o.MaxBytes = n
	}
	return o, nil
}

// parseSize reads a byte count with an optional K, M, G or T suffix (powers
// of 1000, as gguf-split reads them; KiB-style suffixes are powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}
	for _, u := range units {
		if cut, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = cut, u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || n*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a positive size", s)
	}
	return int64(n * float64(mult)), nil
}

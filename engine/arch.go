package engine

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/stratactl/stratactl/gguf"
)

// archSpec is one architecture on the seam: which metadata it reads and
// which tensors make up its blocks. The forward pass composes the blocks
// the loaded layers hold (attention or gated delta net, MoE with or
// without a shared expert), so a new architecture is a new archSpec.
type archSpec struct {
	// config reads the architecture's own metadata into c; the keys every
	// architecture shares (readCommon) are already in c.
	config func(md meta, c *Config) error
	// layer loads block i's dense tensors into L.
	layer func(l tensorLoader, c *Config, i int, L *Layer) error
}

// archs are the architectures this package runs, by general.architecture.
var archs = map[string]archSpec{
	"qwen3moe":  qwen3moeArch,
	"qwen35moe": qwen35moeArch,
	"qwen3next": qwen3nextArch,
}

// SupportedArchitectures lists the general.architecture values Open runs.
func SupportedArchitectures() []string {
	names := make([]string, 0, len(archs))
	for n := range archs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ReadConfig reads and checks the architecture of f.
func ReadConfig(f *gguf.File) (Config, error) {
	arch := f.Architecture()
	if arch == "" {
		return Config{}, fmt.Errorf("%s: no general.architecture", f.Path)
	}
	spec, ok := archs[arch]
	if !ok {
		return Config{}, fmt.Errorf("%s: architecture %q is not supported (supported: %s)", f.Path, arch, strings.Join(SupportedArchitectures(), ", "))
	}
	md := meta{f: f, arch: arch}
	c := Config{Arch: arch}
	if err := readCommon(md, &c); err != nil {
		return Config{}, err
	}
	if err := spec.config(md, &c); err != nil {
		return Config{}, err
	}
	if c.RopeDims == 0 {
		c.RopeDims = c.HeadDim
	}
	switch {
	case c.HeadsKV == 0 || c.Heads%c.HeadsKV != 0:
		return Config{}, fmt.Errorf("%s: head_count %d is not a multiple of head_count_kv %d", f.Path, c.Heads, c.HeadsKV)
	case c.ExpertsUsed > c.Experts:
		return Config{}, fmt.Errorf("%s: expert_used_count %d > expert_count %d", f.Path, c.ExpertsUsed, c.Experts)
	case c.HeadDim%2 != 0:
		return Config{}, fmt.Errorf("%s: head dimension %d is odd (RoPE pairs dimensions)", f.Path, c.HeadDim)
	case c.RopeDims%2 != 0 || c.RopeDims > c.HeadDim:
		return Config{}, fmt.Errorf("%s: %s.rope.dimension_count %d: want an even number <= the head dimension %d", f.Path, arch, c.RopeDims, c.HeadDim)
	}
	return c, nil
}

// readCommon reads the keys every supported architecture has.
func readCommon(md meta, c *Config) error {
	for _, k := range []struct {
		s string
		d *int
	}{
		{"block_count", &c.Layers}, {"embedding_length", &c.Embd},
		{"attention.head_count", &c.Heads},
		{"expert_count", &c.Experts}, {"expert_used_count", &c.ExpertsUsed},
		{"expert_feed_forward_length", &c.ExpertFF}, {"context_length", &c.Context},
	} {
		if err := md.count(k.s, k.d); err != nil {
			return err
		}
	}
	c.HeadDim = c.Embd / c.Heads
	if err := md.countOpt("attention.key_length", &c.HeadDim); err != nil {
		return err
	}
	c.ValueDim = c.HeadDim
	if err := md.countOpt("attention.value_length", &c.ValueDim); err != nil {
		return err
	}
	var err error
	if c.RopeBase, err = md.positive("rope.freq_base", 10000); err != nil {
		return err
	}
	eps, err := md.positive("attention.layer_norm_rms_epsilon", 0)
	if err != nil {
		return err
	}
	c.Eps = float32(eps)
	return nil
}

// meta reads one architecture's metadata keys, naming the file and key in
// every error.
type meta struct {
	f    *gguf.File
	arch string
}

func (md meta) key(suffix string) string { return md.arch + "." + suffix }

// count reads a required positive integer.
func (md meta) count(suffix string, dst *int) error {
	key := md.key(suffix)
	if !md.f.Has(key) {
		return fmt.Errorf("%s: missing metadata key %s", md.f.Path, key)
	}
	return md.countOpt(suffix, dst)
}

// countOpt reads a positive integer if the key is present, else leaves dst.
func (md meta) countOpt(suffix string, dst *int) error {
	key := md.key(suffix)
	v, ok := md.f.Get(key)
	if !ok {
		return nil
	}
	x, ok := v.AsUint64()
	if !ok || x == 0 || x > 1<<31 {
		return fmt.Errorf("%s: metadata key %s: want a positive integer, have %s", md.f.Path, key, v.TypeName())
	}
	*dst = int(x)
	return nil
}

// nonNegative reads an optional integer >= 0 (0 when absent).
func (md meta) nonNegative(suffix string) (int, error) {
	key := md.key(suffix)
	v, ok := md.f.Get(key)
	if !ok {
		return 0, nil
	}
	x, ok := v.AsUint64()
	if !ok || x > 1<<31 {
		return 0, fmt.Errorf("%s: metadata key %s: want a non-negative integer, have %s", md.f.Path, key, v.TypeName())
	}
	return int(x), nil
}

// positive reads a positive finite number; def (when not 0) is the value
// of a missing key.
func (md meta) positive(suffix string, def float64) (float64, error) {
	key := md.key(suffix)
	v, ok := md.f.Get(key)
	if !ok {
		if def != 0 {
			return def, nil
		}
		return 0, fmt.Errorf("%s: missing metadata key %s", md.f.Path, key)
	}
	x, ok := v.AsFloat64()
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return 0, fmt.Errorf("%s: metadata key %s: want a positive number", md.f.Path, key)
	}
	return x, nil
}

// boolean reads an optional bool key.
func (md meta) boolean(suffix string, dst *bool) error {
	key := md.key(suffix)
	v, ok := md.f.Get(key)
	if !ok {
		return nil
	}
	b, isBool := v.Any().(bool)
	if !isBool {
		return fmt.Errorf("%s: metadata key %s: want bool, have %s", md.f.Path, key, v.TypeName())
	}
	*dst = b
	return nil
}

// ints reads an integer key that may be a scalar or an array of n
// non-negative integers (per-layer values); ok is false when it is absent.
func (md meta) ints(suffix string, n int) (vals []int, ok bool, err error) {
	key := md.key(suffix)
	v, ok := md.f.Get(key)
	if !ok {
		return nil, false, nil
	}
	if x, isInt := v.AsUint64(); isInt {
		if x > 1<<31 {
			return nil, true, fmt.Errorf("%s: metadata key %s: %d is too large", md.f.Path, key, x)
		}
		vals = make([]int, n)
		for i := range vals {
			vals[i] = int(x)
		}
		return vals, true, nil
	}
	bad := fmt.Errorf("%s: metadata key %s: want an integer or an array of %d non-negative integers, have %s (%d elements)", md.f.Path, key, n, v.TypeName(), v.Len())
	if v.Len() != n {
		return nil, true, bad
	}
	var raw []int64
	switch a := v.Any().(type) {
	case []int32:
		raw = widen(a)
	case []uint32:
		raw = widen(a)
	case []int64:
		raw = a
	case []uint64:
		for _, x := range a {
			if x > 1<<31 {
				return nil, true, bad
			}
		}
		raw = widen(a)
	case []uint8:
		raw = widen(a)
	case []int8:
		raw = widen(a)
	case []uint16:
		raw = widen(a)
	case []int16:
		raw = widen(a)
	case []bool:
		for _, x := range a {
			raw = append(raw, map[bool]int64{false: 0, true: 1}[x])
		}
	default:
		return nil, true, bad
	}
	vals = make([]int, n)
	for i, x := range raw {
		if x < 0 || x > 1<<31 {
			return nil, true, bad
		}
		vals[i] = int(x)
	}
	return vals, true, nil
}

// widen converts an integer array element by element.
func widen[T ~int8 | ~int16 | ~int32 | ~uint8 | ~uint16 | ~uint32 | ~uint64](a []T) []int64 {
	out := make([]int64, len(a))
	for i, x := range a {
		out[i] = int64(x)
	}
	return out
}

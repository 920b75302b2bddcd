package main

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
)

func init() { register(newInspectCmd) }

func newInspectCmd(env *cli.Env) *cobra.Command {
	var allKV, tensors bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Show a GGUF file's metadata, tensors and mixture-of-experts layout",
		Long: `Inspect parses a GGUF file's header (tensor data is not read) and prints its
architecture, name, size, metadata and mixture-of-experts summary: MoE layers,
experts per layer and per token, expert tensor types, bytes per expert, and how
much of the file the experts take. Long arrays and strings are shortened unless
--kv is given; --tensors adds the tensor table. --json prints everything
(all metadata in full, every tensor) as one document; see docs/INSPECT.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := gguf.OpenModel(inspectPath(args[0]), false)
			if err != nil {
				return err
			}
			defer f.Close()
			rep := gguf.Inspect(f)
			// A pack's model.gguf holds no experts: they are in its
			// model.experts, which the pack section describes.
			pk := inspectPack(f)
			if pk != nil {
				rep.MoEError = ""
			}
			if env.JSON {
				return env.PrintJSON(struct {
					*gguf.InspectReport
					Pack *packSummary `json:"pack,omitempty"`
				}{rep, pk})
			}
			return printInspect(env.Out, f, rep, pk, allKV, tensors)
		},
	}
	cmd.Flags().BoolVar(&allKV, "kv", false, "print metadata values in full (arrays and long strings)")
	cmd.Flags().BoolVar(&tensors, "tensors", false, "print the tensor table")
	return cmd
}

func printInspect(out io.Writer, f *gguf.File, rep *gguf.InspectReport, pk *packSummary, allKV, tensors bool) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	row("file\t%s (%s bytes, GGUF v%d)", rep.File, thousands(rep.FileBytes), rep.Version)
	row("architecture\t%s", orNone(printable(rep.Architecture)))
	row("name\t%s", orNone(printable(rep.Name)))
	if len(rep.Shards) > 0 {
		row("tensors\t%d (%s bytes of data in %d shards, alignment %d)", rep.TensorCount, thousands(rep.TensorBytes), len(rep.Shards), rep.Alignment)
	} else {
		row("tensors\t%d (%s bytes of data from byte %d, alignment %d)", rep.TensorCount, thousands(rep.TensorBytes), rep.DataOffset, rep.Alignment)
	}
	row("metadata\t%d pairs", rep.MetadataCount)
	if len(rep.Shards) > 0 {
		row("shards\t%d", len(rep.Shards))
		for i, sh := range rep.Shards {
			row("  %d\t%s (%s bytes, %d tensors)", i+1, sh.Path, thousands(sh.Bytes), sh.Tensors)
		}
	}
	tw.Flush()

	fmt.Fprintln(out)
	switch m := rep.MoE; {
	case pk != nil:
		printPack(out, pk)
	case m != nil:
		fmt.Fprintln(out, "MoE")
		row("  layers\t%d of %d blocks", m.Layers, m.Blocks)
		used := "? (no expert_used_count)"
		if m.ExpertsUsed > 0 {
			used = strconv.Itoa(m.ExpertsUsed)
		}
		row("  experts\t%d per layer, %s used per token", m.Experts, used)
		fused := ""
		if m.FusedGateUp {
			fused = " (gate and up fused: ffn_gate_up_exps)"
		}
		row("  expert width\tn_embd %d, n_ff_exp %d%s", m.Embedding, m.ExpertFF, fused)
		row("  expert types\t%s", strings.Join(m.ExpertTypes, ", "))
		per := fmt.Sprintf("%s bytes (one expert of one layer, all its parts)", thousands(m.BytesPerExpert))
		for _, l := range m.PerLayer {
			if l.BytesPerExpert != m.BytesPerExpert {
				per = fmt.Sprintf("up to %s bytes (layers differ; see --json per_layer)", thousands(m.BytesPerExpert))
				break
			}
		}
		row("  bytes per expert\t%s", per)
		row("  expert bytes\t%s (%.1f%% of the file)", thousands(m.ExpertBytes), 100*m.ExpertShare)
		row("  dense bytes\t%s (%.1f%% of the file)", thousands(m.DenseBytes), 100*float64(m.DenseBytes)/float64(rep.FileBytes))
		if len(m.MTPBlocks) > 0 {
			row("  MTP blocks\t%v (nextn_predict_layers; never run, dropped by prune and pack by default): %s bytes", m.MTPBlocks, thousands(m.MTPBytes))
		}
		tw.Flush()
	case rep.MoEError != "":
		fmt.Fprintf(out, "MoE: not usable: %s\n", rep.MoEError)
	default:
		fmt.Fprintln(out, "MoE: none (dense model)")
	}

	fmt.Fprintln(out, "\nMetadata")
	for _, kv := range f.KV {
		row("  %s\t%s\t%s", printable(kv.Key), kv.Value.TypeName(), formatValue(kv.Value, allKV))
	}
	tw.Flush()

	if tensors {
		fmt.Fprintln(out, "\nTensors")
		if len(rep.Shards) > 0 {
			row("  name\ttype\tshape\tbytes\tshard\toffset")
			for _, t := range rep.Tensors {
				row("  %s\t%s\t%v\t%d\t%d\t%d", printable(t.Name), t.Type, t.Shape, t.Bytes, t.Shard+1, t.Offset)
			}
			return tw.Flush()
		}
		row("  name\ttype\tshape\tbytes\toffset")
		for _, t := range rep.Tensors {
			row("  %s\t%s\t%v\t%d\t%d", printable(t.Name), t.Type, t.Shape, t.Bytes, t.Offset)
		}
		tw.Flush()
	}
	return nil
}

// Values longer than these are shortened unless --kv asks for everything.
const (
	shortArray  = 6
	shortString = 80
)

// formatValue renders a metadata value on one line: strings quoted, floats
// in shortest form, arrays as [a, b, ...] with their length.
func formatValue(v gguf.Value, full bool) string {
	if v.Type != gguf.TypeArray {
		return formatScalar(v.Any(), full)
	}
	rv := reflect.ValueOf(v.Any())
	n := rv.Len()
	show := n
	if !full {
		show = min(n, shortArray)
	}
	parts := make([]string, 0, show+1)
	for i := 0; i < show; i++ {
		e := rv.Index(i).Interface()
		if inner, ok := e.(gguf.Value); ok {
			parts = append(parts, formatValue(inner, full))
		} else {
			parts = append(parts, formatScalar(e, full))
		}
	}
	if show < n {
		parts = append(parts, "...")
	}
	return fmt.Sprintf("[%s] (%d)", strings.Join(parts, ", "), n)
}

func formatScalar(x any, full bool) string {
	switch s := x.(type) {
	case string:
		if !full && len(s) > shortString {
			return fmt.Sprintf("%q... (%d bytes)", s[:shortString], len(s))
		}
		return strconv.Quote(s)
	case float32:
		return strconv.FormatFloat(float64(s), 'g', -1, 32)
	case float64:
		if math.IsInf(s, 0) || math.IsNaN(s) {
			return fmt.Sprint(s)
		}
		return strconv.FormatFloat(s, 'g', -1, 64)
	}
	return fmt.Sprint(x)
}

// printable quotes a key or tensor name that would garble the table (a
// hostile file may put newlines or tabs in names).
func printable(s string) string {
	for _, r := range s {
		if !strconv.IsGraphic(r) || r == ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// thousands writes n with comma separators, for byte counts people read.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

package quant

import "fmt"

// dequantizers and quantizers are filled by each format's file (init), so
// that a type's whole definition lives in one place.
var (
	dequantizers [NumTypes]func(src []byte, dst []float32)
	quantizers   [NumTypes]func(src []float32, dst []byte, opt *QuantizeOptions)
)

// CanDequantize reports whether Dequantize supports t.
func CanDequantize(t Type) bool { return int(t) < NumTypes && dequantizers[t] != nil }

// CanQuantize reports whether Quantize supports t.
func CanQuantize(t Type) bool { return int(t) < NumTypes && quantizers[t] != nil }

// Dequantize decodes len(dst) weights of type t from src, exactly as ggml's
// to_float does. len(dst) must be a whole number of blocks and src exactly
// their size.
func Dequantize(t Type, src []byte, dst []float32) error {
	if !CanDequantize(t) {
		return fmt.Errorf("cannot dequantize type %s", t)
	}
	want, err := RowBytes(t, int64(len(dst)))
	if err != nil {
		return err
	}
	if int64(len(src)) != want {
		return fmt.Errorf("dequantize %s: %d bytes for %d weights, want %d", t, len(src), len(dst), want)
	}
	dequantizers[t](src, dst)
	return nil
}

// Q2Mode selects how Q2_0 picks each block's scale.
type Q2Mode int

const (
	// Q2Search tries candidate scales of both signs, scored with the fp16
	// scale the file will hold, refined by least squares (the default).
	Q2Search Q2Mode = iota
	// Q2GGML is ggml's rule, byte-identical to ggml's quantizer.
	Q2GGML
	// Q2Field is the rule used in the field: 9 positive candidates
	// d = {0.5 ... 1.0} x max|x| scored with the unrounded d (for comparison).
	Q2Field
)

// QuantizeOptions tunes the quantizers that search; nil means defaults.
type QuantizeOptions struct {
	Q2Mode       Q2Mode
	Q2Candidates int // candidate scales per sign for Q2Search; 0 means the default
	// Importance weights the squared error of each column (one value per
	// element of a row, len = row length), as llama.cpp's imatrix does.
	// nil means uniform weights.
	Importance []float32
	// RowLen is the row length when Importance is set; src is a whole number
	// of rows.
	RowLen int
}

// Quantize encodes src as type t into dst, which must be exactly the size of
// len(src) weights of t.
func Quantize(t Type, src []float32, dst []byte, opt *QuantizeOptions) error {
	if !CanQuantize(t) {
		return fmt.Errorf("cannot quantize to type %s", t)
	}
	want, err := RowBytes(t, int64(len(src)))
	if err != nil {
		return err
	}
	if int64(len(dst)) != want {
		return fmt.Errorf("quantize %s: %d bytes for %d weights, want %d", t, len(dst), len(src), want)
	}
	if opt != nil && opt.Importance != nil {
		if opt.RowLen <= 0 || len(opt.Importance) != opt.RowLen || len(src)%opt.RowLen != 0 {
			return fmt.Errorf("quantize %s: importance of %d values does not fit rows of %d", t, len(opt.Importance), opt.RowLen)
		}
	}
	quantizers[t](src, dst, opt)
	return nil
}

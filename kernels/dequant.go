package kernels

import (
	"fmt"

	"github.com/stratactl/stratactl/quant"
)

// Dependency direction: kernels imports quant (types, sizes, tables, and the
// reference dequantizers as the portable path); quant never imports kernels.
// Callers that want speed call kernels.Dequantize; quant.Dequantize stays the
// plain-Go definition that every vector path is tested against.

// Dequantize decodes len(dst) weights of type t from src, exactly as
// quant.Dequantize does (same bits), through a vector path when this CPU has
// one for t.
func Dequantize(t quant.Type, src []byte, dst []float32) error {
	return host.dequantize(t, src, dst)
}

func (k *kernelSet) dequantize(t quant.Type, src []byte, dst []float32) error {
	if int(t) >= len(k.dequant) || k.dequant[t] == nil {
		return quant.Dequantize(t, src, dst)
	}
	want, err := quant.RowBytes(t, int64(len(dst)))
	if err != nil {
		return err
	}
	if int64(len(src)) != want {
		return fmt.Errorf("dequantize %s: %d bytes for %d weights, want %d", t, len(src), len(dst), want)
	}
	if len(dst) > 0 {
		k.dequant[t](src, dst)
	}
	return nil
}

// HasVectorDequantize reports whether Dequantize uses a vector path for t
// on this CPU.
func HasVectorDequantize(t quant.Type) bool {
	return int(t) < len(host.dequant) && host.dequant[t] != nil
}

// DequantizeQ8_0 is Dequantize for Q8_0 (34-byte blocks of 32 weights).
func DequantizeQ8_0(src []byte, dst []float32) error { return Dequantize(quant.Q8_0, src, dst) }

// DequantizeIQ4NL is Dequantize for IQ4_NL (18-byte blocks of 32 weights).
func DequantizeIQ4NL(src []byte, dst []float32) error { return Dequantize(quant.IQ4_NL, src, dst) }

// DequantizeIQ3S is Dequantize for IQ3_S (110-byte blocks of 256 weights).
func DequantizeIQ3S(src []byte, dst []float32) error { return Dequantize(quant.IQ3_S, src, dst) }

// DequantizeQ2_0 is Dequantize for Q2_0 (18-byte blocks of 64 weights).
func DequantizeQ2_0(src []byte, dst []float32) error { return Dequantize(quant.Q2_0, src, dst) }

func fmtTypeError(t quant.Type) error { return fmt.Errorf("unknown ggml type %s", t) }

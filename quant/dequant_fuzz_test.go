package quant_test

import (
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// FuzzDequantize: any bytes, any type id, any length must give an error or
// a decode, never a panic. Run longer with
// go test ./quant -run '^$' -fuzz FuzzDequantize -fuzztime 1m
func FuzzDequantize(f *testing.F) {
	for _, t := range dequantTypes {
		ti, _ := quant.Info(t)
		f.Add(uint32(t), make([]byte, ti.BlockBytes), uint16(ti.BlockElements))
		seed := make([]byte, 2*ti.BlockBytes)
		for i := range seed {
			seed[i] = byte(i*29 + 0x7c)
		}
		f.Add(uint32(t), seed, uint16(2*ti.BlockElements))
	}
	f.Add(uint32(4), []byte{1, 2, 3}, uint16(1))
	f.Add(uint32(1<<31), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, typ uint32, src []byte, n uint16) {
		dst := make([]float32, n)
		err := quant.Dequantize(quant.Type(typ), src, dst)
		if err == nil {
			want, rerr := quant.RowBytes(quant.Type(typ), int64(n))
			if rerr != nil || want != int64(len(src)) {
				t.Fatalf("type %d: accepted %d bytes for %d weights", typ, len(src), n)
			}
		}
	})
}

//go:build linux

package kernels

import (
	"syscall"
	"testing"

	"github.com/stratactl/stratactl/quant"
)

// TestNoOverRead puts the source right before an inaccessible page, so a
// vector load past the last block faults instead of passing unnoticed.
func TestNoOverRead(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	for _, typ := range allTypes {
		ti, _ := quant.Info(typ)
		for blocks := 1; blocks <= 3; blocks++ {
			size := blocks * ti.BlockBytes
			src := mem[page-size : page : page]
			for i := range src {
				src[i] = byte(i * 37)
			}
			if err := Dequantize(typ, src, make([]float32, blocks*ti.BlockElements)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

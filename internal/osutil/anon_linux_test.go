package osutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// vmaField is field (e.g. "THPeligible") of the mapping of /proc/self/smaps
// that holds address p.
func vmaField(t *testing.T, p uintptr, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= p && p < hi
			continue
		}
		if v, ok := strings.CutPrefix(line, field+":"); ok && in {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s for the mapping of %#x in /proc/self/smaps", field, p)
	return ""
}

// TestMapAnon: MapAnon's bytes are n, zero, writable, aligned as asked, a
// large mapping starts on a huge page and is eligible for transparent huge
// pages (the MADV_HUGEPAGE advice; where THP is off entirely, only the
// alignment is checked), and the unmap function returns no error.
func TestMapAnon(t *testing.T) {
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	for _, c := range []struct{ n, align, want int }{{100, 64, 64}, {5000, 4096, 4096}, {3 * HugePage, 4096, HugePage}, {HugePage + 1, 512, HugePage}} {
		b, unmap, err := MapAnon(c.n, c.align)
		if err != nil {
			t.Fatal(err)
		}
		p := uintptr(unsafe.Pointer(&b[0]))
		if len(b) != c.n || cap(b) != c.n || p%uintptr(c.want) != 0 {
			t.Fatalf("MapAnon(%d, %d): %d bytes (cap %d) at %#x, want %d at a multiple of %d", c.n, c.align, len(b), cap(b), p, c.n, c.want)
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("MapAnon(%d, %d): byte %d is %d", c.n, c.align, i, v)
			}
		}
		for i := range b {
			b[i] = byte(i)
		}
		if c.want == HugePage && len(thp) > 0 && !bytes.Contains(thp, []byte("[never]")) {
			if got := vmaField(t, p, "THPeligible"); got != "1" {
				t.Fatalf("MapAnon(%d, %d): THPeligible %s (THP %q), want 1", c.n, c.align, got, strings.TrimSpace(string(thp)))
			}
		}
		if err := unmap(); err != nil {
			t.Fatal(err)
		}
	}
}

//go:build unix

package osutil

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// special makes a FIFO, a socket and (as root) a character device in dir,
// named after what they are.
func special(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	out["a FIFO"] = fifo
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	out["a socket"] = sock
	if os.Geteuid() == 0 {
		dev := filepath.Join(dir, "null")
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
		out["a character device"] = dev
	} else {
		t.Log("not root: no device node made (mknod needs root)")
	}
	out["a directory"] = dir
	return out
}

// TestOpenRegularRefusesSpecial: a FIFO (which would block the open until a
// writer came), a socket, a device or a folder is refused before it is
// read, and the error says what it is.
func TestOpenRegularRefusesSpecial(t *testing.T) {
	for what, p := range special(t, t.TempDir()) {
		_, _, err := OpenRegular(p)
		var nr *NotRegularError
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), what) || !strings.Contains(err.Error(), p) {
			t.Errorf("OpenRegular(%s): %v, want a NotRegularError naming %q", p, err, what)
		}
		if _, err := ReadFile(context.Background(), p, 1<<20); err == nil {
			t.Errorf("ReadFile(%s) accepted %s", p, what)
		}
	}
}

// TestOpenRegularFollowsLinks: a symlink to a regular file opens it.
func TestOpenRegularFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("abc"), 0o644)
	l := filepath.Join(dir, "l")
	os.Symlink(p, l)
	f, n, err := OpenRegular(l)
	if err != nil || n != 3 {
		t.Fatalf("OpenRegular(link): %v, %d bytes", err, n)
	}
	f.Close()
}

// TestReadFileBound: a file over the bound is refused from its size alone
// (a sparse file: no byte of it is read or allocated); one at the bound is
// read whole.
func TestReadFileBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxTextBytes+1); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(context.Background(), big, MaxTextBytes)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != MaxTextBytes+1 || !strings.Contains(err.Error(), big) {
		t.Fatalf("ReadFile of %d bytes with bound %d: %v", int64(MaxTextBytes+1), int64(MaxTextBytes), err)
	}
	want := bytes.Repeat([]byte("0123456789"), 3<<20/10)
	p := filepath.Join(dir, "exact")
	os.WriteFile(p, want, 0o644)
	got, err := ReadFile(context.Background(), p, int64(len(want)))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFile at its bound: %v (%d of %d bytes)", err, len(got), len(want))
	}
}

// TestReadFileCancelled: a cancelled read stops with the context's cause.
func TestReadFileCancelled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, make([]byte, 3*readChunk), 0o644)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stop")
	cancel(cause)
	if _, err := ReadFile(ctx, p, 1<<30); !errors.Is(err, cause) {
		t.Fatalf("ReadFile under a cancelled context: %v, want %v", err, cause)
	}
}

// TestOutputTarget: absent and regular paths are written in place, a
// symlink (chain) is written at its regular or absent target, and every
// other kind is refused, also behind a link.
func TestOutputTarget(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	os.WriteFile(reg, []byte("x"), 0o644)
	other := t.TempDir()
	far := filepath.Join(other, "far")
	os.WriteFile(far, []byte("y"), 0o644)
	l1 := filepath.Join(dir, "l1")
	os.Symlink(far, l1)
	l2 := filepath.Join(dir, "l2")
	os.Symlink("l1", l2) // relative, to a link
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(other, "new"), dangling)
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	for path, want := range map[string]string{
		filepath.Join(dir, "absent"): filepath.Join(dir, "absent"),
		reg:                          reg,
		l1:                           far,
		l2:                           far,
		dangling:                     filepath.Join(other, "new"),
	} {
		if got, err := OutputTarget(path); err != nil || got != want {
			t.Errorf("OutputTarget(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	for what, p := range special(t, t.TempDir()) {
		_, err := OutputTarget(p)
		if err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("OutputTarget(%s): %v, want a refusal naming %q", p, err, what)
		}
		link := filepath.Join(dir, "to-"+filepath.Base(p))
		os.Symlink(p, link)
		if _, err := OutputTarget(link); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("OutputTarget(link to %s): %v, want a refusal naming %q", p, err, what)
		}
	}
	for _, p := range []string{loop, filepath.Join(dir, "no", "such", "dir", "f")} {
		if _, err := OutputTarget(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("OutputTarget(%s): %v, want a refusal naming it", p, err)
		}
	}
}

// TestCheckDistinct: an output that is an input by another name (a symlink,
// a hard link, a folder's file) is refused; distinct files pass.
func TestCheckDistinct(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.WriteFile(in, []byte("x"), 0o644)
	sym := filepath.Join(dir, "sym")
	os.Symlink(in, sym)
	hard := filepath.Join(dir, "hard")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(dir, "pack")
	os.Mkdir(pack, 0o755)
	inPack := filepath.Join(pack, "model.gguf")
	os.WriteFile(inPack, []byte("y"), 0o644)
	other := filepath.Join(dir, "other")
	for _, c := range []struct {
		ins, outs []string
		bad       bool
	}{
		{[]string{in}, []string{in}, true},
		{[]string{in}, []string{sym}, true},
		{[]string{sym}, []string{hard}, true},
		{[]string{pack}, []string{inPack}, true},
		{[]string{in}, []string{other, other}, true},
		{[]string{in}, []string{other, dir + "/./other"}, true},
		{[]string{in}, []string{other, other + "2"}, false},
		{[]string{in, filepath.Join(dir, "missing")}, []string{other}, false},
		{[]string{in}, []string{filepath.Join(pack, "logits")}, false},
	} {
		err := CheckDistinct(c.ins, c.outs)
		if (err != nil) != c.bad {
			t.Errorf("CheckDistinct(%v, %v) = %v, want refused: %v", c.ins, c.outs, err, c.bad)
		}
	}
}

// TestSweepTemps: stale temporary files and folders of the output (our
// .NAME.tmp-DIGITS names, unlocked) are removed; a live run's locked one,
// another output's, links, and look-alike names are left alone.
func TestSweepTemps(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out.gguf")
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	staleFile := mk(".out.gguf.tmp-123456")
	staleDir := filepath.Join(dir, ".out.gguf.tmp-99")
	os.Mkdir(staleDir, 0o755)
	os.WriteFile(filepath.Join(staleDir, "model.experts"), []byte("x"), 0o644)
	keep := []string{
		mk(".out.gguf.tmp-notes"),
		mk(".out.gguf.tmp-"),
		mk("out.gguf.tmp-1"),
		mk(".other.gguf.tmp-1"),
		mk(".out.gguf.tmp-12.bak"),
		mk("out.gguf"),
	}
	victim := mk("victim")
	link := filepath.Join(dir, ".out.gguf.tmp-777")
	os.Symlink(victim, link)
	keep = append(keep, link, victim)
	live, err := CreateTemp(target) // a run still writing
	if err != nil {
		t.Fatal(err)
	}
	defer live.File.Close()
	keep = append(keep, live.Path)
	if strings.Contains(live.Path, staleFile) {
		t.Fatal("CreateTemp reused a stale name")
	}
	// CreateTemp swept already; run the sweep again with the live one held.
	removed := SweepTemps(target)
	slices.Sort(removed)
	if len(removed) != 0 {
		t.Errorf("second sweep removed %v, want nothing", removed)
	}
	for _, p := range []string{staleFile, staleDir} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale %s is still there", p)
		}
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	live.File.Close() // the run is gone: its file is now stale
	if got := SweepTemps(target); len(got) != 1 || got[0] != live.Path {
		t.Errorf("sweep after the run ended removed %v, want %s", got, live.Path)
	}
}

// TestCheckSpace: a need beyond the free bytes is refused, saying both.
func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	free, err := Free(dir)
	if err != nil || free <= 0 {
		t.Fatalf("Free(%s) = %d, %v", dir, free, err)
	}
	if err := CheckSpace(filepath.Join(dir, "out"), 1); err != nil {
		t.Errorf("1 byte: %v", err)
	}
	need := free + 1<<40
	err = CheckSpace(filepath.Join(dir, "out"), need)
	var ns *NoSpaceError
	if !errors.As(err, &ns) || ns.Need != need || ns.Free <= 0 || ns.Free > need {
		t.Fatalf("CheckSpace(%d) with %d free: %v", need, free, err)
	}
	if !strings.Contains(err.Error(), "needs") || !strings.Contains(err.Error(), "free") {
		t.Errorf("message %q does not say what is needed and free", err)
	}
}

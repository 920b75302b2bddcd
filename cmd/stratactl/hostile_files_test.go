//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/cli"
	"github.com/stratactl/stratactl/internal/osutil"
	"github.com/stratactl/stratactl/quant"
	"github.com/stratactl/stratactl/strata"
)

// The hostile suite's file cases (issue 11): what stratactl promises about
// the files it reads and writes, as the README states it.

// specialFile is a path that is not a regular file, and the words an error
// about it must hold.
type specialFile struct {
	name, path, kind string
}

// makeSpecial makes, in a fresh folder, a FIFO, a socket, a folder and, as
// root, character devices like /dev/null (1,3) and /dev/zero (1,5).
func makeSpecial(t *testing.T) []specialFile {
	t.Helper()
	dir := t.TempDir()
	var out []specialFile
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	out = append(out, specialFile{"fifo", fifo, "a FIFO"})
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	out = append(out, specialFile{"socket", sock, "a socket"})
	folder := filepath.Join(dir, "folder")
	os.Mkdir(folder, 0o755)
	out = append(out, specialFile{"folder", folder, "a directory"})
	if os.Geteuid() != 0 {
		t.Log("not root: no device nodes (mknod needs root); the FIFO, socket and folder cases still run")
		return out
	}
	for _, d := range []struct {
		name  string
		minor int
	}{{"null", 3}, {"zero", 5}} {
		p := filepath.Join(dir, d.name)
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|d.minor); err != nil {
			t.Fatal(err)
		}
		out = append(out, specialFile{d.name, p, "a character device"})
	}
	return out
}

// sameKind checks that a special file is still what it was.
func sameKind(t *testing.T, s specialFile) {
	t.Helper()
	st, err := os.Lstat(s.path)
	if err != nil {
		t.Fatalf("%s: %v", s.path, err)
	}
	want := map[string]fs.FileMode{"fifo": fs.ModeNamedPipe, "socket": fs.ModeSocket, "folder": fs.ModeDir,
		"null": fs.ModeDevice | fs.ModeCharDevice, "zero": fs.ModeDevice | fs.ModeCharDevice}[s.name]
	if st.Mode().Type() != want {
		t.Errorf("%s was replaced: now %v", s.path, st.Mode())
	}
}

// TestHostileOutputKinds (item 1): every command's output refuses a device,
// FIFO, socket or folder up front, naming it and what it is, and leaves it
// as it was.
func TestHostileOutputKinds(t *testing.T) {
	in := newHostileInputs(t)
	m := in.model
	cmds := []struct {
		name string
		args func(o, dir string) []string
	}{
		{"quantize", func(o, _ string) []string { return []string{"quantize", m, "-o", o, "--type", "q8_0"} }},
		{"dump", func(o, _ string) []string { return []string{"dump", m, "blk.0.ffn_up_exps.weight", "-o", o} }},
		{"run-logits", func(o, _ string) []string { return []string{"run", m, "--ids", in.ids, "-n", "2", "--logits", o} }},
		{"profile", func(o, _ string) []string {
			return []string{"profile", m, "--ids", in.ids, "--ctx", "16", "-o", o}
		}},
		{"prune", func(o, _ string) []string {
			return []string{"prune", m, "--profile", in.profile, "--keep", "4", "-o", o, "--keep-out", filepath.Join(filepath.Dir(o), "k.strp")}
		}},
		{"prune-keep-out", func(o, dir string) []string {
			return []string{"prune", m, "--profile", in.profile, "--keep", "4", "-o", filepath.Join(dir, "p.gguf"), "--keep-out", o}
		}},
		{"synth", func(o, _ string) []string {
			return []string{"synth", "-o", o, "--layers", "1", "--experts", "2", "--embd", "64", "--ff", "64"}
		}},
	}
	for _, s := range makeSpecial(t) {
		for _, c := range cmds {
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				want := []string{s.path, s.kind}
				expectFailure(t, hostileCase{want: want, args: func(out string) []string { return c.args(s.path, out) }})
				sameKind(t, s)
			})
		}
		t.Run("symlink-to-"+s.name, func(t *testing.T) {
			link := filepath.Join(t.TempDir(), "out.gguf")
			os.Symlink(s.path, link)
			expectFailure(t, hostileCase{want: []string{link, s.kind}, args: func(string) []string {
				return []string{"quantize", m, "-o", link, "--type", "q8_0"}
			}})
			sameKind(t, s)
		})
	}
}

// TestHostileOutputSymlink (item 1): an output given as a symlink to a
// regular file writes that file, atomically in its own folder; the link
// stays a link and no temporary file is left on either side.
func TestHostileOutputSymlink(t *testing.T) {
	in := newHostileInputs(t)
	far := t.TempDir()
	target := filepath.Join(far, "q.gguf")
	writeFile(t, target, []byte("old contents"))
	near := t.TempDir()
	link := filepath.Join(near, "q.gguf")
	if err := os.Symlink(filepath.Join("..", filepath.Base(far), "q.gguf"), link); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "quantize", in.model, "-o", link, "--type", "q8_0")
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symlink: %v %v", link, st.Mode(), err)
	}
	f, err := gguf.Open(target)
	if err != nil {
		t.Fatalf("the link's target is not the new GGUF: %v", err)
	}
	f.Close()
	if l := listTree(t, near); len(l) != 1 {
		t.Errorf("the link's folder holds %v, want only the link", l)
	}
	if l := listTree(t, far); len(l) != 1 {
		t.Errorf("the target's folder holds %v, want only the target", l)
	}
}

// TestHostileSpecialInputs (items 2, 3): a FIFO, socket, folder or device
// given as any path argument is refused at once (a FIFO never blocks, a
// device is never read), naming the path and what it is.
func TestHostileSpecialInputs(t *testing.T) {
	in := newHostileInputs(t)
	m := in.model
	cmds := []struct {
		name string
		args func(x, o string) []string
		// dirOK: a folder is a valid kind here (a pack); its error differs.
		dirOK bool
	}{
		{name: "inspect", dirOK: true, args: func(x, o string) []string { return []string{"inspect", x} }},
		{name: "dump", args: func(x, o string) []string { return []string{"dump", x, "t", "-o", filepath.Join(o, "w.f32")} }},
		{name: "quantize", args: func(x, o string) []string {
			return []string{"quantize", x, "-o", filepath.Join(o, "q.gguf"), "--type", "q8_0"}
		}},
		{name: "quantize-imatrix", args: func(x, o string) []string {
			return []string{"quantize", m, "--imatrix", x, "-o", filepath.Join(o, "q.gguf"), "--type", "q8_0"}
		}},
		{name: "pack", args: func(x, o string) []string { return []string{"pack", x, "-o", filepath.Join(o, "p")} }},
		{name: "pack-keep", args: func(x, o string) []string { return []string{"pack", m, "--keep-map", x, "-o", filepath.Join(o, "p")} }},
		{name: "pack-imatrix", args: func(x, o string) []string {
			return []string{"pack", m, "--imatrix", x, "-o", filepath.Join(o, "p")}
		}},
		{name: "verify-source", args: func(x, o string) []string { return []string{"verify", in.pack, "--source", x} }},
		{name: "verify-imatrix", args: func(x, o string) []string {
			return []string{"verify", in.pack, "--source", m, "--imatrix", x}
		}},
		{name: "run-model", dirOK: true, args: func(x, o string) []string { return []string{"run", x, "--ids", in.ids, "-n", "2"} }},
		{name: "run-ids", args: func(x, o string) []string { return []string{"run", m, "--ids", x, "-n", "2"} }},
		{name: "profile-model", dirOK: true, args: func(x, o string) []string {
			return []string{"profile", x, "--ids", in.ids, "--ctx", "16", "-o", filepath.Join(o, "p.strp")}
		}},
		{name: "profile-text", args: func(x, o string) []string {
			return []string{"profile", m, "--text", x, "--ctx", "16", "-o", filepath.Join(o, "p.strp")}
		}},
		{name: "profile-ids", args: func(x, o string) []string {
			return []string{"profile", m, "--ids", x, "--ctx", "16", "-o", filepath.Join(o, "p.strp")}
		}},
		{name: "prune-profile", args: func(x, o string) []string {
			return []string{"prune", m, "--profile", x, "--keep", "4", "-o", filepath.Join(o, "p.gguf")}
		}},
		{name: "prune-keep-map", args: func(x, o string) []string {
			return []string{"prune", m, "--keep-map", x, "-o", filepath.Join(o, "p.gguf")}
		}},
		{name: "eval-ref", dirOK: true, args: func(x, o string) []string { return []string{"eval", m, "--ref", x, "--ids", in.ids, "--ctx", "16"} }},
		{name: "eval-ids", args: func(x, o string) []string { return []string{"eval", m, "--ref", m, "--ids", x, "--ctx", "16"} }},
		{name: "eval-text", args: func(x, o string) []string { return []string{"eval", m, "--ref", m, "--text", x, "--ctx", "16"} }},
	}
	for _, s := range makeSpecial(t) {
		for _, c := range cmds {
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				want := []string{s.path, s.kind}
				if s.name == "folder" && c.dirOK {
					want = []string{s.path}
				}
				expectFailure(t, hostileCase{want: want, args: func(out string) []string { return c.args(s.path, out) }})
			})
		}
	}
}

// TestHostileOutputIsInput (item 4): no command writes over one of its own
// inputs, by the same name or another (symlink, hard link, a pack's file),
// and the input is left as it was.
func TestHostileOutputIsInput(t *testing.T) {
	in := newHostileInputs(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "m.gguf")
	copyFile(t, in.model, m)
	prof := filepath.Join(dir, "profile.strp")
	copyFile(t, in.profile, prof)
	sym := filepath.Join(dir, "sym.gguf")
	os.Symlink("m.gguf", sym)
	hard := filepath.Join(dir, "hard.gguf")
	if err := os.Link(m, hard); err != nil {
		t.Fatal(err)
	}
	pack := copyPack(t, in.pack)
	packModel := filepath.Join(pack, "model.gguf")
	snapshot := func() map[string][]byte {
		s := map[string][]byte{}
		for _, p := range []string{m, prof, packModel} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			s[p] = b
		}
		return s
	}
	before := snapshot()
	cases := []struct {
		name, out string
		args      []string
	}{
		{"profile-o-model", m, []string{"profile", m, "--ids", in.ids, "--ctx", "16", "-o", m}},
		{"run-logits-model", m, []string{"run", m, "--ids", in.ids, "-n", "2", "--logits", m}},
		{"run-logits-pack-model", packModel, []string{"run", pack, "--ids", in.ids, "-n", "2", "--logits", packModel}},
		{"prune-o-model", m, []string{"prune", m, "--profile", prof, "--keep", "4", "-o", m}},
		{"prune-keep-out-profile", prof, []string{"prune", m, "--profile", prof, "--keep", "4", "-o", filepath.Join(dir, "p.gguf"), "--keep-out", prof}},
		{"prune-keep-out-is-o", filepath.Join(dir, "p.gguf"), []string{"prune", m, "--profile", prof, "--keep", "4", "-o", filepath.Join(dir, "p.gguf"), "--keep-out", filepath.Join(dir, "p.gguf")}},
		{"quantize-o-symlink", sym, []string{"quantize", m, "-o", sym, "--type", "q8_0"}},
		{"quantize-o-hard-link", hard, []string{"quantize", sym, "-o", hard, "--type", "q8_0"}},
		{"dump-o-hard-link", hard, []string{"dump", m, "blk.0.ffn_up_exps.weight", "-o", hard}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectFailure(t, hostileCase{want: []string{c.out + ": ", "the output"}, args: func(string) []string { return c.args }})
		})
	}
	for p, b := range snapshot() {
		if !bytes.Equal(b, before[p]) {
			t.Errorf("%s changed", p)
		}
	}
}

// TestHostileStaleTemps (item 7): a run to an output removes the temporary
// files a killed run to the same output left (.NAME.tmp-DIGITS, unlocked),
// and nothing else: not a live run's, not another output's, not a
// look-alike name.
func TestHostileStaleTemps(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.gguf")
	stale := writeFile(t, filepath.Join(dir, ".s.gguf.tmp-2718281828"), bytes.Repeat([]byte{1}, 1<<16))
	keep := []string{
		writeFile(t, filepath.Join(dir, ".s.gguf.tmp-mine"), []byte("x")),
		writeFile(t, filepath.Join(dir, ".t.gguf.tmp-1"), []byte("x")),
		writeFile(t, filepath.Join(dir, "s.gguf.tmp-1"), []byte("x")),
		writeFile(t, filepath.Join(dir, "notes.txt"), []byte("x")),
	}
	live, err := osutil.CreateTemp(out) // another run still writing out
	if err != nil {
		t.Fatal(err)
	}
	defer live.File.Close()
	keep = append(keep, live.Path)
	mustRun(t, "synth", "-o", out, "--layers", "1", "--experts", "2", "--embd", "64", "--ff", "64")
	if _, err := os.Lstat(stale); err == nil {
		t.Errorf("the stale temporary file %s is still there", stale)
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
}

// TestHostileNoSpace (item 8): an output larger than the free space is
// refused before any work, saying how much it needs and how much is free.
func TestHostileNoSpace(t *testing.T) {
	// About 160 TiB of planned experts: larger than any test machine's disk.
	expectFailure(t, hostileCase{want: []string{"needs", "bytes", "free"}, args: func(o string) []string {
		return []string{"synth", "-o", filepath.Join(o, "huge.gguf"), "--layers", "200", "--experts", "4096", "--embd", "8192", "--ff", "8192", "--type", "q8_0"}
	}})
	t.Run("pack-on-small-fs", func(t *testing.T) {
		in := newHostileInputs(t)
		small := t.TempDir()
		if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=64k"); err != nil {
			t.Skipf("cannot mount a small tmpfs here (%v): needs root and CAP_SYS_ADMIN", err)
		}
		defer syscall.Unmount(small, 0)
		var stdout, stderr bytes.Buffer
		p := filepath.Join(small, "pack")
		code := run(context.Background(), cli.Test(&stdout, &stderr), []string{"pack", in.model, "-o", p})
		if code == 0 || !strings.Contains(stderr.String(), "needs") || !strings.Contains(stderr.String(), "free") {
			t.Errorf("pack into 64 KiB: exit %d, %s", code, stderr.String())
		}
		if l := listTree(t, small); len(l) != 0 {
			t.Errorf("left %v", l)
		}
	})
}

// TestHostileSignalHelper is the child process of TestHostileSIGHUP: it
// runs the command line in STRATACTL_SIGNAL_ARGS as main does.
func TestHostileSignalHelper(t *testing.T) {
	raw := os.Getenv("STRATACTL_SIGNAL_ARGS")
	if raw == "" {
		return // only as a child
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	ctx, stop := cli.SignalContext(context.Background())
	code := run(ctx, cli.Default(), args)
	stop()
	os.Exit(code)
}

// TestHostileSIGHUP (item 7): SIGHUP (a closed terminal) stops a conversion
// the way SIGINT and SIGTERM do, with its temporary output removed.
func TestHostileSIGHUP(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.gguf")
	// About 1.6 GB planned: long enough to be caught while writing.
	args, _ := json.Marshal([]string{"synth", "-o", out, "--layers", "8", "--experts", "64", "--embd", "1024", "--ff", "1024", "--type", "q8_0"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileSignalHelper$")
	cmd.Env = append(os.Environ(), "STRATACTL_SIGNAL_ARGS="+string(args))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Wait for the temporary output to hold data, then hang up.
	sent := false
	for !sent {
		select {
		case err := <-exited:
			t.Fatalf("the conversion ended (%v) before it was caught writing: %s", err, stderr.String())
		default:
		}
		if tmp, _ := filepath.Glob(filepath.Join(dir, osutil.TempPattern(out))); len(tmp) == 1 {
			if st, err := os.Stat(tmp[0]); err == nil && st.Size() > 0 {
				cmd.Process.Signal(syscall.SIGHUP)
				sent = true
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-exited
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("killed by %v instead of stopping: %s", ws.Signal(), stderr.String())
	}
	if ws.ExitStatus() == 0 {
		t.Fatalf("exit 0 after SIGHUP")
	}
	if l := listTree(t, dir); len(l) != 0 {
		t.Errorf("SIGHUP left %v (stderr %s)", l, stderr.String())
	}
}

// writeImatrix writes a GGUF importance matrix for every expert tensor of
// model (per expert: column i weighs 1+i), as llama-imatrix lays it out.
func writeImatrix(t *testing.T, model, path string) {
	t.Helper()
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var specs []gguf.TensorSpec
	var data [][]float32
	for _, ti := range f.Tensors {
		if len(ti.Dims) != 3 || !strings.Contains(ti.Name, "_exps.") {
			continue
		}
		ne0, n := ti.Dims[0], ti.Dims[2]
		sum := make([]float32, ne0*n)
		for i := range sum {
			sum[i] = float32(1 + int64(i)%ne0)
		}
		cnt := make([]float32, n)
		for i := range cnt {
			cnt[i] = 1
		}
		specs = append(specs, gguf.TensorSpec{Name: ti.Name + ".in_sum2", Type: quant.F32, Dims: []int64{ne0, n}},
			gguf.TensorSpec{Name: ti.Name + ".counts", Type: quant.F32, Dims: []int64{1, n}})
		data = append(data, sum, cnt)
	}
	ds, err := gguf.Array([]string{"synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	kv := []gguf.KV{{Key: "general.type", Value: gguf.String("imatrix")}, {Key: "imatrix.datasets", Value: ds},
		{Key: "imatrix.chunk_count", Value: gguf.Uint32(1)}, {Key: "imatrix.chunk_size", Value: gguf.Uint32(16)}}
	w, err := gguf.Create(path, kv, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		b := make([]byte, 4*len(data[i]))
		for j, v := range data[i] {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
		}
		if err := w.WriteTensor(s.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestHostileImatrixOfOtherExperts (item 5): an importance matrix is applied
// only to the experts it was collected on: given a pruned model (4 of 8
// experts), the source's 8-expert imatrix applies through the pruned file's
// record of its original experts (strata.source.keep), and one of a model
// with another expert count (6) is refused, naming the counts, never
// applied to the wrong experts.
func TestHostileImatrixOfOtherExperts(t *testing.T) {
	in := newHostileInputs(t)
	im := filepath.Join(t.TempDir(), "imatrix.gguf")
	writeImatrix(t, in.model, im)
	// The imatrix fits the model it describes, and the model pruned from it.
	mustRun(t, "pack", in.model, "--imatrix", im, "-o", filepath.Join(t.TempDir(), "pack"))
	mustRun(t, "pack", in.pruned, "--imatrix", im, "-o", filepath.Join(t.TempDir(), "pack"))
	mustRun(t, "quantize", in.pruned, "--imatrix", im, "--type", "q2_0", "-o", filepath.Join(t.TempDir(), "q.gguf"))
	other := filepath.Join(t.TempDir(), "moe6.gguf")
	mustRun(t, "synth", "-o", other, "--layers", "2", "--experts", "6", "--experts-used", "2",
		"--embd", "64", "--ff", "64", "--type", "q8_0", "--seed", "7")
	im6 := filepath.Join(t.TempDir(), "imatrix6.gguf")
	writeImatrix(t, other, im6)
	pruned := []string{im6, "6 experts", "4 experts", "4 or 8"}
	for _, c := range []struct{ args, want []string }{
		{[]string{"pack", in.pruned, "--imatrix", im6, "-o", "OUT/pack"}, pruned},
		{[]string{"quantize", in.pruned, "--imatrix", im6, "--type", "q2_0", "-o", "OUT/q.gguf"}, pruned},
		{[]string{"pack", in.model, "--imatrix", im6, "-o", "OUT/pack"}, []string{im6, "6 experts", "8 experts", "collected on"}},
	} {
		expectFailure(t, hostileCase{want: c.want, args: func(o string) []string {
			a := slices.Clone(c.args)
			for i := range a {
				a[i] = strings.Replace(a[i], "OUT", o, 1)
			}
			return a
		}})
	}
}

// TestHostileQuantizeUnconvertible (item 11): --tensors that selects only
// tensors quantize leaves as they are says which and why, instead of
// writing a copy of the input in silence.
func TestHostileQuantizeUnconvertible(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plain.gguf")
	specs := []gguf.TensorSpec{{Name: "blk.0.attn_q.bias", Type: quant.F32, Dims: []int64{64, 2}}, {Name: "blk.0.attn_norm.weight", Type: quant.F32, Dims: []int64{64}}}
	w, err := gguf.Create(p, []gguf.KV{{Key: "general.architecture", Value: gguf.String("llama")}}, specs)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteTensor(specs[0].Name, make([]byte, 4*128))
	w.WriteTensor(specs[1].Name, make([]byte, 4*64))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	expectFailure(t, hostileCase{want: []string{p, "blk.0.attn_q.bias", "not a weight matrix", "blk.0.attn_norm.weight", "1-D"}, args: func(o string) []string {
		return []string{"quantize", p, "--tensors", "^blk", "--type", "q8_0", "-o", filepath.Join(o, "q.gguf")}
	}})
}

// TestHostileVerifyInputsElsewhere (item 6): a pack made with an importance
// matrix given by a relative path verifies against its source from any
// folder (the manifest records inputs by absolute path and sha256, and
// verify finds them by hash); with the matrix gone, verify reports one
// missing input, not damage to the pack's experts.
func TestHostileVerifyInputsElsewhere(t *testing.T) {
	in := newHostileInputs(t)
	work := t.TempDir()
	writeImatrix(t, in.model, filepath.Join(work, "imatrix.gguf"))
	t.Chdir(work)
	pack := filepath.Join(t.TempDir(), "pack")
	mustRun(t, "pack", in.model, "--imatrix", "imatrix.gguf", "-o", pack)
	t.Chdir(t.TempDir())
	mustRun(t, "verify", pack, "--source", in.model)

	// Moved beside the pack: found there by its hash.
	beside := filepath.Join(filepath.Dir(pack), "imatrix.gguf")
	if err := os.Rename(filepath.Join(work, "imatrix.gguf"), beside); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "verify", pack, "--source", in.model)

	// Gone: one missing input, the experts still compared by their error.
	os.Remove(beside)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), cli.Test(&stdout, &stderr), []string{"verify", "--json", pack, "--source", in.model})
	var rep struct {
		OK       bool `json:"ok"`
		Failures []struct {
			Check string `json:"check"`
			Msg   string `json:"message"`
		} `json:"failures"`
		Omitted int `json:"failures_omitted"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, stdout.String())
	}
	if code == 0 || rep.OK || len(rep.Failures) != 1 || rep.Omitted != 0 || rep.Failures[0].Check != "inputs" || !strings.Contains(rep.Failures[0].Msg, "missing") {
		t.Fatalf("verify with the imatrix gone: exit %d, %+v", code, rep)
	}
}

// TestHostileInspectPack (item 11): inspect describes our own pack (the
// folder or its model.gguf) instead of calling its experts unsupported.
func TestHostileInspectPack(t *testing.T) {
	in := newHostileInputs(t)
	for _, p := range []string{in.pack, filepath.Join(in.pack, "model.gguf"), in.packKeep} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), cli.Test(&stdout, &stderr), []string{"inspect", p}); code != 0 {
			t.Fatalf("inspect %s: exit %d: %s", p, code, stderr.String())
		}
		if s := stdout.String(); strings.Contains(s, "not usable") || !strings.Contains(s, "Pack (strata format") || !strings.Contains(s, "model.experts") {
			t.Errorf("inspect %s does not describe the pack:\n%s", p, s)
		}
		stdout.Reset()
		if code := run(context.Background(), cli.Test(&stdout, &stderr), []string{"inspect", "--json", p}); code != 0 {
			t.Fatalf("inspect --json %s: exit %d: %s", p, code, stderr.String())
		}
		var rep struct {
			MoEError string `json:"moe_error"`
			Pack     *struct {
				Layers, Experts, SourceExperts int
				PartTypes                      []string `json:"part_types"`
				Problem                        string
			} `json:"pack"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		want := 8
		if p == in.packKeep {
			want = 4
		}
		if rep.MoEError != "" || rep.Pack == nil || rep.Pack.Problem != "" || rep.Pack.Layers != 2 || rep.Pack.Experts != want || len(rep.Pack.PartTypes) != 3 {
			t.Errorf("inspect --json %s: moe_error %q, pack %+v", p, rep.MoEError, rep.Pack)
		}
	}
}

// withGroups rewrites model with DeepSeek-V3's grouped-routing keys added
// ({arch}.expert_group_count, expert_group_used_count).
func withGroups(t *testing.T, model, out string, groups, used uint32) {
	t.Helper()
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := append(slices.Clone(f.KV), gguf.KV{Key: f.ArchKey("expert_group_count"), Value: gguf.Uint32(groups)},
		gguf.KV{Key: f.ArchKey("expert_group_used_count"), Value: gguf.Uint32(used)})
	w, err := gguf.Create(out, kv, f.Specs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		if err := w.CopyTensor(f.Tensors[i].Name, f.SectionReader(&f.Tensors[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestHostileGroupedRouting (item 9): a model routing by expert groups
// (8 experts in 2 groups of 4, 1 group per token, 2 experts per token)
// prunes and packs with a group-balanced keep map (2 from each group), the
// group keys preserved; any other keep is refused by both, naming the group.
func TestHostileGroupedRouting(t *testing.T) {
	in := newHostileInputs(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "grouped.gguf")
	withGroups(t, in.model, m, 2, 1)
	f, err := gguf.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	moe, err := f.MoE()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	blocks := moe.LayerBlocks()
	keepMap := func(name string, ids ...uint32) string {
		k := &strata.Keep{NExpert: 8, Layers: blocks}
		for range blocks {
			k.Keep = append(k.Keep, ids)
			k.Rank = append(k.Rank, nil)
		}
		p := filepath.Join(dir, name)
		if err := strata.WriteKeep(p, k); err != nil {
			t.Fatal(err)
		}
		return p
	}
	balanced := keepMap("balanced.strp", 1, 3, 4, 6)
	unbalanced := keepMap("unbalanced.strp", 0, 1, 2, 4)

	pruned := filepath.Join(dir, "pruned.gguf")
	mustRun(t, "prune", m, "--keep-map", balanced, "-o", pruned)
	pack := filepath.Join(dir, "pack")
	mustRun(t, "pack", m, "--keep-map", balanced, "-o", pack)
	for _, p := range []string{pruned, filepath.Join(pack, "model.gguf")} {
		g, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := g.Uint32(g.ArchKey("expert_count"))
		gc, _ := g.Uint32(g.ArchKey("expert_group_count"))
		gu, _ := g.Uint32(g.ArchKey("expert_group_used_count"))
		g.Close()
		if n != 4 || gc != 2 || gu != 1 {
			t.Errorf("%s: expert_count %d, expert_group_count %d, expert_group_used_count %d; want 4, 2, 1", p, n, gc, gu)
		}
	}
	mustRun(t, "verify", pack, "--source", m)

	// Chosen from a profile: the best 2 of each group.
	chosen := filepath.Join(dir, "chosen.gguf")
	mustRun(t, "prune", m, "--profile", in.profile, "--keep", "4", "-o", chosen)
	k, err := strata.ReadKeep(filepath.Join(dir, "chosen.keep.strp"))
	if err != nil {
		t.Fatal(err)
	}
	for l, ids := range k.Keep {
		var per [2]int
		for _, e := range ids {
			per[e/4]++
		}
		if per != [2]int{2, 2} {
			t.Errorf("block %d keeps %v from a profile: %v per group, want 2 and 2", k.Layers[l], ids, per)
		}
	}

	for _, args := range [][]string{
		{"prune", m, "--keep-map", unbalanced, "-o", "OUT/p.gguf"},
		{"pack", m, "--keep-map", unbalanced, "-o", "OUT/pack"},
	} {
		expectFailure(t, hostileCase{want: []string{m, "expert_group_count", "group 0", "group-balanced"}, args: func(o string) []string {
			a := slices.Clone(args)
			for i := range a {
				a[i] = strings.Replace(a[i], "OUT", o, 1)
			}
			return a
		}})
	}
}

// TestHostileVerifyPrunedWithKeepMap (item 11): verify PRUNED --source SRC
// --keep-map compares each kept expert with its source expert, and passes;
// without the keep map the shape failure says to give it; a flipped byte in
// a kept expert is found.
func TestHostileVerifyPrunedWithKeepMap(t *testing.T) {
	in := newHostileInputs(t)
	mustRun(t, "verify", in.pruned, "--source", in.model, "--keep-map", in.keepMap)
	expectFailure(t, hostileCase{stdoutReport: true, want: []string{"--keep-map"}, args: func(string) []string {
		return []string{"verify", in.pruned, "--source", in.model}
	}})
	// Another keep map (the identity) does not fit the pruned shapes.
	identity := filepath.Join(t.TempDir(), "all.strp")
	k, err := strata.ReadKeep(in.keepMap)
	if err != nil {
		t.Fatal(err)
	}
	strata.WriteKeep(identity, strata.IdentityKeep(k.Layers, int(k.NExpert)))
	if slices.Equal(k.Keep[0], []uint32{0, 1, 2, 3}) && slices.Equal(k.Keep[1], []uint32{0, 1, 2, 3}) {
		t.Fatal("the pruned model keeps experts 0-3: the mapping would not be tested")
	}
	expectFailure(t, hostileCase{stdoutReport: true, want: []string{"ne"}, args: func(string) []string {
		return []string{"verify", in.pruned, "--source", in.model, "--keep-map", identity}
	}})
	// A byte of a kept expert changed: found.
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	copyFile(t, in.pruned, bad)
	f, err := gguf.Open(bad)
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := f.Tensor("blk.1.ffn_down_exps.weight")
	at := f.DataStart(ti) + ti.Size - 7
	f.Close()
	flipByte(t, bad, at)
	expectFailure(t, hostileCase{stdoutReport: true, want: []string{"blk.1.ffn_down_exps.weight"}, args: func(string) []string {
		return []string{"verify", bad, "--source", in.model, "--keep-map", in.keepMap}
	}})
}

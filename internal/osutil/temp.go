package osutil

import (
	"os"
	"path/filepath"
	"regexp"
)

// TempPattern is the name of the temporary file or folder an output is
// written under before it is renamed into place: .NAME.tmp-DIGITS beside
// the target NAME. Only names of this form are ever swept.
func TempPattern(target string) string { return "." + filepath.Base(target) + ".tmp-*" }

// isTempOf reports whether name is one of our temporary names for target.
func isTempOf(name, target string) bool {
	re := `^\.` + regexp.QuoteMeta(filepath.Base(target)) + `\.tmp-[0-9]+$`
	ok, _ := regexp.MatchString(re, name)
	return ok
}

// Temp is a temporary file or folder of an output, locked (flock) for as
// long as the run that made it lives, so that a later run can tell it from
// one still being written.
type Temp struct {
	Path string
	File *os.File // the file; for a folder, its open handle holding the lock
	dir  bool
}

// CreateTemp sweeps the stale temporary files of target (SweepTemps) and
// creates and locks a new one in target's folder.
func CreateTemp(target string) (*Temp, error) {
	SweepTemps(target)
	dir := filepath.Dir(target)
	f, err := os.CreateTemp(dir, TempPattern(target))
	if err != nil {
		return nil, err
	}
	if err := lock(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &Temp{Path: f.Name(), File: f}, nil
}

// MkdirTemp is CreateTemp for an output folder.
func MkdirTemp(target string) (*Temp, error) {
	SweepTemps(target)
	p, err := os.MkdirTemp(filepath.Dir(target), TempPattern(target))
	if err != nil {
		return nil, err
	}
	d, err := os.Open(p)
	if err == nil {
		err = lock(d)
		if err != nil {
			d.Close()
		}
	}
	if err != nil {
		os.Remove(p)
		return nil, err
	}
	return &Temp{Path: p, File: d, dir: true}, nil
}

// Release closes a temporary folder's handle (and so its lock), after it has
// been renamed into place or removed.
func (t *Temp) Release() {
	if t.dir && t.File != nil {
		t.File.Close()
		t.File = nil
	}
}

// SweepTemps removes the temporary files and folders of target that a run
// killed before it could clean up left behind: names of the form
// .NAME.tmp-DIGITS beside target, regular files or folders (never a link),
// not locked by a live run. It returns what it removed. Nothing else is
// touched.
func SweepTemps(target string) []string {
	dir := filepath.Dir(target)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		if !isTempOf(e.Name(), target) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		st, err := os.Lstat(p)
		if err != nil || !(st.Mode().IsRegular() || st.IsDir()) {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDONLY|oNonblock, 0)
		if err != nil {
			continue
		}
		if ost, err := f.Stat(); err != nil || !os.SameFile(st, ost) {
			f.Close()
			continue
		}
		if !tryLock(f) {
			f.Close() // a live run holds it
			continue
		}
		if st.IsDir() {
			err = os.RemoveAll(p)
		} else {
			err = os.Remove(p)
		}
		f.Close()
		if err == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

package osutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxLinks bounds how many symbolic links OutputTarget follows (the
// kernel's own limit is 40).
const maxLinks = 40

// OutputTarget checks an output path and returns the file to write: path
// itself when it is absent or a regular file, the file a symbolic link (or
// chain of them) ends at when that is a regular file or absent. Anything
// else there (a device, FIFO, socket or directory) is refused, as is a
// missing folder, so that a command fails before it does any work.
func OutputTarget(path string) (string, error) {
	target := path
	for range maxLinks {
		st, err := os.Lstat(target)
		if errors.Is(err, fs.ErrNotExist) {
			dir := filepath.Dir(target)
			ds, err := os.Stat(dir)
			if err != nil {
				return "", fmt.Errorf("%s: cannot create: %w", path, unwrapPath(err))
			}
			if !ds.IsDir() {
				return "", fmt.Errorf("%s: cannot create: %s is not a directory", path, dir)
			}
			return target, nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, unwrapPath(err))
		}
		m := st.Mode()
		switch {
		case m.IsRegular():
			return target, nil
		case m&fs.ModeSymlink != 0:
			link, err := os.Readlink(target)
			if err != nil {
				return "", fmt.Errorf("%s: %w", path, unwrapPath(err))
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(target), link)
			}
			target = link
		default:
			e := &NotRegularError{Path: path, Mode: m, Output: true}
			if target != path {
				e.Path = path + " -> " + target
			}
			return "", e
		}
	}
	return "", fmt.Errorf("%s: more than %d symbolic links", path, maxLinks)
}

// CheckOutputs checks every output path up front (OutputTarget).
func CheckOutputs(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := OutputTarget(p); err != nil {
			return err
		}
	}
	return nil
}

// unwrapPath drops an os.PathError's own path, for errors that name the
// path the user gave instead.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CheckDistinct refuses a command whose output is one of its inputs: the
// same file (device and inode, links resolved) or, for an output not yet
// there, the same path as another output. Writing it would replace the
// input while it is read, or one output with another. Inputs that do not
// exist are left to their readers to report. A folder among the inputs
// stands for the files directly in it (a pack).
func CheckDistinct(inputs, outputs []string) error {
	type in struct {
		path string
		st   fs.FileInfo
	}
	var ins []in
	add := func(p string) {
		if st, err := os.Stat(p); err == nil {
			ins = append(ins, in{p, st})
		}
	}
	for _, p := range inputs {
		if p == "" {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if st.IsDir() {
			ents, _ := os.ReadDir(p)
			for _, e := range ents {
				add(filepath.Join(p, e.Name()))
			}
			continue
		}
		ins = append(ins, in{p, st})
	}
	seen := map[string]string{}
	var outs []in
	for _, o := range outputs {
		if o == "" {
			continue
		}
		target, err := OutputTarget(o)
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(target)
		if err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
		if prev, ok := seen[abs]; ok {
			return fmt.Errorf("%s: the same file as the output %s", o, prev)
		}
		seen[abs] = o
		ost, err := os.Stat(target)
		if err != nil {
			continue // absent: no input can be it
		}
		for _, p := range outs {
			if os.SameFile(ost, p.st) {
				return fmt.Errorf("%s: the same file as the output %s", o, p.path)
			}
		}
		outs = append(outs, in{o, ost})
		for _, i := range ins {
			if os.SameFile(ost, i.st) {
				return fmt.Errorf("%s: the output is the input %s (it would be replaced while read)", o, i.path)
			}
		}
	}
	return nil
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stratactl/stratactl/internal/testutil"
)

// TestDocsUseCurrentFlags: every command line of the README and docs/ that
// runs stratactl names only flags its command has, so a renamed flag cannot
// live on in a recorded command (each figure's command must still run).
func TestDocsUseCurrentFlags(t *testing.T) {
	root := testutil.ModuleRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	// A command runs from "stratactl " to the end of its code span: a
	// backtick, a shell comment, a pipe or the end of the line.
	cmdRE := regexp.MustCompile("stratactl ([a-z][a-z0-9]*(?: [a-z][a-z0-9]*)?)([^`#|]*)")
	flagRE := regexp.MustCompile(`(?:^|\s)(--[a-z][a-z0-9-]*|-[a-zA-Z])\b`)
	cmds := allCommands()
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, m := range cmdRE.FindAllStringSubmatch(line, -1) {
				words := strings.Fields(m[1])
				c, ok := cmds[m[1]]
				if !ok && len(words) == 2 {
					c, ok = cmds[words[0]]
				}
				if !ok {
					continue // prose ("stratactl is ..."), or a group like "bench"
				}
				for _, f := range flagRE.FindAllStringSubmatch(m[2], -1) {
					name := f[1]
					var found bool
					if strings.HasPrefix(name, "--") {
						found = c.Flags().Lookup(name[2:]) != nil || name == "--json" || name == "--help"
					} else {
						found = c.Flags().ShorthandLookup(name[1:]) != nil || name == "-h"
					}
					checked++
					if !found {
						t.Errorf("%s:%d: stratactl %s has no %s: %s", filepath.Base(file), n+1, c.Name(), name, strings.TrimSpace(line))
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d flags checked: the scan misses the docs' commands", checked)
	}
}

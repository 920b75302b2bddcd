package main

import (
	"github.com/stratactl/stratactl/gguf"
	"github.com/stratactl/stratactl/internal/osutil"
)

// checkFiles is every command's check of the files it names, made before
// any work: each output is absent, a regular file or a symlink to one
// (osutil.OutputTarget), and none is one of the inputs or another output
// (osutil.CheckDistinct). Model inputs stand for all their shards; outputs
// are as gguf.OutputPaths lists them.
func checkFiles(inputs, outputs []string) error {
	var ins []string
	for _, p := range inputs {
		if p != "" {
			ins = append(ins, gguf.ModelPaths(p)...)
		}
	}
	if err := osutil.CheckOutputs(outputs...); err != nil {
		return err
	}
	return osutil.CheckDistinct(ins, outputs)
}

// outputs lists the files a GGUF output at path with split options may
// replace.
func outputs(path string, split gguf.SplitOptions) []string {
	if path == "" {
		return nil
	}
	return gguf.OutputPaths(path, split)
}

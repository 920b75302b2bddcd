package bench

import (
	"os"
	"time"

	"github.com/stratactl/stratactl/engine"
)

// synthPack is a synthetic pack written for a benchmark (bench decode,
// bench prefill) into a new folder of its own.
type synthPack struct {
	spec    engine.SynthSpec // resolved
	dir     string
	size    int64 // experts file bytes
	seconds float64
	cleanup []func()
}

// writeSynthPack resolves sp and writes its pack into a new folder inside
// dir (the system's temp folder when empty; made, and removed after, when
// absent), so that removing it afterwards can never remove a user's files;
// remove takes both away unless keep.
func writeSynthPack(sp engine.SynthSpec, dir string, keep bool, bench string, logf func(string, ...any)) (*synthPack, error) {
	if err := sp.Resolve(); err != nil {
		return nil, err
	}
	size, err := sp.SynthBytes()
	if err != nil {
		return nil, err
	}
	p := &synthPack{spec: sp, size: size}
	if dir != "" {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if !keep {
				p.cleanup = append(p.cleanup, func() { os.Remove(dir) }) // made here, so removed here
			}
		}
	}
	if p.dir, err = os.MkdirTemp(dir, "stratactl-bench-"+bench+"-"); err != nil {
		p.remove()
		return nil, err
	}
	if !keep {
		d := p.dir
		p.cleanup = append(p.cleanup, func() { os.RemoveAll(d) })
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	logf("writing a synthetic pack of %.1f MB to %s", float64(size)/1e6, p.dir)
	t0 := time.Now()
	if err := engine.WriteSyntheticPack(p.dir, sp); err != nil {
		p.remove()
		return nil, err
	}
	p.seconds = time.Since(t0).Seconds()
	return p, nil
}

// remove deletes what writeSynthPack made, the pack before its parent.
func (p *synthPack) remove() {
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		p.cleanup[i]()
	}
}

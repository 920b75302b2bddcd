package calib

import (
	"os"
	"sort"
	"sync"

	"github.com/stratactl/stratactl/gguf"
)

// prefetchAhead is how many layers beyond the one running the read-ahead
// may be.
const prefetchAhead = 2

// prefetchChunk is the bytes of one read-ahead request.
const prefetchChunk = 16 << 20

// prefetcher reads the model's layers into the page cache ahead of the
// calibration run's first batch: the run touches every byte of every layer
// (random and real tokens reach every expert), through the mapping's page
// faults, which read a cold model at a fraction of the disk's rate while
// the cores wait. Layer l is asked for (adviseWillNeed, no copy) once the
// run reached layer l-prefetchAhead. It changes no result.
type prefetcher struct {
	mu     sync.Mutex
	cond   *sync.Cond
	at     int // the layer the run is in
	stop   bool
	files  map[string]*os.File
	layers [][]span // per layer: file ranges in file order
	done   chan struct{}
}

type span struct {
	path     string
	off, end int64
}

// newPrefetcher plans the read-ahead of f's blocks 0..layers-1 (nil when
// the system offers none, or nothing is to be read).
func newPrefetcher(f *gguf.File, layers int) *prefetcher {
	if !canAdvise {
		return nil
	}
	p := &prefetcher{files: map[string]*os.File{}, layers: make([][]span, layers), done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		b, _, ok := gguf.SplitBlockName(t.Name)
		if !ok || b >= layers || t.Size <= 0 {
			continue
		}
		path, off := f.Locate(t)
		p.layers[b] = append(p.layers[b], span{path: path, off: off, end: off + t.Size})
	}
	for _, l := range p.layers {
		sort.Slice(l, func(i, j int) bool {
			if l[i].path != l[j].path {
				return l[i].path < l[j].path
			}
			return l[i].off < l[j].off
		})
	}
	go p.run()
	return p
}

// reached tells the prefetcher that the run is in layer l.
func (p *prefetcher) reached(l int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if l > p.at {
		p.at = l
		p.cond.Broadcast()
	}
	p.mu.Unlock()
}

// close stops the read-ahead and waits for it.
func (p *prefetcher) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stop = true
	p.cond.Broadcast()
	p.mu.Unlock()
	<-p.done
	for _, fh := range p.files {
		fh.Close()
	}
}

func (p *prefetcher) run() {
	defer close(p.done)
	for l, spans := range p.layers {
		p.mu.Lock()
		for !p.stop && p.at < l-prefetchAhead {
			p.cond.Wait()
		}
		stop := p.stop
		p.mu.Unlock()
		if stop {
			return
		}
		for _, s := range spans {
			fh := p.files[s.path]
			if fh == nil {
				var err error
				if fh, err = os.Open(s.path); err != nil {
					return // read-ahead is only a hint
				}
				p.files[s.path] = fh
			}
			for off := s.off; off < s.end; off += prefetchChunk {
				p.mu.Lock()
				stop := p.stop
				p.mu.Unlock()
				if stop {
					return
				}
				adviseWillNeed(fh, off, min(prefetchChunk, s.end-off))
			}
		}
	}
}

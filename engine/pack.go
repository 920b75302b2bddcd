package engine

import (
	"fmt"

	"github.com/stratactl/stratactl/strata"
)

// openPack opens a pack folder through strata.OpenPack (which refuses files
// that do not belong together), loads the model from its model.gguf and
// streams the experts from its model.experts.
func openPack(dir string, opt Options) (*Model, error) {
	p, err := strata.OpenPack(dir, strata.OpenOptions{Mapped: true})
	if err != nil {
		return nil, err
	}
	m, err := newModel(p.Model, opt)
	if err != nil {
		p.Close()
		return nil, err
	}
	if err := packFits(p.Experts, &m.Config); err != nil {
		p.Close()
		return nil, err
	}
	store, err := newPackStore(p, &m.Config, opt.Stream)
	if err != nil {
		p.Model.Close()
		return nil, err
	}
	m.Experts = store
	return m, nil
}

// packFits checks that the engine can run the experts of x for the model c:
// one stored layer per block, in block order, parts of the shapes the model
// needs and of types the kernels multiply.
func packFits(x *strata.Experts, c *Config) error {
	if len(x.Layers) != c.Layers {
		return fmt.Errorf("%s: %d MoE layers, the model has %d (every %s layer is MoE)", x.Path, len(x.Layers), c.Layers, c.Arch)
	}
	for i, b := range x.Layers {
		if int(b) != i {
			return fmt.Errorf("%s: stored layer %d is block %d, want %d", x.Path, i, b, i)
		}
	}
	for p := range x.Parts {
		cols, rows := c.expertShape(p)
		pt := x.Parts[p]
		if int(pt.Ne0) != cols || int(pt.Ne1) != rows {
			return fmt.Errorf("%s: part %s is %d x %d, the model needs %d x %d", x.Path, strata.PartNames[p], pt.Ne0, pt.Ne1, cols, rows)
		}
		if err := partType(pt.Type); err != nil {
			return fmt.Errorf("%s: part %s: %w", x.Path, strata.PartNames[p], err)
		}
	}
	return nil
}

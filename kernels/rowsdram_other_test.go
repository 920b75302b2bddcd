//go:build !amd64 || noasm

package kernels

import "github.com/stratactl/stratactl/quant"

// rowsDRAMVariants: the dispatched set only.
func rowsDRAMVariants(quant.Type) []rowsVariant { return []rowsVariant{setVariant("host", &host)} }

// q8StreamSets: none without the assembly kernels.
func q8StreamSets() []namedSet { return nil }

// q2RowSets: none without the assembly kernels.
func q2RowSets() []namedSet { return nil }

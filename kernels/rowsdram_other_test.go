//go:build !amd64 || noasm

package kernels

// rowsDRAMVariants: the dispatched set only.
func rowsDRAMVariants() []rowsVariant { return []rowsVariant{setVariant("host", &host)} }

// q8StreamSets: none without the assembly kernels.
func q8StreamSets() []namedSet { return nil }

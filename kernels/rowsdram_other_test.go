//go:build !amd64 || noasm

package kernels

// rowsDRAMVariants: the dispatched set only.
func rowsDRAMVariants() []rowsVariant { return []rowsVariant{setVariant("host", &host)} }

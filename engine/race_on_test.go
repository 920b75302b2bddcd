//go:build race

package engine

// raceBuild: the race detector's build, whose sync.Pool drops items at
// random (so pooled scratch is reallocated) and whose instrumentation
// allocates: allocation counts do not hold there.
const raceBuild = true

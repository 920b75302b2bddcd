//go:build !race

package engine

// raceBuild: see race_on_test.go.
const raceBuild = false

//go:build race

package testrace

// Enabled reports whether the build has the race detector.
const Enabled = true

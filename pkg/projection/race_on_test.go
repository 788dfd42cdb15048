//go:build race

package projection

// raceEnabled reports whether the tests run under the race detector, which makes this
// package's arithmetic about 15 times slower.
const raceEnabled = true

// Package testrace sorts the tests between make test's two passes. The race detector
// finds data races in code that runs concurrently; a statistical or measuring test (an
// audit of a mechanism's distribution, a study repeated a hundred times, a count of
// allocated bytes) runs long single-threaded arithmetic that the detector slows 5 to 15
// times and in which it finds nothing. Such a test's first statement is
// testrace.Statistical(t): the race pass skips it, and scripts/statistical.sh, make
// test's second pass, finds every such test and runs it without the detector.
// TestStatisticalCallsAreFound keeps every call where that script looks.
package testrace

import "testing"

// Statistical skips t in a build with the race detector (make test runs it in its
// pass without the detector; see the package comment).
func Statistical(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("statistical test: make test runs it without the race detector (Makefile STATISTICAL)")
	}
}

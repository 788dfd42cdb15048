//go:build !linux

package gpucb

// bigFloats returns a zeroed slice of n float64 (hugepages_linux.go asks for
// huge pages).
func bigFloats(n int) []float64 { return make([]float64, n) }

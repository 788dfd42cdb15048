package hparam

import "testing"

// BenchmarkCoords: kernel coordinates of DP-HyPO's 50×50 CIFAR grid.
func BenchmarkCoords(b *testing.B) {
	s, err := ParseSpace("lr=log:1e-4:10:50", "clip=linear:0.1:5:50")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = s.Coords()
	}
}

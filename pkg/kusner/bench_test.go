package kusner

import (
	"context"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

// BenchmarkRunNoisyGP runs Algorithm 1 on |Λ| = 320 candidates (a 16 × 20
// grid, the size of DP-HyPO's MNIST grid) for T = 50 iterations with a
// trivial objective and crypto/rand noise, including the greedy γ_T bound.
func BenchmarkRunNoisyGP(b *testing.B) {
	const nx, ny, T = 16, 20, 50
	cands := make([]float64, 0, 2*nx*ny)
	for i := range nx {
		for j := range ny {
			cands = append(cands, float64(i)/(nx-1), float64(j)/(ny-1))
		}
	}
	cfg := Config{
		Algorithm: NoisyGP, Candidates: cands, N: nx * ny, Dim: 2,
		Iterations: T, Epsilon: 1, Delta: 1e-3, K1: 0.5, NoiseVariance: 1e-3,
	}
	f := func(_ context.Context, i int) (float64, error) {
		x, y := cands[2*i], cands[2*i+1]
		return 1 - (x-0.3)*(x-0.3) - (y-0.6)*(y-0.6), nil
	}
	src := dp.CryptoSource()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), src, cfg, f, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGammaGreedy is the greedy γ_T bound alone for the same grid.
func BenchmarkGammaGreedy(b *testing.B) {
	const nx, ny, T = 16, 20, 50
	cands := make([]float64, 0, 2*nx*ny)
	for i := range nx {
		for j := range ny {
			cands = append(cands, float64(i)/(nx-1), float64(j)/(ny-1))
		}
	}
	for b.Loop() {
		if _, err := GammaGreedy(cands, nx*ny, 2, 0.25, 1e-3, T); err != nil {
			b.Fatal(err)
		}
	}
}

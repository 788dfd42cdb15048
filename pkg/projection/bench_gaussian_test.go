package projection

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkProjectGaussianRelease times fresh ProjectGaussian releases of
// n×20 from d = 10 features with production randomness (SecureSource for M,
// CryptoNoise for the n·20 exact discrete Gaussian draws), at the curator's
// default ε = 2, δ = 1e-7 (the parameters of the loopback benchmark in
// integration/). Targets: n = 10⁵ in ≤ 0.3 s, n = 10⁶ in ≤ 2 s on two cores.
func BenchmarkProjectGaussianRelease(b *testing.B) {
	const d, r = 10, 20
	for _, n := range []int{100_000, 1_000_000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			x := gaussianData(1, n, d, 1)
			p := Params{R: r, Epsilon: 2, Delta: 1e-7}
			for b.Loop() {
				if _, _, err := ProjectGaussian(context.Background(), x, n, d, p, SecureSource(), CryptoNoise); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n*r)/b.Elapsed().Seconds(), "draws/s")
		})
	}
}

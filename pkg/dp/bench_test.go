package dp_test

import (
	"math"
	"math/big"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

// Benchmarks draw from CryptoSource, as releases do. Each reports
// samples/s; compare runs with benchstat.

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkBernoulliExp(b *testing.B) {
	for _, g := range []*big.Rat{big.NewRat(1, 2), big.NewRat(5, 2), big.NewRat(1, 3<<40)} {
		b.Run("gamma="+g.RatString(), func(b *testing.B) {
			src := dp.CryptoSource()
			for b.Loop() {
				if _, err := dp.BernoulliExp(src, g); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b)
		})
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	for _, s := range []*big.Rat{big.NewRat(1, 1), big.NewRat(1<<20, 1), big.NewRat(1<<20, 3)} {
		b.Run("scale="+s.RatString(), func(b *testing.B) {
			src := dp.CryptoSource()
			for b.Loop() {
				if _, err := dp.DiscreteLaplace(src, s); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b)
		})
	}
}

func BenchmarkDiscreteGaussian(b *testing.B) {
	// One draw per op through the per-call API (a big.Int per draw).
	for _, s := range []*big.Rat{big.NewRat(1, 1), big.NewRat(1<<40, 1)} {
		b.Run("sigma2="+s.RatString(), func(b *testing.B) {
			src := dp.CryptoSource()
			for b.Loop() {
				if _, err := dp.DiscreteGaussian(src, s); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b)
		})
	}
	// One draw per op from a DiscreteGaussianSampler filling a buffer, as
	// VectorGaussian.AddNoise does: on one goroutine, and on GOMAXPROCS
	// goroutines with a Source each (b.RunParallel; samples/s is the total).
	// σ² = 2⁷² is about the variance (in lattice units) of a 10⁶×20
	// ProjectGaussian release.
	for _, s := range []*big.Rat{big.NewRat(1<<40, 1), new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 72))} {
		g, err := dp.NewDiscreteGaussianSampler(s)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("int64s/sigma2="+s.RatString(), func(b *testing.B) {
			src := dp.CryptoSource()
			buf := make([]int64, 256)
			i := len(buf)
			for b.Loop() {
				if i == len(buf) {
					if err := g.Int64s(src, buf); err != nil {
						b.Fatal(err)
					}
					i = 0
				}
				i++
			}
			reportRate(b)
		})
		b.Run("parallel/sigma2="+s.RatString(), func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				src := dp.CryptoSource()
				buf := make([]int64, 256)
				i := len(buf)
				for pb.Next() {
					if i == len(buf) {
						if err := g.Int64s(src, buf); err != nil {
							b.Error(err)
							return
						}
						i = 0
					}
					i++
				}
			})
			reportRate(b)
		})
	}
}

func BenchmarkLaplaceMechanism(b *testing.B) {
	l, err := dp.NewLaplace(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	src := dp.CryptoSource()
	for b.Loop() {
		if _, err := l.Release(src, 3.3); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

func BenchmarkGaussianMechanism(b *testing.B) {
	g, err := dp.NewGaussian(1, 1e-5, 1)
	if err != nil {
		b.Fatal(err)
	}
	src := dp.CryptoSource()
	for b.Loop() {
		if _, err := g.Release(src, 3.3); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

func BenchmarkNewGaussian(b *testing.B) {
	for b.Loop() {
		if _, err := dp.NewGaussian(1, 1e-5, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExponential(b *testing.B) {
	// 100 candidates with scores spread over [0, 10], ε = 1, Δ = 1: weights
	// exp(u/2) span a factor e⁵ ≈ 150.
	e, err := dp.NewExponential(1, 1, 0, 10)
	if err != nil {
		b.Fatal(err)
	}
	scores := make([]float64, 100)
	for i := range scores {
		scores[i] = 10 * math.Sin(float64(i)) * math.Sin(float64(i))
	}
	src := dp.CryptoSource()
	for b.Loop() {
		if _, err := e.Select(src, scores); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

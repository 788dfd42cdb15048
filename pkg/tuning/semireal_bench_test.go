package tuning

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
	"github.com/privbo/privbo/pkg/dphypo"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/learner"
)

// landscape caches the validation accuracy of DP-SGD logistic regression on breast
// cancer over the paper's MNIST-style grid: learning rate log-spaced in [1e-4, 10]
// (16 values) × clipping norm 0.3..6 step 0.3 (20 values), 320 candidates; each point is
// the mean of 3 DP-SGD runs (noise multiplier 1, 3 epochs, batch 64) on the jobs'
// default preprocessing (public bounds, learner.ScaleToBounds).
func landscape(b *testing.B, r *Runner) (hparam.Space, []float64) {
	lr, _ := hparam.LogRange("learning_rate", 1e-4, 10, 16)
	clip, _ := hparam.LinearRange("clip_norm", 0.3, 6, 20)
	space, _ := hparam.NewSpace(lr, clip)
	acc := make([]float64, space.Size())
	src := dptest.Source(7)
	for i := range acc {
		p := space.Point(i)
		for k := 0; k < 3; k++ {
			m, err := learner.TrainDPSGD(context.Background(), src, r.sgdTrain, learner.DPSGDConfig{LearningRate: p["learning_rate"],
				ClipNorm: p["clip_norm"], NoiseMultiplier: 1, Epochs: 3, ExpectedBatchSize: 64, Lambda: 1e-3})
			if err != nil {
				b.Fatal(err)
			}
			acc[i] += learner.Accuracy(m, r.sgdVal) / 3
		}
	}
	return space, acc
}

type noisyRead struct {
	acc   []float64
	sigma float64
	rng   *rand.Rand
}

func (n noisyRead) Run(_ context.Context, i int) (float64, error) {
	return n.acc[i] + n.sigma*n.rng.NormFloat64(), nil
}

// readSigma is the standard deviation of a noisy accuracy read (sensitivity 1/m) that
// makes the whole search (θ = 1, mean runs, density bounds C/c) exactly (ε, 1e-5)-DP.
func readSigma(m float64, meanRuns, C, c, eps float64) float64 {
	total := func(sigma float64) float64 {
		base, _ := dp.GaussianRDP(dp.DefaultOrders(), 1/m, sigma)
		curve, err := dp.DPHyPORDP(base, base, 1, 1/meanRuns, C, c)
		if err != nil {
			return math.Inf(1)
		}
		e, _, _ := curve.ToDPImproved(1e-5)
		return e
	}
	lo, hi := 1e-6, 10.0
	for k := 0; k < 100; k++ {
		mid := math.Sqrt(lo * hi)
		if total(mid) > eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// BenchmarkSemiRealGPvsUniform reproduces the style of DP-HyPO's semi-real experiment:
// a cached landscape, noisy reads whose noise is calibrated so that the GP search
// (C = 2, c = 0.75, τ = 0.1, β = 1) and the uniform search (C = c = 1) have the same
// total (ε = 5, δ = 1e-5), and the mean true accuracy of the released hyperparameters
// over 200 repetitions per expected number of runs. It logs the table.
func BenchmarkSemiRealGPvsUniform(b *testing.B) {
	r := breastCancer(b)
	space, acc := landscape(b, r)
	best, mean := 0.0, 0.0
	for _, a := range acc {
		best, mean = max(best, a), mean+a/float64(len(acc))
	}
	m := float64(r.val.N)
	const reps, eps = 200, 5.0
	b.Logf("landscape: %d candidates, best accuracy %.4f, mean %.4f; total privacy (ε=%g, δ=1e-5) for both methods", len(acc), best, mean, eps)
	b.Logf("%8s  %10s %10s  %10s %10s  %s", "E[runs]", "GP acc", "unif acc", "GP σ_read", "unif σ", "GP − uniform (± 2 s.e.)")
	for i := 0; i < b.N; i++ {
		for _, equalNoise := range []bool{false, true} {
			if equalNoise {
				b.Logf("the same with the GP search given the uniform search's read noise (GP's total ε then exceeds %g):", eps)
			}
			for _, runs := range []float64{2, 4, 8, 16, 32} {
				var res [2][]float64
				sig := [2]float64{readSigma(m, runs, 2, 0.75, eps), readSigma(m, runs, 1, 1, eps)}
				if equalNoise {
					sig[0] = sig[1] // same reads for both: what adaptivity buys, ignoring its privacy price
				}
				for method, uniform := range []bool{false, true} {
					cfg := dphypo.Config{Theta: 1, Gamma: 1 / runs, C: 2, Cmin: 0.75, Tau: 0.1, Beta: 1, Uniform: uniform,
						Candidates: space.Coords(), N: space.Size(), Dim: space.Dim()}
					if uniform {
						cfg.C, cfg.Cmin = 1, 1
					}
					for rep := 0; rep < reps; rep++ {
						seed := uint64(rep*1000 + int(runs))
						out, err := dphypo.Run(context.Background(), dptest.Source(seed), cfg,
							noisyRead{acc: acc, sigma: sig[method], rng: rand.New(rand.NewPCG(seed, uint64(method)))}, nil)
						if err != nil {
							b.Fatal(err)
						}
						res[method] = append(res[method], acc[out.BestIndex])
					}
				}
				mu := func(x []float64) (float64, float64) {
					s, ss := 0.0, 0.0
					for _, v := range x {
						s += v
					}
					s /= float64(len(x))
					for _, v := range x {
						ss += (v - s) * (v - s)
					}
					return s, math.Sqrt(ss / float64(len(x)-1) / float64(len(x)))
				}
				g, gse := mu(res[0])
				u, use := mu(res[1])
				b.Logf("%8g  %10.4f %10.4f  %10.4f %10.4f  %+.4f ± %.4f", runs, g, u, sig[0], sig[1], g-u, 2*math.Hypot(gse, use))
			}
		}
	}
}

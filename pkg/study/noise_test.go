package study

import (
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

// TestAnswerNoise checks the answers' noise of an output privacy: the curator's stated
// σ and family when it states them, and otherwise (records that predate the statement)
// the mechanism's public calibration: Laplace of scale (U − L)/ε has variance
// 2((U − L)/ε)² (range [0, 400], ε = 2: 80,000, up to package dp's lattice rounding, a
// relative 1e-5), the Gaussian the analytic Gaussian σ² (Balle and Wang 2018), and
// exact answers none.
func TestAnswerNoise(t *testing.T) {
	an, err := OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Lower: 0, Upper: 400}.AnswerNoise()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(an.Variance-80000)/80000 > 1e-5 || math.Abs(an.SD*an.SD-an.Variance) > 1e-9*an.Variance || !an.Laplace {
		t.Errorf("Laplace noise = %+v, want variance 80000, sd its root, Laplace", an)
	}
	an, err = OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, DeltaPerIndex: 1e-5, Lower: -1, Upper: 1}.AnswerNoise()
	if err != nil {
		t.Fatal(err)
	}
	sigma, err := dp.AnalyticGaussianSigma(1, 1e-5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(an.Variance-sigma*sigma)/(sigma*sigma) > 1e-3 || an.Laplace {
		t.Errorf("Gaussian noise = %+v, want variance σ² = %g, not Laplace", an, sigma*sigma)
	}
	// Stated figures win over the mechanism's name and settings.
	an, err = OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, Lower: 0, Upper: 1, NoiseSD: 3, Laplace: true}.AnswerNoise()
	if err != nil || an != (AnswerNoise{SD: 3, Variance: 9, Laplace: true}) {
		t.Errorf("stated noise = %+v, %v; want sd 3, variance 9, Laplace", an, err)
	}
	for _, m := range []string{"", "none"} {
		if an, err := (OutputPrivacy{Mechanism: m}).AnswerNoise(); err != nil || an != (AnswerNoise{}) {
			t.Errorf("AnswerNoise(%q) = %+v, %v; want none", m, an, err)
		}
	}
	for _, o := range []OutputPrivacy{
		{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 1, Upper: 1},
		{Mechanism: "laplace", EpsilonPerIndex: 1, Upper: math.Inf(1)},
		{Mechanism: "laplace", Upper: 1},
		{Mechanism: "gaussian", EpsilonPerIndex: 1, Upper: 1},
		{Mechanism: "uniform", EpsilonPerIndex: 1, Upper: 1},
		{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: math.NaN(), Upper: 1},
	} {
		if _, err := o.AnswerNoise(); err == nil {
			t.Errorf("AnswerNoise(%+v): no error", o)
		}
	}
}

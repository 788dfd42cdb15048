package calibrate_test

import (
	"errors"
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
	"github.com/privbo/privbo/pkg/study/calibrate"
)

// TestNoise checks the calibration of records that predate the curator's statement:
// Laplace of scale (U − L)/ε has variance 2((U − L)/ε)² (range [0, 400], ε = 2: 80,000,
// up to package dp's lattice rounding, a relative 1e-5), the Gaussian the analytic
// Gaussian σ² (Balle and Wang 2018), and exact answers none; a stated record is left as
// it is, and settings no mechanism accepts are errors.
func TestNoise(t *testing.T) {
	op := study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Lower: 0, Upper: 400}
	if err := calibrate.Noise(&op); err != nil {
		t.Fatal(err)
	}
	an, err := op.AnswerNoise()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(an.Variance-80000)/80000 > 1e-5 || math.Abs(an.SD*an.SD-an.Variance) > 1e-9*an.Variance || an.Noise != noise.Laplace {
		t.Errorf("Laplace noise = %+v, want variance 80000, sd its root, Laplace", an)
	}
	op = study.OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, DeltaPerIndex: 1e-5, Lower: -1, Upper: 1}
	if err := calibrate.Noise(&op); err != nil {
		t.Fatal(err)
	}
	sigma, err := dp.AnalyticGaussianSigma(1, 1e-5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(op.NoiseSD*op.NoiseSD-sigma*sigma)/(sigma*sigma) > 1e-3 || op.Noise != noise.Gaussian {
		t.Errorf("Gaussian noise = %+v, want variance σ² = %g, Gaussian", op, sigma*sigma)
	}
	// Stated figures are left as they are.
	op = study.OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, Lower: 0, Upper: 1, NoiseSD: 3, Noise: noise.Laplace}
	if err := calibrate.Noise(&op); err != nil || op.NoiseSD != 3 || op.Noise != noise.Laplace {
		t.Errorf("stated noise became %+v, %v; want it as stated", op, err)
	}
	for _, m := range []string{"", "none"} {
		op := study.OutputPrivacy{Mechanism: m}
		if err := calibrate.Noise(&op); err != nil || !op.Exact() || op.NoiseSD != 0 {
			t.Errorf("Noise(%q) = %+v, %v; want exact", m, op, err)
		}
	}
	for _, o := range []study.OutputPrivacy{
		{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 1, Upper: 1},
		{Mechanism: "laplace", EpsilonPerIndex: 1, Upper: math.Inf(1)},
		{Mechanism: "laplace", Upper: 1},
		{Mechanism: "gaussian", EpsilonPerIndex: 1, Upper: 1},
		{Mechanism: "uniform", EpsilonPerIndex: 1, Upper: 1},
		{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: math.NaN(), Upper: 1},
	} {
		if err := calibrate.Noise(&o); err == nil {
			t.Errorf("Noise(%+v): no error", o)
		}
		if _, err := o.AnswerNoise(); !errors.Is(err, study.ErrNoiseUnstated) {
			t.Errorf("AnswerNoise of %+v after a failed calibration = %v; want ErrNoiseUnstated", o, err)
		}
	}
}

package dp_test

import (
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

func TestAnalyticGaussianDelta(t *testing.T) {
	// Golden values: Balle & Wang (ICML 2018), Theorem 8, recomputed in high
	// precision (docs/MATHS.md §5.4).
	tests := []struct{ sigma, eps, sens, want float64 }{
		{10, 0.1, 1, 0.0087517681458096},
		{10, math.Log(3), 5, 0.004159742234000802},
		{0.5, 0, 1, 0.6826894921370859},
	}
	for _, tc := range tests {
		if got := dp.AnalyticGaussianDelta(tc.sigma, tc.eps, tc.sens); math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("AnalyticGaussianDelta(%g, %g, %g) = %.16g, want %.16g", tc.sigma, tc.eps, tc.sens, got, tc.want)
		}
	}
	for _, bad := range [][3]float64{{0, 1, 1}, {1, -1, 1}, {1, 1, 0}, {math.NaN(), 1, 1}, {1, math.Inf(1), 1}} {
		if got := dp.AnalyticGaussianDelta(bad[0], bad[1], bad[2]); !math.IsNaN(got) {
			t.Errorf("AnalyticGaussianDelta(%g, %g, %g) = %g, want NaN", bad[0], bad[1], bad[2], got)
		}
	}
	// Far tail: δ underflows in linear space for a large σ but must stay
	// positive, finite and decreasing.
	prev := 1.0
	for _, s := range []float64{5, 10, 20, 25} {
		d := dp.AnalyticGaussianDelta(s, 1, 1)
		if !(d > 0 && d < prev) {
			t.Errorf("AnalyticGaussianDelta(%g, 1, 1) = %g, want in (0, %g)", s, d, prev)
		}
		prev = d
	}
}

func TestAnalyticGaussianSigma(t *testing.T) {
	// Calibrated variances for Δ = 1: Google's differential-privacy library
	// (docs/MATHS.md §5.4), relative accuracy 1e-3.
	tests := []struct{ eps, delta, wantVar float64 }{
		{math.Log(3), 1e-10, 28.7648},
		{math.Log(3), 1e-5, 11.7360},
		{2 * math.Log(3), 1e-10, 7.6595},
	}
	for _, tc := range tests {
		sigma, err := dp.AnalyticGaussianSigma(tc.eps, tc.delta, 1)
		if err != nil {
			t.Fatalf("AnalyticGaussianSigma(%g, %g, 1): %v", tc.eps, tc.delta, err)
		}
		if v := sigma * sigma; v < tc.wantVar*(1-1e-3) || v > tc.wantVar*(1+1e-3) {
			t.Errorf("AnalyticGaussianSigma(%g, %g, 1)² = %g, want %g ± 0.1%%", tc.eps, tc.delta, v, tc.wantVar)
		}
		// Conservative and tight: δ(σ) ≤ δ < δ(σ·(1 − 1e-9)).
		if d := dp.AnalyticGaussianDelta(sigma, tc.eps, 1); d > tc.delta {
			t.Errorf("AnalyticGaussianDelta(%g, %g, 1) = %g, want ≤ %g", sigma, tc.eps, d, tc.delta)
		}
		if d := dp.AnalyticGaussianDelta(sigma*(1-1e-9), tc.eps, 1); d <= tc.delta {
			t.Errorf("AnalyticGaussianDelta(%g·(1−1e-9), %g, 1) = %g, want > %g (σ not minimal)", sigma, tc.eps, d, tc.delta)
		}
		// σ scales linearly with the sensitivity.
		s7, err := dp.AnalyticGaussianSigma(tc.eps, tc.delta, 7)
		if err != nil || math.Abs(s7/(7*sigma)-1) > 1e-11 {
			t.Errorf("AnalyticGaussianSigma(%g, %g, 7) = %g, %v, want %g", tc.eps, tc.delta, s7, err, 7*sigma)
		}
	}
	for _, bad := range [][3]float64{{0, 1e-5, 1}, {1, 0, 1}, {1, 1, 1}, {1, 1e-5, -1}, {math.NaN(), 1e-5, 1}} {
		if _, err := dp.AnalyticGaussianSigma(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("AnalyticGaussianSigma(%g, %g, %g) succeeded, want an error", bad[0], bad[1], bad[2])
		}
	}
}

// exactDiscreteGaussianDelta returns Σ_y max(0, p(y) − e^ε p(y − s)) for the
// discrete Gaussian pmf p, summed over |y| ≤ 60σ + s (the exact δ of CKS20
// Theorem 7 for shift s).
func exactDiscreteGaussianDelta(sigma, eps float64, s int64) float64 {
	r := int64(60*sigma) + s
	var d float64
	for y := -r; y <= r+s; y++ {
		v := dp.DiscreteGaussianPMF(sigma*sigma, y) - math.Exp(eps)*dp.DiscreteGaussianPMF(sigma*sigma, y-s)
		if v > 0 {
			d += v
		}
	}
	return d
}

func TestDiscreteGaussianDeltaBound(t *testing.T) {
	tests := []struct {
		sigma, eps float64
		s          int64
		slack      float64 // allowed relative excess over the exact δ
	}{
		// Slack: observed ratio bound/exact − 1, rounded up; the bound is
		// meant to be tight only for large σ.
		{0.8, 0.5, 1, 0.5},
		{1, 1, 1, 1},
		{2, 0.5, 3, 0.1},
		{5, 1, 1, 4},
		{30, 0.1, 2, 0.02},
		{200, 0.05, 10, 1e-3},
		{1000, 0.02, 7, 3e-4},
	}
	for _, tc := range tests {
		exact := exactDiscreteGaussianDelta(tc.sigma, tc.eps, tc.s)
		got := dp.DiscreteGaussianDeltaBound(tc.sigma, tc.eps, tc.s)
		if got < exact*(1-1e-12) || got > exact*(1+tc.slack) {
			t.Errorf("DiscreteGaussianDeltaBound(%g, %g, %d) = %g, want in [exact %g, ×(1+%g)]", tc.sigma, tc.eps, tc.s, got, exact, tc.slack)
		}
	}
	// On the lattices the Gaussian mechanism uses (σ of ~2²⁰ steps) the bound
	// is the continuous analytic-Gaussian δ to within a relative 1e-6.
	for _, eps := range []float64{0.1, 1, 5} {
		s := int64(1<<20 + 1)
		sigma := 3.7 * float64(s)
		got := dp.DiscreteGaussianDeltaBound(sigma, eps, s)
		cont := dp.AnalyticGaussianDelta(sigma, eps, float64(s))
		if math.Abs(got/cont-1) > 1e-6 {
			t.Errorf("DiscreteGaussianDeltaBound(%g, %g, %d) = %g, want ≈ continuous %g", sigma, eps, s, got, cont)
		}
	}
	if got := dp.DiscreteGaussianDeltaBound(1, 1, 0); !math.IsNaN(got) {
		t.Errorf("DiscreteGaussianDeltaBound(1, 1, 0) = %g, want NaN", got)
	}
}

package dp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// ksSamples is the sample size of the Kolmogorov–Smirnov tests, matching the
// critical value ksCritical5000.
const ksSamples = 5000

func TestLaplaceParameters(t *testing.T) {
	tests := []struct{ eps, sens float64 }{
		{1, 1}, {0.1, 1}, {1e-6, 1}, {5, 0.01}, {math.Log(3), 250}, {100, 1},
	}
	for _, tc := range tests {
		l, err := dp.NewLaplace(tc.eps, tc.sens)
		if err != nil {
			t.Fatalf("NewLaplace(%g, %g): %v", tc.eps, tc.sens, err)
		}
		g := l.Granularity()
		// 2^k ∈ (2⁻²¹, 2⁻²⁰]·min(Δ, Δ/ε).
		if m := math.Min(tc.sens, tc.sens/tc.eps); g > m*0x1p-20 || g <= m*0x1p-21 {
			t.Errorf("NewLaplace(%g, %g).Granularity() = %g, want in (2^-21, 2^-20]·%g", tc.eps, tc.sens, g, m)
		}
		// Scale ≥ (Δ + 2^k)/ε (the privacy condition) and within one lattice step of it.
		want := (tc.sens + g) / tc.eps
		if s := l.Scale(); s < want*(1-1e-15) || s > want+g*(1+1e-9) {
			t.Errorf("NewLaplace(%g, %g).Scale() = %.17g, want in [%.17g, +2^k]", tc.eps, tc.sens, s, want)
		}
		if e, d := l.Cost(); e != tc.eps || d != 0 {
			t.Errorf("NewLaplace(%g, %g).Cost() = %g, %g, want %g, 0", tc.eps, tc.sens, e, d, tc.eps)
		}
	}
}

func TestGaussianParameters(t *testing.T) {
	tests := []struct{ eps, delta, sens, wantVar float64 }{
		// Variances for Δ = 1 from Google's library (docs/MATHS.md §5.4); the
		// mechanism adds a relative ≈ 2⁻²⁰ for the lattice slack.
		{math.Log(3), 1e-10, 1, 28.7648},
		{math.Log(3), 1e-5, 1, 11.7360},
		{2 * math.Log(3), 1e-10, 1, 7.6595},
		{math.Log(3), 1e-5, 3, 9 * 11.7360},
	}
	for _, tc := range tests {
		g, err := dp.NewGaussian(tc.eps, tc.delta, tc.sens)
		if err != nil {
			t.Fatalf("NewGaussian(%g, %g, %g): %v", tc.eps, tc.delta, tc.sens, err)
		}
		s := g.Scale()
		if v := s * s; v < tc.wantVar*(1-1e-3) || v > tc.wantVar*(1+1e-3) {
			t.Errorf("NewGaussian(%g, %g, %g).Scale()² = %g, want %g ± 0.1%%", tc.eps, tc.delta, tc.sens, v, tc.wantVar)
		}
		// Private for the effective sensitivity Δ + 2^k even as a continuous Gaussian.
		if d := dp.AnalyticGaussianDelta(s, tc.eps, tc.sens+g.Granularity()); d > tc.delta {
			t.Errorf("AnalyticGaussianDelta(Scale %g, %g, Δ+2^k) = %g, want ≤ %g", s, tc.eps, d, tc.delta)
		}
		if e, d := g.Cost(); e != tc.eps || d != tc.delta {
			t.Errorf("Cost() = %g, %g, want %g, %g", e, d, tc.eps, tc.delta)
		}
	}
}

func TestLaplaceMechanismDistribution(t *testing.T) {
	for _, tc := range []struct {
		eps, sens, x float64
		seed         uint64
	}{
		{1, 1, 3.3, 20},
		{0.2, 0.5, -1234.5678, 21},
		{3, 2, 1e6 + 0.1, 22},
	} {
		l, err := dp.NewLaplace(tc.eps, tc.sens)
		if err != nil {
			t.Fatal(err)
		}
		src := dptest.Source(tc.seed)
		b := l.Scale()
		mu := dp.RoundToLattice(tc.x, int(math.Log2(l.Granularity())))
		out := make([]float64, ksSamples)
		for i := range out {
			y, err := l.Release(src, tc.x)
			if err != nil {
				t.Fatal(err)
			}
			if dp.RoundToLattice(y, int(math.Log2(l.Granularity()))) != y {
				t.Fatalf("Laplace release %g is not on the lattice %g·ℤ", y, l.Granularity())
			}
			out[i] = y
		}
		meanCheck(t, "Laplace mechanism", out, mu, 2*b*b)
		// The discrete Laplace on 2^k·ℤ differs from the continuous CDF by at
		// most one atom, P ≤ 2^k/(2b) ≈ 1e-6, far below the KS critical value.
		cdf := func(y float64) float64 {
			if y < mu {
				return 0.5 * math.Exp((y-mu)/b)
			}
			return 1 - 0.5*math.Exp(-(y-mu)/b)
		}
		if d := ksStatistic(out, cdf); d > ksCritical5000 {
			t.Errorf("Laplace(%g, %g) releases of %g: KS distance %g, want ≤ %g", tc.eps, tc.sens, tc.x, d, ksCritical5000)
		}
	}
}

func TestGaussianMechanismDistribution(t *testing.T) {
	for _, tc := range []struct {
		eps, delta, sens, x float64
		seed                uint64
	}{
		{1, 1e-5, 1, 3.3, 30},
		{0.3, 1e-8, 0.25, -77.7, 31},
		{8, 1e-3, 10, 5e7, 32},
	} {
		g, err := dp.NewGaussian(tc.eps, tc.delta, tc.sens)
		if err != nil {
			t.Fatal(err)
		}
		src := dptest.Source(tc.seed)
		s := g.Scale()
		k := int(math.Log2(g.Granularity()))
		mu := dp.RoundToLattice(tc.x, k)
		out := make([]float64, ksSamples)
		for i := range out {
			y, err := g.Release(src, tc.x)
			if err != nil {
				t.Fatal(err)
			}
			if dp.RoundToLattice(y, k) != y {
				t.Fatalf("Gaussian release %g is not on the lattice %g·ℤ", y, g.Granularity())
			}
			out[i] = y
		}
		meanCheck(t, "Gaussian mechanism", out, mu, s*s)
		cdf := func(y float64) float64 { return 0.5 * math.Erfc(-(y-mu)/(s*math.Sqrt2)) }
		if d := ksStatistic(out, cdf); d > ksCritical5000 {
			t.Errorf("Gaussian(%g, %g, %g) releases of %g: KS distance %g, want ≤ %g", tc.eps, tc.delta, tc.sens, tc.x, d, ksCritical5000)
		}
	}
}

func TestMechanismExtremeInputs(t *testing.T) {
	src := dptest.Source(40)
	l, err := dp.NewLaplace(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dp.NewGaussian(1, 1e-6, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{1e300, -1e300, 1e-300, 0} {
		for name, rel := range map[string]func(*dp.Source, float64) (float64, error){"Laplace": l.Release, "Gaussian": g.Release} {
			y, err := rel(src, x)
			if err != nil || math.IsNaN(y) || math.Abs(y-x) > 1e-10*math.Abs(x)+100 {
				t.Errorf("%s.Release(%g) = %g, %v, want x plus O(1) noise", name, x, y, err)
			}
		}
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := l.Release(src, x); err == nil || !strings.HasPrefix(err.Error(), "dp: ") {
			t.Errorf("Laplace.Release(%g) error = %v, want a dp: error", x, err)
		}
		if _, err := g.Release(src, x); err == nil || !strings.HasPrefix(err.Error(), "dp: ") {
			t.Errorf("Gaussian.Release(%g) error = %v, want a dp: error", x, err)
		}
	}
	if _, err := l.Release(nil, 1); err == nil {
		t.Errorf("Laplace.Release(nil source) succeeded, want an error")
	}
}

func TestExponentialChiSquare(t *testing.T) {
	tests := []struct {
		name      string
		eps, sens float64
		lo, hi    float64
		scores    []float64
		seed      uint64
	}{
		{"clamped", 1, 1, -1, 5, []float64{0, 1, 2, 3, 2.5, -3, 10}, 50},
		{"uniform", 2, 1, 0, 1, []float64{0.5, 0.5, 0.5, 0.5}, 51},
		{"zeros", 2, 1, -1, 1, []float64{0, 0, 0}, 55},
		{"subnormal", 1e300, 1, -1, 1, []float64{0, 5e-324, 1e-323, 0}, 56},
		{"fine differences", 1e6, 1, 0, 1, []float64{0, 1e-6, 2e-6, 3.5e-6, 0.3e-6}, 52},
		{"sensitivity 0.1", 0.5, 0.1, -10, 10, []float64{0.1, -0.2, 0.4, 0.05, 0.3, -0.35, 0.2, 0}, 53},
	}
	for _, tc := range tests {
		e, err := dp.NewExponential(tc.eps, tc.sens, tc.lo, tc.hi)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.Probabilities(tc.scores)
		if err != nil {
			t.Fatal(err)
		}
		src := dptest.Source(tc.seed)
		counts := make([]int, len(tc.scores))
		for i := 0; i < statSamples; i++ {
			j, err := e.Select(src, tc.scores)
			if err != nil {
				t.Fatal(err)
			}
			counts[j]++
		}
		cells := make([]cell, len(counts))
		for i := range cells {
			cells[i] = cell{counts[i], p[i]}
		}
		chiSquareCheck(t, "Exponential "+tc.name, cells)
	}
}

func TestExponentialProbabilities(t *testing.T) {
	// Pr[i] ∝ exp(ε u_i/(2Δ)) after clamping: for ε = 2, Δ = 1, scores
	// {0, ln 2, 10 → clamp 1·ln 3}: weights 1, 2, 3.
	e, err := dp.NewExponential(2, 1, 0, math.Log(3))
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Probabilities([]float64{0, math.Log(2), 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1. / 6, 2. / 6, 3. / 6}
	for i := range want {
		if math.Abs(p[i]-want[i]) > 1e-15 {
			t.Errorf("Probabilities()[%d] = %.17g, want %.17g", i, p[i], want[i])
		}
	}
	src := dptest.Source(54)
	if i, err := e.Select(src, []float64{42}); i != 0 || err != nil {
		t.Errorf("Select(one candidate) = %d, %v, want 0, nil", i, err)
	}
	for _, scores := range [][]float64{nil, {1, math.NaN()}} {
		if _, err := e.Select(src, scores); err == nil || !strings.HasPrefix(err.Error(), "dp: ") {
			t.Errorf("Select(%v) error = %v, want a dp: error", scores, err)
		}
	}
	if e, d := e.Cost(); e != 2 || d != 0 {
		t.Errorf("Cost() = %g, %g, want 2, 0", e, d)
	}
}

package dp_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

// Golden values in this file are those of docs/MATHS.md §4.4 and §6 (the public test
// suites of TF-Privacy, Opacus and dp_accounting, re-computed independently
// in high precision) unless a test says otherwise.

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
}

// TestSubsampledGaussianDPSGD checks DP-SGD accounting end to end against
// TF-Privacy's compute_dp_sgd_privacy vectors (q = batch/n, steps =
// epochs·n/batch, TF-Privacy's order grid) and Opacus's signed-series value.
func TestSubsampledGaussianDPSGD(t *testing.T) {
	tests := []struct {
		name                 string
		q, sigma             float64
		steps                int
		delta                float64
		variant              dp.SeriesVariant
		improved, atOrder    float64
		standard, stdTol     float64 // stdTol: absolute, the reference gives 5–6 digits
		improvedTol          float64 // relative
		checkImprovedOrderAt bool
	}{
		{"tfp-mnist", 150.0 / 60000, 1.3, 15 * 60000 / 150, 1e-5, dp.AbsoluteSeries, 0.7242234026109595, 19, 0.94187, 5e-6, 1e-9, true},
		{"tfp-mnist-signed", 150.0 / 60000, 1.3, 15 * 60000 / 150, 1e-5, dp.SignedSeries, 0.7242234026109595, 19, 0.94187, 5e-6, 1e-9, true},
		{"tfp-1e5", 100.0 / 1e5, 1.0, 30 * 100000 / 100, 1e-7, dp.AbsoluteSeries, 1.4154988495444845, 13, 1.70929, 5e-6, 1e-9, true},
		{"opacus", 0.04, 1.5, 2250, 1e-5, dp.SignedSeries, 7.32911117143, 3.9, math.NaN(), 0, 1e-10, true},
	}
	for _, tc := range tests {
		c, err := dp.SubsampledGaussianRDPSeries(dp.LibraryOrders(), tc.q, tc.sigma, tc.steps, tc.variant)
		if err != nil {
			t.Fatalf("%s: SubsampledGaussianRDPSeries error: %v", tc.name, err)
		}
		eps, order, err := c.ToDPImproved(tc.delta)
		if err != nil {
			t.Fatalf("%s: ToDPImproved error: %v", tc.name, err)
		}
		if relErr(eps, tc.improved) > tc.improvedTol || order != tc.atOrder {
			t.Errorf("%s: ToDPImproved(%g) = %.13g at α=%g, want %.13g at α=%g", tc.name, tc.delta, eps, order, tc.improved, tc.atOrder)
		}
		if !math.IsNaN(tc.standard) {
			std, _, err := c.ToDP(tc.delta)
			if err != nil || math.Abs(std-tc.standard) > tc.stdTol {
				t.Errorf("%s: ToDP(%g) = %.8g, %v, want %g ± %g", tc.name, tc.delta, std, err, tc.standard, tc.stdTol)
			}
		}
	}
}

// TestSubsampledGaussianSeriesVariants checks dp_accounting's per-order RDP
// values (absolute-sum series at the fractional orders 1.5 and 2.5, exact
// integer formula elsewhere) and that the signed series, the exact A_α, is
// never above the absolute one.
func TestSubsampledGaussianSeriesVariants(t *testing.T) {
	orders := []float64{1.5, 2.5, 5, 50, 100}
	want := []float64{6.70579741e-4, 1.0854871e-3, 2.18075656e-3, 2.38460375e-2, 167.416308}
	abs, err := dp.SubsampledGaussianRDP(orders, 0.01, 2.5, 50)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := dp.SubsampledGaussianRDPSeries(orders, 0.01, 2.5, 50, dp.SignedSeries)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range orders {
		if relErr(abs.Epsilons[i], want[i]) > 1e-7 {
			t.Errorf("SubsampledGaussianRDP(α=%g, q=0.01, σ=2.5, 50 steps) = %.10g, want %.9g", a, abs.Epsilons[i], want[i])
		}
		if signed.Epsilons[i] > abs.Epsilons[i]*(1+1e-12) {
			t.Errorf("signed series at α=%g = %.10g > absolute series %.10g", a, signed.Epsilons[i], abs.Epsilons[i])
		}
		if a == math.Trunc(a) && signed.Epsilons[i] != abs.Epsilons[i] {
			t.Errorf("integer α=%g: signed %.17g ≠ absolute %.17g (both must use the exact formula)", a, signed.Epsilons[i], abs.Epsilons[i])
		}
	}
	// The signed series at 1.5 is strictly below the absolute one here
	// (the alternating terms are not negligible); a test that it differs
	// guards against the variants being wired together.
	if !(signed.Epsilons[0] < abs.Epsilons[0]*(1-1e-3)) {
		t.Errorf("signed series at α=1.5 = %.10g, want well below the absolute series %.10g", signed.Epsilons[0], abs.Epsilons[0])
	}
}

// TestSubsampledGaussianContinuity checks the fractional series against the
// exact integer formula: A_α is continuous in α, so the signed series just
// off an integer order must agree with the integer sum there.
func TestSubsampledGaussianContinuity(t *testing.T) {
	for _, tc := range []struct{ q, sigma, alpha float64 }{
		{0.01, 2.5, 3}, {0.04, 1.5, 4}, {0.1, 0.8, 2}, {0.003, 1.1, 20}, {0.3, 3, 7},
	} {
		orders := []float64{tc.alpha, tc.alpha + 1e-7}
		c, err := dp.SubsampledGaussianRDPSeries(orders, tc.q, tc.sigma, 1, dp.SignedSeries)
		if err != nil {
			t.Fatal(err)
		}
		if relErr(c.Epsilons[1], c.Epsilons[0]) > 1e-5 {
			t.Errorf("q=%g σ=%g: series at α=%g+1e-7 = %.12g, integer formula at α=%g = %.12g", tc.q, tc.sigma, tc.alpha, c.Epsilons[1], tc.alpha, c.Epsilons[0])
		}
	}
}

// TestSubsampledGaussianLimits checks q = 1 (plain Gaussian), q = 0, zero
// steps, the infinite order, and the integer sum against a direct float sum
// of A_α for small α.
func TestSubsampledGaussianLimits(t *testing.T) {
	orders := []float64{1.5, 2, 7.25, 10, math.Inf(1)}
	full, err := dp.SubsampledGaussianRDP(orders, 1, 1.7, 3)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := dp.GaussianRDP(orders, 1, 1.7)
	for i := range orders {
		if relErr(full.Epsilons[i], 3*g.Epsilons[i]) > 1e-14 {
			t.Errorf("q=1 at α=%g: %g, want 3×Gaussian %g", orders[i], full.Epsilons[i], 3*g.Epsilons[i])
		}
	}
	for _, c := range []struct {
		q     float64
		steps int
	}{{0, 10}, {0.5, 0}} {
		z, err := dp.SubsampledGaussianRDP(orders, c.q, 1, c.steps)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range z.Epsilons {
			if e != 0 {
				t.Errorf("q=%g steps=%d at α=%g: %g, want 0", c.q, c.steps, orders[i], e)
			}
		}
	}
	// Direct sum: A_α = Σ C(α,k)(1−q)^{α−k} q^k exp((k²−k)/(2σ²)).
	q, sigma := 0.05, 0.9
	for _, a := range []int{2, 3, 6, 11} {
		var s float64
		for k := 0; k <= a; k++ {
			s += binom(a, k) * math.Pow(1-q, float64(a-k)) * math.Pow(q, float64(k)) * math.Exp(float64(k*k-k)/(2*sigma*sigma))
		}
		want := math.Log(s) / float64(a-1)
		c, _ := dp.SubsampledGaussianRDP([]float64{float64(a)}, q, sigma, 1)
		if relErr(c.Epsilons[0], want) > 1e-12 {
			t.Errorf("SubsampledGaussianRDP(α=%d, q=%g, σ=%g) = %.15g, want %.15g (direct sum)", a, q, sigma, c.Epsilons[0], want)
		}
	}
	inf, _ := dp.SubsampledGaussianRDP([]float64{math.Inf(1)}, 0.01, 1, 1)
	if !math.IsInf(inf.Epsilons[0], 1) {
		t.Errorf("SubsampledGaussianRDP at α=∞ = %g, want +Inf", inf.Epsilons[0])
	}
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// TestGaussianConversion checks the single Gaussian mechanism (Δ = 1,
// δ = 1e-5) on TF-Privacy's grid under both conversions.
func TestGaussianConversion(t *testing.T) {
	for _, tc := range []struct{ sigma, improved, standard float64 }{
		{1, 4.728507, 5.2985}, {2, 2.165716, 2.5243}, {5, 0.794522, 0.9797},
	} {
		c, err := dp.GaussianRDP(dp.LibraryOrders(), 1, tc.sigma)
		if err != nil {
			t.Fatal(err)
		}
		imp, _, _ := c.ToDPImproved(1e-5)
		std, _, _ := c.ToDP(1e-5)
		if math.Abs(imp-tc.improved) > 5e-7 {
			t.Errorf("Gaussian σ=%g: ToDPImproved(1e-5) = %.7f, want %.6f", tc.sigma, imp, tc.improved)
		}
		if math.Abs(std-tc.standard) > 5e-5 {
			t.Errorf("Gaussian σ=%g: ToDP(1e-5) = %.5f, want %.4f", tc.sigma, std, tc.standard)
		}
	}
}

// TestConstantCurveConversion is dp_accounting's test of the improved
// conversion on the constant curve ε(α) = 1.1, α = 2..32.
func TestConstantCurveConversion(t *testing.T) {
	var c dp.RDPCurve
	for a := 2; a <= 32; a++ {
		c.Orders = append(c.Orders, float64(a))
		c.Epsilons = append(c.Epsilons, 1.1)
	}
	eps, order, err := c.ToDPImproved(1e-5)
	if err != nil || relErr(eps, 1.32783806176) > 1e-10 || order != 32 {
		t.Errorf("ToDPImproved(1e-5) = %.12g at α=%g, %v, want 1.32783806176 at α=32", eps, order, err)
	}
	std, _, _ := c.ToDP(1e-5)
	// Standard: 1.1 + log(1e5)/31, computed here.
	if want := 1.1 + math.Log(1e5)/31; relErr(std, want) > 1e-14 {
		t.Errorf("ToDP(1e-5) = %.15g, want %.15g", std, want)
	}
}

// TestImprovedNeverWorse compares the two conversions on assorted curves.
func TestImprovedNeverWorse(t *testing.T) {
	orders := dp.DefaultOrders()
	var curves []dp.RDPCurve
	for _, s := range []float64{0.3, 1, 4, 30} {
		c, _ := dp.GaussianRDP(orders, 1, s)
		curves = append(curves, c)
	}
	for _, e := range []float64{0.01, 1, 10} {
		c, _ := dp.PureDPRDP(orders, e)
		curves = append(curves, c)
	}
	for _, c := range curves {
		for _, d := range []float64{1e-12, 1e-5, 0.1, 0.9} {
			imp, _, _ := c.ToDPImproved(d)
			std, _, _ := c.ToDP(d)
			if imp > std {
				t.Errorf("curve %v: ToDPImproved(%g) = %g > ToDP = %g", c.Epsilons[:3], d, imp, std)
			}
		}
	}
}

// TestLaplaceRDP checks Mironov's formula at ε₀ = 1 and its limits.
func TestLaplaceRDP(t *testing.T) {
	c, err := dp.LaplaceRDP([]float64{2, 10, math.Inf(1)}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0.61912363, 0.92868290, 1} {
		if relErr(c.Epsilons[i], want) > 1e-7 {
			t.Errorf("LaplaceRDP(α=%g, ε₀=1) = %.9f, want %.8f", c.Orders[i], c.Epsilons[i], want)
		}
	}
	// Scale invariance: only Δ/b matters.
	d, _ := dp.LaplaceRDP([]float64{2, 10, math.Inf(1)}, 3, 3)
	if !slices.Equal(c.Epsilons, d.Epsilons) {
		t.Errorf("LaplaceRDP(Δ=3, b=3) = %v, want %v", d.Epsilons, c.Epsilons)
	}
}

// TestPureDPRDP checks the pure-DP conversion against the Rényi divergence
// of randomized response computed directly, the published bounds, and the
// Laplace mechanism (which is ε-DP, so its curve must lie below).
func TestPureDPRDP(t *testing.T) {
	orders := []float64{1.1, 1.5, 2, 3.7, 10, 64, 256, math.Inf(1)}
	for _, eps := range []float64{0.01, 0.5, 1, 3} {
		c, err := dp.PureDPRDP(orders, eps)
		if err != nil {
			t.Fatal(err)
		}
		lap, _ := dp.LaplaceRDP(orders, 1, 1/eps)
		p := math.Exp(eps) / (1 + math.Exp(eps))
		for i, a := range orders {
			got := c.Epsilons[i]
			if math.IsInf(a, 1) {
				if got != eps {
					t.Errorf("PureDPRDP(ε=%g) at α=∞ = %g, want %g", eps, got, eps)
				}
				continue
			}
			rr := math.Log(math.Pow(p, a)*math.Pow(1-p, 1-a)+math.Pow(1-p, a)*math.Pow(p, 1-a)) / (a - 1)
			if relErr(got, rr) > 1e-9 {
				t.Errorf("PureDPRDP(ε=%g) at α=%g = %.12g, want %.12g (randomized response)", eps, a, got, rr)
			}
			if got > eps || got > a*eps*eps/2*(1+1e-12) {
				t.Errorf("PureDPRDP(ε=%g) at α=%g = %g above min(ε, αε²/2) = %g", eps, a, got, math.Min(eps, a*eps*eps/2))
			}
			if lap.Epsilons[i] > got*(1+1e-12) {
				t.Errorf("Laplace ε₀=%g at α=%g = %g above the pure-DP worst case %g", eps, a, lap.Epsilons[i], got)
			}
		}
	}
}

// TestComposeScale checks that composing k Gaussians equals one Gaussian
// with σ/√k, that Scale agrees with Compose, and the error paths.
func TestComposeScale(t *testing.T) {
	orders := dp.DefaultOrders()
	g, _ := dp.GaussianRDP(orders, 1, 2)
	c, err := g.Compose(g, g, g)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := g.Scale(4)
	one, _ := dp.GaussianRDP(orders, 1, 1)
	for i := range orders {
		if relErr(c.Epsilons[i], one.Epsilons[i]) > 1e-14 || relErr(s.Epsilons[i], one.Epsilons[i]) > 1e-14 {
			t.Errorf("α=%g: 4×Gaussian(σ=2) = %g (Compose), %g (Scale), want Gaussian(σ=1) = %g", orders[i], c.Epsilons[i], s.Epsilons[i], one.Epsilons[i])
		}
	}
	if g.Epsilons[0] != 1.25/8 {
		t.Errorf("Compose modified its receiver: ε(1.25) = %g, want %g", g.Epsilons[0], 1.25/8)
	}
	other, _ := dp.GaussianRDP(dp.LibraryOrders(), 1, 2)
	if _, err := g.Compose(other); err == nil || !strings.Contains(err.Error(), "orders differ") {
		t.Errorf("Compose with different orders: err = %v, want an error about orders", err)
	}
	for _, k := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := g.Scale(k); err == nil {
			t.Errorf("Scale(%g): no error", k)
		}
	}
	pure, _ := dp.PureDPRDP([]float64{2, math.Inf(1)}, 1)
	inf := dp.RDPCurve{Orders: []float64{2, math.Inf(1)}, Epsilons: []float64{1, math.Inf(1)}}
	z, _ := inf.Scale(0)
	if z.Epsilons[1] != 0 {
		t.Errorf("Scale(0) of an infinite ε = %g, want 0", z.Epsilons[1])
	}
	eps, order, _ := pure.ToDP(0)
	if eps != 1 || !math.IsInf(order, 1) {
		t.Errorf("pure curve ToDP(0) = %g at α=%g, want 1 at α=∞", eps, order)
	}
}

// TestAccountantValidation checks that bad inputs give errors, not numbers.
func TestAccountantValidation(t *testing.T) {
	good := []float64{2, 3}
	cases := []struct {
		name string
		err  error
	}{
		{"gaussian sigma 0", second(dp.GaussianRDP(good, 1, 0))},
		{"gaussian sensitivity NaN", second(dp.GaussianRDP(good, math.NaN(), 1))},
		{"order 1", second(dp.GaussianRDP([]float64{1, 2}, 1, 1))},
		{"order NaN", second(dp.GaussianRDP([]float64{math.NaN()}, 1, 1))},
		{"repeated order", second(dp.GaussianRDP([]float64{2, 2}, 1, 1))},
		{"no orders", second(dp.GaussianRDP(nil, 1, 1))},
		{"laplace scale −1", second(dp.LaplaceRDP(good, 1, -1))},
		{"pure eps Inf", second(dp.PureDPRDP(good, math.Inf(1)))},
		{"q > 1", second(dp.SubsampledGaussianRDP(good, 1.5, 1, 1))},
		{"noise 0", second(dp.SubsampledGaussianRDP(good, 0.1, 0, 1))},
		{"steps < 0", second(dp.SubsampledGaussianRDP(good, 0.1, 1, -1))},
		{"variant", second(dp.SubsampledGaussianRDPSeries(good, 0.1, 1, 1, dp.SeriesVariant(7)))},
		{"curve lengths", dp.RDPCurve{Orders: good, Epsilons: []float64{1}}.Validate()},
		{"negative eps", dp.RDPCurve{Orders: good, Epsilons: []float64{1, -1}}.Validate()},
		{"NaN eps", dp.RDPCurve{Orders: good, Epsilons: []float64{1, math.NaN()}}.Validate()},
	}
	for _, c := range cases {
		if c.err == nil || !strings.HasPrefix(c.err.Error(), "dp: ") {
			t.Errorf("%s: err = %v, want an error starting %q", c.name, c.err, "dp: ")
		}
	}
	g, _ := dp.GaussianRDP(good, 1, 1)
	for _, d := range []float64{-1, 1, math.NaN()} {
		if _, _, err := g.ToDP(d); err == nil {
			t.Errorf("ToDP(%g): no error", d)
		}
		if _, _, err := g.ToDPImproved(d); err == nil {
			t.Errorf("ToDPImproved(%g): no error", d)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// BenchmarkSubsampledGaussian10000Steps measures the accountant for a
// 10,000-step DP-SGD run on the default grid (q = 256/60000, σ = 1.1),
// including the improved conversion.
func BenchmarkSubsampledGaussian10000Steps(b *testing.B) {
	orders := dp.DefaultOrders()
	for b.Loop() {
		c, err := dp.SubsampledGaussianRDP(orders, 256.0/60000, 1.1, 10000)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.ToDPImproved(1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSubsampledGaussianLibraryOrders is the same on TF-Privacy's grid
// (99 fractional orders, so it is dominated by the series).
func BenchmarkSubsampledGaussianLibraryOrders(b *testing.B) {
	orders := dp.LibraryOrders()
	for b.Loop() {
		c, err := dp.SubsampledGaussianRDP(orders, 256.0/60000, 1.1, 10000)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.ToDPImproved(1e-5); err != nil {
			b.Fatal(err)
		}
	}
}
